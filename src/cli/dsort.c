/* dsort - distributed sort of fixed-size records: mpirun -n N dsort [OPTIONS] INPUT... -o FILE
 *
 * This file holds the checks on what dsort writes, the choice of pipeline and the report; the
 * command line (options, --help, --version) is dsort_opts.c, and the pipelines are in job_mem.c
 * (the data fits the ranks' memory) and job_ext.c (it does not). See job.h and docs/design.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "agree.h"
#include "check.h"
#include "cleanup.h"
#include "cli.h"
#include "dsort_opts.h"
#include "gnuopts.h"
#include "clock.h"
#include "io.h"
#include "jsonstr.h"
#include "job.h"
#include "job_typed.h"
#include "lines_check.h"
#include "pipeio.h"
#include "progress.h"
#include "statsjson.h"
#include "mem.h"
#include "owner.h"
#include "tempdir.h"
#include "job_space.h"

static void json_phases(FILE *f, const char *name, const double *v)
{
    fprintf(f, "\"%s\": {", name);
    for (int p = 0; p < PH_COUNT; p++)
        fprintf(f, "%s\"%s\": %.6f", p ? ", " : "", dsort_phase_names[p], v[p]);
    fprintf(f, "}");
}

static void json_bytes(FILE *f, const char *name, const uint64_t *v)
{
    fprintf(f, "\"%s\": {", name);
    for (int p = 0; p < PH_COUNT; p++)
        fprintf(f, "%s\"%s\": %" PRIu64, p ? ", " : "", dsort_phase_names[p], v[p]);
    fprintf(f, "}");
}

/* "devices": the watched disks' block-layer counters per phase (the node's, seen from this
 * rank's phases: ranks of one node show the same disks). */
static void json_disks(FILE *f, const struct dsort_job_stats *s)
{
    fprintf(f, ", \"devices\": [");
    for (int i = 0; i < DSORT_JOB_DISKS && s->disk[i][0]; i++) {
        uint64_t rd[PH_COUNT], wr[PH_COUNT];
        double busy[PH_COUNT];
        for (int p = 0; p < PH_COUNT; p++) {
            rd[p] = s->disk_phase[p][i].read;
            wr[p] = s->disk_phase[p][i].written;
            busy[p] = (double)s->disk_phase[p][i].busy_ms / 1000.0;
        }
        fprintf(f, "%s{\"disk\": ", i ? ", " : "");
        dsort_jsonstr_write(f, s->disk[i]);
        fprintf(f, ", ");
        json_bytes(f, "read_bytes", rd);
        fprintf(f, ", ");
        json_bytes(f, "write_bytes", wr);
        fprintf(f, ", ");
        json_phases(f, "busy_seconds", busy);
        dsort_statsjson_disk_totals(f, s, i);
        fprintf(f, "}");
    }
    fprintf(f, "]");
}

/* -v, rank 0: for the first rank of every host, each watched disk that moved data: bytes read
 * and written, and per phase the rates over that rank's phase time and how busy it was. */
static void print_disks(const struct dsort_comm *c, const struct dsort_job_stats *all)
{
    for (int r = 0; r < c->size; r++) {
        int first = 1;
        for (int q = 0; q < r && first; q++)
            first = strcmp(all[q].host, all[r].host) != 0;
        const struct dsort_job_stats *s = &all[r];
        for (int i = 0; first && i < DSORT_JOB_DISKS && s->disk[i][0]; i++) {
            uint64_t rd = 0, wr = 0;
            for (int p = 0; p < PH_COUNT; p++) {
                rd += s->disk_phase[p][i].read;
                wr += s->disk_phase[p][i].written;
            }
            if (!rd && !wr)
                continue;
            char b1[32], b2[32];
            fprintf(stderr, "dsort: disk %s:%s: read %s, wrote %s", s->host, s->disk[i],
                    dsort_mem_format(rd, b1, sizeof b1), dsort_mem_format(wr, b2, sizeof b2));
            for (int p = 0; p < PH_COUNT; p++) {
                const struct dsort_job_disk_phase *d = &s->disk_phase[p][i];
                double busy = s->t[p] > 0 ? (double)d->busy_ms / 1000.0 / s->t[p] * 100.0 : 0;
                /* the phases that moved a MiB or kept the disk busy; a direction from 64 KiB */
                if (s->t[p] <= 0 || (d->read + d->written < ((uint64_t)1 << 20) && busy < 5))
                    continue;
                fprintf(stderr, " | %s", dsort_phase_names[p]);
                if (d->read >= 65536)
                    fprintf(stderr, " r %.1f MB/s", (double)d->read / s->t[p] / 1e6);
                if (d->written >= 65536)
                    fprintf(stderr, " w %.1f MB/s", (double)d->written / s->t[p] / 1e6);
                fprintf(stderr, " busy %.0f%%", busy > 100 ? 100 : busy);
            }
            fprintf(stderr, "\n");
        }
    }
}

/* Where --stats goes. A regular file (or a new name) is written to a hidden temp beside it
 * and renamed over it once complete, as -o is: a full disk leaves the old file whole, never a
 * file cut short. Anything else (/dev/null) is written through. */
struct stats_file {
    char target[PATH_MAX]; /* the name replaced: a symbolic link's file */
    char temp[PATH_MAX];   /* "" when written through */
};

/* Where the stats file's temp goes: the target (a symbolic link's file) in sf, its directory
 * and base name (PATH_MAX each). Returns 1 if the target exists (its status in *sb), 0 if not. */
static int stats_where(const char *path, struct stats_file *sf, struct stat *sb, char *dir,
                       char *base)
{
    int exists = !stat(path, sb);
    sf->temp[0] = '\0';
    if (exists && realpath(path, sf->target) == NULL)
        exists = 0;
    if (!exists)
        snprintf(sf->target, sizeof sf->target, "%s", path);
    char d[PATH_MAX], b[PATH_MAX];
    snprintf(d, sizeof d, "%s", sf->target);
    snprintf(b, sizeof b, "%s", sf->target);
    snprintf(dir, PATH_MAX, "%s", dirname(d));
    snprintf(base, PATH_MAX, "%s", basename(b));
    return exists;
}

/* Rank 0, before any work: can the stats file be written? Its temp is made beside it and
 * removed at once (or, for /dev/null and the like, it is opened for writing), so that a
 * --stats the job could not write refuses the job in its first second rather than after the
 * whole sort (when the stats would be lost). */
static enum dsort_status stats_probe(const char *path, struct dsort_error *err)
{
    struct stats_file sf;
    struct stat sb;
    char dir[PATH_MAX], base[PATH_MAX];
    int exists = stats_where(path, &sf, &sb, dir, base);
    if (exists && !S_ISREG(sb.st_mode)) {
        int fd = open(sf.target, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
            return DSORT_ERR(err, DSORT_EIO, errno, "cannot write stats '%s'", path);
        close(fd);
        return DSORT_OK;
    }
    int fd = -1;
    struct dsort_error why = {0};
    if (dsort_owner_temp_file(sf.temp, sizeof sf.temp, dir, base, &fd, &why))
        return DSORT_ERR(err, DSORT_EIO, 0, "cannot write stats '%s': %s", path, why.msg);
    close(fd);
    unlink(sf.temp);
    return DSORT_OK;
}

/* Rank 0: open the stats file's temp; NULL (the error printed) if it cannot be made. */
static FILE *stats_open(const struct dsort_comm *c, const char *path, struct stats_file *sf)
{
    struct stat sb;
    char dir[PATH_MAX], base[PATH_MAX];
    int exists = stats_where(path, sf, &sb, dir, base);
    if (exists && !S_ISREG(sb.st_mode)) {
        FILE *f = fopen(sf->target, "w");
        if (!f)
            dsort_comm_print(c, "cannot write stats '%s': %s", path, strerror(errno));
        return f;
    }
    struct dsort_error err = {0};
    int fd = -1;
    if (dsort_owner_temp_file(sf->temp, sizeof sf->temp, dir, base, &fd, &err) ||
        dsort_cleanup_add(sf->temp, DSORT_CLEANUP_FILE, &err)) {
        if (fd >= 0) {
            close(fd);
            unlink(sf->temp);
        }
        dsort_comm_print(c, "cannot write stats '%s': %s", path, err.msg);
        return NULL;
    }
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, exists ? sb.st_mode & 07777 : 0666 & ~mask);
    FILE *f = fdopen(fd, "w");
    if (!f) {
        dsort_comm_print(c, "cannot write stats '%s': %s", path, strerror(errno));
        close(fd);
        unlink(sf->temp);
        dsort_cleanup_forget(sf->temp);
    }
    return f;
}

/* Rank 0: finish the stats file: flush, fsync and rename the temp over it. 0, or 2 with the
 * error printed (and the temp removed; an older file is kept as it was). */
static int stats_close(const struct dsort_comm *c, const char *path, struct stats_file *sf, FILE *f)
{
    int e = 0;
    if (fflush(f) || (sf->temp[0] && fsync(fileno(f))))
        e = errno;
    if (fclose(f) && !e)
        e = errno;
    if (!e && sf->temp[0] && rename(sf->temp, sf->target))
        e = errno;
    if (sf->temp[0]) {
        if (e)
            unlink(sf->temp);
        dsort_cleanup_forget(sf->temp);
    }
    struct dsort_error err = {0};
    if (!e && sf->temp[0] && dsort_io_fsync_parent(sf->target, &err))
        e = err.errnum ? err.errnum : EIO;
    if (!e)
        return 0;
    dsort_comm_print(c, "cannot write stats '%s': %s (the output is committed)", path, strerror(e));
    return 2;
}

/* Rank 0: write the stats file up to (not including) the plan and the closing brace. */
static FILE *write_stats(const struct dsort_comm *c, const struct dsort_job_options *o,
                         const struct dsort_job_stats *all, uint64_t recs, uint64_t bytes,
                         double total_time, double balance, struct stats_file *sf)
{
    FILE *f = stats_open(c, o->stats, sf);
    if (!f)
        return NULL;
    fprintf(f, "{\n  \"version\": \"%s\",\n  \"ranks\": %d,\n  \"format\": ", DSORT_VERSION,
            c->size);
    dsort_jsonstr_write(f, o->fmt.name);
    fprintf(f, ",\n");
    fprintf(f,
            "  \"records\": %" PRIu64 ",\n  \"bytes\": %" PRIu64
            ",\n  \"seconds\": %.6f,\n  \"balance\": %.6f,\n  \"out_of_core\": %s,\n"
            "  \"mapped\": %s,\n  \"started_unix\": %.6f,\n  \"per_rank\": [\n",
            recs, bytes, total_time, balance, all[0].external ? "true" : "false",
            all[0].mapped ? "true" : "false", dsort_statsjson_start(all, c->size));
    double start = dsort_statsjson_start(all, c->size);
    for (int r = 0; r < c->size; r++) {
        const struct dsort_job_stats *s = &all[r];
        fprintf(f, "    {\"rank\": %d, \"host\": ", r);
        dsort_jsonstr_write(f, s->host);
        fprintf(f, ", ");
        json_phases(f, "phases", s->t);
        fprintf(f, ", ");
        json_bytes(f, "io_read_bytes", s->io_read);
        fprintf(f, ", ");
        json_bytes(f, "io_write_bytes", s->io_write);
        fprintf(f, ", ");
        json_bytes(f, "page_faults", s->faults);
        json_disks(f, s);
        fprintf(f,
                ", \"records_in\": %" PRIu64 ", \"records_out\": %" PRIu64
                ", \"bytes_read\": %" PRIu64 ", \"bytes_written\": %" PRIu64
                ", \"bytes_sent\": %" PRIu64 ", \"bytes_received\": %" PRIu64
                ", \"memory_budget\": %" PRIu64 ", \"memory_budget_reason\": ",
                s->records_in, s->records_out, s->bytes_read, s->bytes_written, s->bytes_sent,
                s->bytes_received, s->budget);
        dsort_jsonstr_write(f, s->budget_why);
        fprintf(
            f,
            ", \"memory_needed\": %" PRIu64 ", \"runs\": %" PRIu64 ", \"merge_passes\": %" PRIu64
            ", \"spill_bytes\": %" PRIu64 ", \"extra_merge_bytes\": %" PRIu64 ", \"fan_in\": %d"
            ", \"extra_pass_reason\": ",
            s->needed, s->runs, s->merge_passes, s->spill_bytes, s->extra_merge_bytes, s->fan_in);
        dsort_jsonstr_write(f, s->merge_why);
        fprintf(f,
                ", \"splitter_rounds\": %d, \"exchange_rounds\": %d, \"exchanges\": %d"
                ", \"exchanges_by_node\": %d, \"rounds\": %" PRIu64 ", \"rss_peak_kb\": %" PRIu64
                ", \"rss_file_kb\": %" PRIu64,
                s->splitter_rounds, s->exchange_rounds, s->exchange_moves, s->exchange_node,
                s->rounds, s->rss_peak_kb, s->rss_file_kb);
        dsort_statsjson_times(f, s, start);
        fprintf(f, "}%s\n", r + 1 < c->size ? "," : "");
    }
    fprintf(f, "  ],\n  \"plan\": ");
    return f;
}

/* Rank 0 prints and writes; every rank takes part (gathers). Rank 0's exit status. */
static int report_rank0(const struct dsort_comm *c, const struct dsort_job_options *o,
                        const struct dsort_job_stats *mine, double total_time)
{
    if (o->verbose && dsort_job_topo_token_note(o->topo)) /* every rank that had one */
        dsort_comm_print(c, "topology: %s", dsort_job_topo_token_note(o->topo));
    void *got = NULL;
    dsort_agree_gather(c, mine, sizeof *mine, &got, NULL);
    struct dsort_job_stats *all = got;
    if (c->rank != 0 || !all) {
        if (o->stats) /* the plan with its figures: collective */
            dsort_job_topo_write_stats(c, o->topo, NULL);
        if (c->rank == 0 && o->stats)
            dsort_comm_print(c, "cannot write stats '%s': out of memory", o->stats);
        return c->rank == 0 && o->stats ? 2 : 0;
    }
    uint64_t recs = 0, maxout = 0, outs = 0, rd = 0, wr = 0;
    double tmax[PH_COUNT] = {0};
    for (int r = 0; r < c->size; r++) {
        recs += all[r].records_in;
        outs += all[r].records_out;
        maxout = all[r].records_out > maxout ? all[r].records_out : maxout;
        for (int p = 0; p < PH_COUNT; p++) {
            tmax[p] = all[r].t[p] > tmax[p] ? all[r].t[p] : tmax[p];
            rd += all[r].io_read[p];
            wr += all[r].io_write[p];
        }
    }
    uint64_t bytes = recs * o->fmt.rec_size;
    if (o->lines) { /* records are lines: count the bytes read */
        bytes = 0;
        for (int r = 0; r < c->size; r++)
            bytes += all[r].bytes_read;
    }
    double avg = c->size ? (double)outs / c->size : 0, balance = avg > 0 ? maxout / avg : 1.0;
    if (o->verbose) {
        char b1[32], b2[32];
        fprintf(stderr, "dsort: %d ranks, format %s, %s\n", c->size, o->fmt.name,
                mine->external ? "out of core"
                : mine->mapped ? "in memory, input mapped (records stay in the page cache)"
                               : "in memory");
        fprintf(stderr, "dsort: records %" PRIu64 ", bytes %" PRIu64 " (%s)\n", recs, bytes,
                dsort_mem_format(bytes, b1, sizeof b1));
        fprintf(stderr, "dsort: memory budget per rank %s (%s); in-memory sort needs %s\n",
                dsort_mem_format(mine->budget, b1, sizeof b1), mine->budget_why,
                dsort_mem_format(mine->needed, b2, sizeof b2));
        if (mine->external)
            fprintf(stderr,
                    "dsort: rank 0 spilled %" PRIu64 " runs (%s), fan-in %d, %" PRIu64
                    " extra merge passes\n",
                    mine->runs, dsort_mem_format(mine->spill_bytes, b1, sizeof b1), mine->fan_in,
                    mine->merge_passes);
        if (mine->merge_why[0])
            fprintf(stderr, "dsort: rank 0 took an extra merge pass: %s\n", mine->merge_why);
        fprintf(stderr, "dsort: phase seconds (slowest rank):");
        for (int p = 0; p < PH_COUNT; p++)
            if (tmax[p] > 0)
                fprintf(stderr, " %s %.3f", dsort_phase_names[p], tmax[p]);
        fprintf(stderr, "\ndsort: total %.3f s, %.1f MB/s; I/O %.2f x data read, %.2f x written\n",
                total_time, total_time > 0 ? (double)bytes / total_time / 1e6 : 0.0,
                bytes ? (double)rd / (double)bytes : 0.0, bytes ? (double)wr / (double)bytes : 0.0);
        fprintf(stderr, "dsort: balance max/avg %.4f (max %" PRIu64 " records, avg %.1f)\n",
                balance, maxout, avg);
        print_disks(c, all);
    }
    if (o->verbose && dsort_job_topo_note(o->topo))
        fprintf(stderr, "dsort: topology: %s\n", dsort_job_topo_note(o->topo));
    int code = 0;
    if (o->stats) {
        struct stats_file sf;
        FILE *f = write_stats(c, o, all, recs, bytes, total_time, balance, &sf);
        dsort_job_topo_write_stats(c, o->topo, f);
        code = 2;
        if (f) {
            fprintf(f, "\n}\n");
            code = stats_close(c, o->stats, &sf, f);
        }
    }
    free(all);
    return code;
}

/* The report (-v, --stats). Returns the exit status: 2 on every rank if the stats file could
 * not be written. */
static int report(const struct dsort_comm *c, const struct dsort_job_options *o,
                  const struct dsort_job_stats *mine, double total_time)
{
    return dsort_agree_code(c, report_rank0(c, o, mine, total_time));
}

/* The INPUTs' names for messages, by argument index, when some are read through copies
 * (pipeio.h): -c names standard input "-", as GNU does, and a /proc file by its name. */
static char *const *shown_names;

static int run_check(const struct dsort_comm *c, const struct dsort_job_options *o,
                     const struct dsort_gnuopts *x, const struct dsort_inputs *in)
{
    if (o->lines) /* GNU's message: FILE:LINE: disorder: TEXT */
        return dsort_lines_check(c, in, o->keys, o->eol, x->check_mode == 'C', shown_names);
    struct dsort_error err = {0};
    struct dsort_vsum total;
    /* Like sort -c: equal keys must also be in last-resort (whole record) order. */
    enum dsort_status st =
        dsort_vsum_init_ex(&total, &o->fmt, dsort_order_last_resort(&o->ord), &err);
    if ((st = dsort_comm_agree(c, st, &err)))
        return 2;
    st = dsort_check_inputs(c, in, &o->fmt, &o->ord, (size_t)16 << 20, &total, &err);
    int code = st ? 2 : total.unordered ? 1 : 0;
    if (!st && total.unordered && c->rank == 0 && x->check_mode != 'C') {
        /* Name the file and the record within it, as sort -c names file and line. */
        uint64_t g = total.first_unordered;
        for (size_t i = 0; i < in->count; i++)
            if (g < in->files[i].first + in->files[i].records) {
                fprintf(stderr, "%s: %s:record %" PRIu64 ": disorder\n", c->prog,
                        shown_names ? shown_names[in->files[i].arg] : in->files[i].path,
                        g - in->files[i].first);
                break;
            }
    }
    dsort_vsum_destroy(&total);
    return code;
}

/* -c with standard input among the INPUTs: only rank 0 has its copy, so rank 0 checks every
 * input alone (over MPI_COMM_SELF) and tells the others the exit code. */
static int run_check_alone(const struct dsort_comm *c, const struct dsort_job_options *o,
                           const struct dsort_gnuopts *x, const struct dsort_inputs *in)
{
    int code = 0;
    if (c->rank == 0) {
        struct dsort_comm self = *c;
        self.comm = self.node = MPI_COMM_SELF;
        self.size = self.node_size = self.node_count = 1;
        self.node_rank = self.node_index = 0;
        code = run_check(&self, o, x, in);
    }
    return dsort_agree_code(c, code);
}

/* Without --format (gensort's 100-byte records), refuse input that is plainly text lines
 * (dsort_inputs_sniff_text: its first 64 KiB hold no control byte but blanks and line ends,
 * and a newline that ends no record), which would be sorted into spliced lines. Each file is
 * looked at by one rank: of all (shared inputs), of its node (--local-inputs), rank 0
 * (copies). */
static enum dsort_status refuse_text(const struct dsort_comm *c, const struct dsort_job_options *o,
                                     const struct dsort_inputs *in, struct dsort_error *err)
{
    for (size_t i = 0; i < in->count; i++) {
        int mine = o->stdin_rank0    ? 1
                   : o->local_inputs ? (int)(i % (size_t)c->node_size) == c->node_rank
                                     : (int)(i % (size_t)c->size) == c->rank;
        int text = 0;
        uint64_t at = 0;
        enum dsort_status st = mine ? dsort_inputs_sniff_text(in, i, &text, &at, err) : DSORT_OK;
        if (st)
            return st;
        if (text)
            return DSORT_ERR(err, DSORT_EFORMAT, 0,
                             "'%s' looks like text lines, not %zu-byte gensort records (the "
                             "newline at byte %" PRIu64 " ends no record): give --format lines "
                             "to sort its lines, or --format gensort to sort it as records all "
                             "the same",
                             shown_names ? shown_names[in->files[i].arg] : in->files[i].path,
                             in->rec_size, at);
    }
    return DSORT_OK;
}

/* Sweep dead jobs' temp directories (rank 0 of each node), and say so under -v. */
static void sweep(const struct dsort_comm *c, const struct dsort_job_options *o)
{
    if (c->node_rank != 0)
        return;
    struct dsort_sweep_report rep;
    dsort_tempdirs_sweep(o->temp_dirs, o->ntemp, o->keep_checkpoint, &rep);
    /* and standard input's copies (pipeio.c) that dead jobs left there */
    unsigned copies = 0;
    for (size_t i = 0; i < o->ntemp; i++) {
        struct dsort_sweep_report more;
        dsort_outtemps_sweep(o->temp_dirs[i], &more);
        copies += more.removed;
        rep.unknown += more.unknown;
        rep.unsafe += more.unsafe;
    }
    if (copies)
        dsort_comm_print(c, "removed %u cop%s of standard input left by dead dsort jobs", copies,
                         copies == 1 ? "y" : "ies");
    if (rep.removed)
        dsort_comm_print(c, "removed %u temp director%s left by dead dsort jobs", rep.removed,
                         rep.removed == 1 ? "y" : "ies");
    if (o->verbose && rep.foreign)
        dsort_comm_print(c, "%u dsort temp directories of other hosts left alone", rep.foreign);
    if (o->verbose && rep.unknown + rep.unsafe)
        dsort_comm_print(c,
                         "%u dsort-like temp entries left alone: %u whose owner is not provably "
                         "dead (another boot, container or an old owner file), %u not ours to "
                         "judge (a symbolic link, another user's, or not mode 0700)",
                         rep.unknown + rep.unsafe, rep.unknown, rep.unsafe);
}

/* Do a and b name the same file (the same inode if both exist, else the same canonical
 * name)? */
static int same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    if (!stat(a, &sa) && !stat(b, &sb))
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    char ca[4096], cb[4096];
    dsort_cli_canonical(a, ca, sizeof ca);
    dsort_cli_canonical(b, cb, sizeof cb);
    return !strcmp(ca, cb);
}

/* Every file dsort writes (--stats, the temp dirs' contents) must be none of the inputs, none
 * of each other, and not inside -O DIR: checked before anything is read, so a careless command
 * line cannot overwrite an input with JSON. The one exception is -o FILE naming an input: GNU
 * sort sorts in place, and so does dsort, safely, because the output replaces FILE by a rename
 * only once every rank has read all of its input and the job has succeeded (dsort_job_finish
 * agrees on that before the commit); a failed run leaves FILE as it was. Not where the identity
 * of the inputs must outlive the job (a checkpoint names them), nor with node-local inputs. */
static enum dsort_status check_written(const struct dsort_job_options *o,
                                       const struct dsort_inputs *in, struct dsort_error *err)
{
    if (o->output && dsort_inputs_contains(in, o->output)) {
        if (o->checkpoint || o->stop_after || o->resume)
            return DSORT_ERR(err, DSORT_EINVAL, 0,
                             "output '%s' is also an input: sorting in place does not go with "
                             "--checkpoint, --stop-after or --resume (the checkpoint names the "
                             "inputs); write to another file",
                             o->output);
        if (o->local_inputs)
            return DSORT_ERR(err, DSORT_EINVAL, 0,
                             "output '%s' is also an input: sorting in place does not go with "
                             "--local-inputs; write to another file",
                             o->output);
    }
    if (o->stats) {
        if (dsort_inputs_contains(in, o->stats))
            return DSORT_ERR(err, DSORT_EINVAL, 0, "--stats file '%s' is also an input", o->stats);
        struct stat sb;
        if (!stat(o->stats, &sb) && !S_ISREG(sb.st_mode) &&
            !(S_ISCHR(sb.st_mode) && major(sb.st_rdev) == 1 && minor(sb.st_rdev) == 3))
            return DSORT_ERR(err, DSORT_EINVAL, 0,
                             "--stats file '%s' is not a regular file (nor /dev/null)", o->stats);
        if (o->output && same_file(o->stats, o->output))
            return DSORT_ERR(err, DSORT_EINVAL, 0, "--stats file '%s' is also the output",
                             o->stats);
        if (o->output_dir && dsort_cli_inside(o->stats, o->output_dir))
            return DSORT_ERR(err, DSORT_EINVAL, 0,
                             "--stats file '%s' is inside the output directory '%s'", o->stats,
                             o->output_dir);
    }
    for (size_t i = 0; o->output_dir && i < o->ntemp; i++)
        if (dsort_cli_inside(o->temp_dirs[i], o->output_dir))
            return DSORT_ERR(err, DSORT_EINVAL, 0,
                             "temp directory '%s' is inside the output directory '%s'",
                             o->temp_dirs[i], o->output_dir);
    for (size_t i = 0; o->output_dir && i < in->count; i++)
        if (dsort_cli_inside(in->files[i].path, o->output_dir))
            return DSORT_ERR(err, DSORT_EINVAL, 0, "input '%s' is inside the output directory '%s'",
                             in->files[i].path, o->output_dir);
    return DSORT_OK;
}

/* b: the budget that dsort_opts_parse resolved. */
static int run_sort(const struct dsort_comm *c, struct dsort_job_options *o,
                    const struct dsort_budget *b, const struct dsort_inputs *in)
{
    struct dsort_error err = {0};
    struct dsort_job_stats stats;
    memset(&stats, 0, sizeof stats);
    snprintf(stats.host, sizeof stats.host, "%s", c->host);
    double t0 = dsort_clock_now();
    dsort_job_stats_start(&stats);
    enum dsort_status st;
    if (b->note[0] && c->node_rank == 0) /* once a node: the nodes may differ */
        fprintf(stderr, "dsort: rank %d/%d (%s): %s\n", c->rank, c->size, c->host, b->note);
    stats.budget = b->bytes;
    snprintf(stats.budget_why, sizeof stats.budget_why, "%s", b->why);
    struct dsort_share sh;
    if (dsort_job_share(c, o, in, &sh, &err))
        return 2;
    if ((st = dsort_comm_agree(c, dsort_job_topo_create(c, o, in, &o->topo, &err), &err)))
        return 2;
    if (o->plan) {
        struct dsort_job_space sp;
        int code = 2;
        if (!dsort_job_space_create(c, o, b, in, &sh, &sp, &err)) {
            code = dsort_job_topo_print_plan(c, o->topo, &sp, o->plan_json);
            dsort_job_space_destroy(&sp);
        }
        dsort_job_topo_destroy(o->topo);
        return code;
    }
    if (o->bind)
        dsort_job_topo_bind(o->topo, c, o->verbose);
    struct dsort_exchange xch;
    if ((st = dsort_comm_agree(
             c, dsort_exchange_open(&xch, c->comm, o->exchange_kind, (size_t)o->chunk, &err),
             &err))) {
        dsort_job_topo_destroy(o->topo);
        o->topo = NULL;
        return 2;
    }
    o->exchange = &xch;
    int code;
    sweep(c, o);
    /* before any input is read: the output and the spill fit their file systems */
    if (dsort_job_space_preflight(c, o, b, in, &sh)) {
        dsort_exchange_close(&xch);
        o->exchange = NULL;
        dsort_job_topo_destroy(o->topo);
        o->topo = NULL;
        return 2;
    }
    if (o->lines) { /* lines choose between memory and spilling themselves */
        code = dsort_job_sort_lines(c, o, in, &sh, &stats);
    } else {
        const struct dsort_format user_fmt = o->fmt; /* typed keys: sorted widened */
        dsort_job_typed_enter(o);
        stats.needed = dsort_job_mem_needed(&o->fmt, sh.n, c->size);
        /* Every rank takes the same path: out of core if any rank's share does not fit. */
        /* a resumed job was out of core when it stopped */
        /* standard input: rank 0 holds all of it; the in-memory pipeline assumes even shares */
        int fits =
            stats.needed <= stats.budget && !o->force_external && !o->resume && !o->stdin_rank0;
        stats.external = !dsort_comm_all_ok(c, fits);
        if (!stats.external)
            dsort_job_ckpt_note_memory(c, o);
        if (stats.external)
            code = dsort_job_sort_external(c, o, in, &sh, &stats);
        else if (dsort_job_map_usable(c, o, in))
            code = dsort_job_sort_mapped(c, o, in, &sh, &stats);
        else
            code = dsort_job_sort_memory(c, o, in, &sh, &stats);
        o->fmt = user_fmt;
    }
    dsort_progress_finish(code == 0);
    stats.exchange_moves = (int)xch.moves;
    stats.exchange_node = (int)xch.node_moves;
    dsort_exchange_close(&xch);
    o->exchange = NULL;
    dsort_job_stats_stop(&stats);
    if (code == 0)
        code = report(c, o, &stats, dsort_clock_now() - t0);
    dsort_job_topo_destroy(o->topo);
    o->topo = NULL;
    return code;
}

/* Append one word to the shape s at p, its spaces and backslashes escaped (so that "-o 'x -r'"
 * and "-o x -r" differ); returns the new end. */
static char *shape_word(char *s, char *p, const char *w)
{
    if (p != s)
        *p++ = ' ';
    for (; *w; w++) {
        if (*w == ' ' || *w == '\\')
            *p++ = '\\';
        *p++ = *w;
    }
    *p = '\0';
    return p;
}

/* --debug: the notes GNU sort prints about every C-locale ordering and about numbers. */
static void debug_notes(const struct dsort_keys *k)
{
    fprintf(stderr, "dsort: text ordering performed using simple byte comparison\n");
    int numbers = 0;
    for (size_t i = 0; i < k->n; i++)
        numbers |= !!(k->key[i].flags & (DSORT_KEY_NUMERIC | DSORT_KEY_GENERAL | DSORT_KEY_HUMAN));
    if (numbers)
        fprintf(stderr, "dsort: note numbers use '.' as a decimal point in this locale\n");
}

/* The options that shape a job's output, for its checkpoint (--resume must be given the same):
 * the command line without those that only say how to run it (memory, temp dirs, reports,
 * stop and resume, threads, I/O tuning). Inputs are named too; their identity is the
 * checkpoint's own check. Made before getopt permutes argv. A new string (NULL: no memory). */
static char *job_shape(int argc, char **argv)
{
    static const char *const skip_arg[] = {"--stats",
                                           "--keep-checkpoint",
                                           "--memory",
                                           "--buffer-size",
                                           "--temp-dir",
                                           "--temporary-directory",
                                           "--parallel",
                                           "--exchange-chunk",
                                           "--block-size",
                                           "--streams-per-device",
                                           "--stop-after",
                                           "--batch-size",
                                           "--compress-program",
                                           "--exchange"};
    static const char *const skip[] = {"-v",         "--verbose", "--checkpoint", "--resume",
                                       "--progress", "--bind",    "--one-stream", "--no-direct",
                                       "--verify",   "--no-map"};
    size_t len = 1;
    for (int i = 1; i < argc; i++)
        len += 2 * strlen(argv[i]) + 1;
    char *s = malloc(len), *p = s;
    if (!s)
        return NULL;
    *p = '\0';
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int drop = 0, next = 0;
        if (!strcmp(a, "--")) { /* operands only from here */
            for (; i < argc; i++)
                p = shape_word(s, p, argv[i]);
            break;
        }
        for (size_t k = 0; k < sizeof skip / sizeof skip[0]; k++)
            drop |= !strcmp(a, skip[k]) || (!strncmp(a, skip[k], strlen(skip[k])) &&
                                            a[strlen(skip[k])] == '=' && skip[k][1] == '-');
        for (size_t k = 0; k < sizeof skip_arg / sizeof skip_arg[0]; k++) {
            size_t n = strlen(skip_arg[k]);
            if (!strncmp(a, skip_arg[k], n) && (a[n] == '=' || !a[n])) {
                drop = 1;
                next = !a[n];
            }
        }
        if (!strncmp(a, "-S", 2) || !strncmp(a, "-T", 2)) {
            drop = 1;
            next = !a[2];
        }
        if (drop) {
            i += next;
            continue;
        }
        p = shape_word(s, p, a);
    }
    return s;
}

int main(int argc, char **argv)
{
    struct dsort_comm c;
    dsort_cli_start(&argc, &argv, &c, "dsort");
    struct dsort_job_options o;
    struct dsort_gnuopts x;
    char **temps = NULL;
    char *shape = job_shape(argc, argv);
    int code = dsort_opts_parse(&c, argc, argv, &o, &x, &temps);
    o.shape = shape ? shape : "";
    if (code >= 0) {
        dsort_gnuopts_free(&x);
        free(temps);
        free(shape);
        return dsort_cli_finish(code);
    }
    /* Standard input and files whose size is not what they hold (/proc, /sys): rank 0's copies
     * of them, which only rank 0 opens; standard output: parts in a node-local directory that
     * rank 0 writes out at the end (pipeio.h). Not under --local-inputs (each node's own
     * files) nor with a checkpoint (the copies do not outlive the job): the inputs' open
     * refuses such files there. */
    static char outdir[4096];
    struct dsort_pipeio_inputs cp;
    if (dsort_pipeio_copy_inputs(&c, o.temp_dirs[0], o.inputs, o.ninputs,
                                 !o.local_inputs && !o.resume && !o.stop_after && !o.checkpoint,
                                 &cp)) {
        dsort_gnuopts_free(&x);
        free(temps);
        free(shape);
        return dsort_cli_finish(2);
    }
    if (cp.paths) {
        o.inputs = cp.paths;
        o.ninputs = cp.n;
        shown_names = cp.shown;
        o.stdin_rank0 = 1;
    }
    if (x.to_stdout) {
        dsort_pipeio_outdir(&c, o.temp_dirs[0], outdir, sizeof outdir);
        o.output_dir = outdir;
        o.local_output = 1;
    }
    struct dsort_error err = {0};
    struct dsort_inputs in;
    int *found = calloc(o.ninputs + 1, sizeof *found),
        *anywhere = calloc(o.ninputs + 1, sizeof *found);
    enum dsort_status st =
        !found || !anywhere
            ? DSORT_ERR(&err, DSORT_ENOMEM, errno, "out of memory")
            : dsort_inputs_open_ex(
                  &in, o.inputs, o.stdin_rank0 && c.rank != 0 ? 0 : o.ninputs, &o.fmt,
                  o.local_inputs ? DSORT_INPUTS_SKIP_MISSING | DSORT_INPUTS_EXPAND_DIRS : 0, found,
                  &err);
    if (st && cp.paths)
        dsort_pipeio_name_copies(&cp, err.msg, sizeof err.msg);
    if ((st = dsort_comm_agree(&c, st, &err))) {
        free(found);
        free(anywhere);
        dsort_pipeio_uncopy(&c, &cp);
        dsort_gnuopts_free(&x);
        free(temps);
        free(shape);
        return dsort_cli_finish(2);
    }
    /* Node-local inputs: every path must exist on some node. */
    memcpy(anywhere, found, o.ninputs * sizeof *found);
    dsort_agree_any(&c, anywhere, o.ninputs);
    for (size_t i = 0; i < o.ninputs && !st; i++)
        if (!anywhere[i])
            st = DSORT_ERR(&err, DSORT_EINVAL, 0, "input '%s' exists on no node", o.inputs[i]);
    free(found);
    free(anywhere);
    if (!st && !o.check)
        st = check_written(&o, &in, &err);
    if (!st && !o.check && o.stats && c.rank == 0)
        st = stats_probe(o.stats, &err);
    if (!st && !x.format_given)
        st = refuse_text(&c, &o, &in, &err);
    if ((st = dsort_comm_agree(&c, st, &err))) {
        dsort_inputs_destroy(&in);
        dsort_pipeio_uncopy(&c, &cp);
        dsort_gnuopts_free(&x);
        free(temps);
        free(shape);
        return dsort_cli_finish(2);
    }
    if (x.debug && c.rank == 0)
        debug_notes(o.keys);
    code = o.check && o.stdin_rank0 ? run_check_alone(&c, &o, &x, &in)
           : o.check                ? run_check(&c, &o, &x, &in)
                                    : run_sort(&c, &o, &x.budget, &in);
    dsort_inputs_destroy(&in);
    dsort_pipeio_uncopy(&c, &cp);
    struct dsort_debugout dbg;
    if (x.debug)
        dsort_debugout_init(&dbg, o.keys, o.eol, 1);
    if (code == 0 && x.to_stdout)
        code = dsort_pipeio_emit(&c, outdir, x.debug && c.rank == 0 ? &dbg : NULL,
                                 o.lines ? 0 : o.fmt.rec_size, o.eol);
    if (x.debug)
        dsort_debugout_free(&dbg);
    dsort_gnuopts_free(&x);
    free(temps);
    free(shape);
    return dsort_cli_finish(code);
}
