/* The out-of-core merge machinery every record format shares (runmerge.h). */
#include "runmerge.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mem.h"

void dsort_runmerge_init(struct dsort_runmerge *m, const struct dsort_recfmt *fmt,
                         const struct dsort_recfmt_ctx *fx, struct dsort_runset *runs,
                         struct dsort_tempdirs *td, size_t block)
{
    memset(m, 0, sizeof *m);
    m->fmt = fmt;
    m->fx = fx;
    m->runs = runs;
    m->td = td;
    m->block = block;
    m->blen = dsort_runreader_buf_len(fmt->run_rec(fx), block, 1);
}

/* Merge k cursors into a new run of the set; *file_bytes gets the bytes its files took. With
 * temp dirs on several devices the run is striped over them (runfile.h). */
static enum dsort_status merge_into_run(struct dsort_runmerge *m, void *cur, size_t k,
                                        uint64_t *file_bytes, struct dsort_error *err)
{
    char names[DSORT_RUN_MAX_STRIPES][DSORT_RUN_PATH_MAX];
    const char *paths[DSORT_RUN_MAX_STRIPES];
    size_t nf = dsort_tempdirs_run_stripes(m->td, &names[0][0], DSORT_RUN_PATH_MAX,
                                           dsort_runmerge_stripes(m->td));
    for (size_t i = 0; i < nf; i++)
        paths[i] = names[i];
    const size_t rec = m->fmt->run_rec(m->fx);
    struct dsort_runwriter w;
    enum dsort_status st = dsort_runwriter_open_striped(&w, paths, nf, rec, m->block, err);
    if (st)
        return st;
    uint64_t bytes = 0;
    st = m->fmt->merge_to_run(m->fx, cur, k, &w, &bytes, err);
    if (!st)
        st = dsort_runwriter_close(&w, err);
    if (!st)
        st = dsort_runset_add_striped(m->runs, paths, nf, w.records, rec ? w.records * rec : bytes,
                                      err);
    if (st) {
        dsort_runwriter_abort(&w);
        return st;
    }
    dsort_runwriter_free(&w);
    *file_bytes = w.off;
    return DSORT_OK;
}

size_t dsort_runmerge_stripes(const struct dsort_tempdirs *td)
{
    size_t n = td && td->ndev ? td->ndev : 1;
    return n < DSORT_RUN_MAX_STRIPES ? n : DSORT_RUN_MAX_STRIPES;
}

enum dsort_status dsort_runmerge_spill(struct dsort_runmerge *m, void *cur, size_t k,
                                       struct dsort_error *err)
{
    uint64_t bytes = 0;
    enum dsort_status st = merge_into_run(m, cur, k, &bytes, err);
    if (!st) {
        m->runs_made++;
        m->run_bytes += bytes;
    }
    return st;
}

uint64_t dsort_runmerge_region_mem(size_t rec, size_t block, size_t k, const size_t *region_len,
                                   int nregions)
{
    const size_t blen = dsort_runreader_buf_len(rec, block, k);
    uint64_t n = 0;
    for (int i = 0; i < nregions; i++)
        n += region_len[i] / blen;
    return n * blen;
}

enum dsort_status dsort_runmerge_plan(struct dsort_runmerge *m, uint64_t mem, size_t cap,
                                      unsigned char *const *region, const size_t *region_len,
                                      int nregions, char *why, size_t whylen,
                                      struct dsort_error *err)
{
    /* A striped run holds a descriptor for each of its files, and so does an extra pass's new
     * run: count the most files any run has, or a new one will; its reader's buffers too. */
    size_t k = dsort_runmerge_stripes(m->td);
    for (size_t i = 0; i < m->runs->n; i++)
        if (m->runs->runs[i].k > k)
            k = m->runs->runs[i].k;
    const size_t rec = m->fmt->run_rec(m->fx);
    const size_t blen = m->blen = dsort_runreader_buf_len(rec, m->block, k);
    if (nregions)
        mem = dsort_runmerge_region_mem(rec, m->block, k, region_len, nregions);
    dsort_fan_in_now(mem, blen, cap, &m->fi);
    dsort_fan_in_per_run(&m->fi, k, cap);
    dsort_fan_in_explain(&m->fi, m->runs->n, why, whylen);
    m->f = m->fi.f;
    /* A merge opens at most f runs, and never more than there are now (passes only reduce). */
    m->slots = m->runs->n < m->f ? m->runs->n : m->f;
    size_t n = m->slots ? m->slots : 1;
    m->rd = calloc(n, sizeof *m->rd);
    m->cur = calloc(n, m->fmt->cur_size);
    m->buf = calloc(n, sizeof *m->buf);
    if (!m->rd || !m->cur || !m->buf)
        return DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    if (nregions) {
        size_t i = 0;
        for (int r = 0; r < nregions && i < m->slots; r++)
            for (size_t j = 0; j < region_len[r] / blen && i < m->slots; j++)
                m->buf[i++] = region[r] + j * blen;
        if (i < m->slots) /* the fan-in came from these regions */
            return DSORT_ERR(err, DSORT_EINTERNAL, 0, "%zu read buffers for %zu runs", i, m->slots);
    } else if (m->slots) {
        m->own_len = m->slots * blen;
        if (!(m->own = dsort_mem_alloc(m->own_len)))
            return DSORT_ERR(err, DSORT_ENOMEM, errno,
                             "cannot allocate %zu bytes of merge read buffers", m->own_len);
        for (size_t i = 0; i < m->slots; i++)
            m->buf[i] = m->own + i * blen;
    }
    /* One read-ahead thread per device: a thread reads one block at a time, so with one
     * thread for all the disks only one of them would be busy at any moment. */
    size_t ndev = m->td && m->td->ndev ? m->td->ndev : 1;
    if (!(m->pf = calloc(ndev, sizeof *m->pf)))
        return DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    for (; m->npf < ndev; m->npf++) {
        enum dsort_status st = dsort_prefetch_create(&m->pf[m->npf], err);
        if (st)
            return st;
    }
    return DSORT_OK;
}

struct dsort_prefetch *dsort_runmerge_prefetch(const struct dsort_runmerge *m, const char *path)
{
    if (!m->npf)
        return NULL;
    return m->pf[dsort_tempdirs_device_of(m->td, path) % m->npf];
}

/* The read-ahead threads of run's files: each file's device's. */
static void run_prefetch(const struct dsort_runmerge *m, const struct dsort_run *run,
                         struct dsort_prefetch **pf)
{
    const char *paths[DSORT_RUN_MAX_STRIPES];
    size_t k = dsort_run_files(run, paths);
    for (size_t i = 0; i < k; i++)
        pf[i] = dsort_runmerge_prefetch(m, paths[i]);
}

enum dsort_status dsort_runmerge_open(struct dsort_runmerge *m, size_t from, size_t k, void **cur,
                                      struct dsort_error *err)
{
    if (k > m->slots)
        return DSORT_ERR(err, DSORT_EINTERNAL, 0, "a merge of %zu runs with %zu readers", k,
                         m->slots);
    for (size_t i = 0; i < k; i++) {
        struct dsort_prefetch *pf[DSORT_RUN_MAX_STRIPES];
        run_prefetch(m, &m->runs->runs[from + i], pf);
        enum dsort_status st =
            m->fmt->cursor_run(m->fx, dsort_recfmt_cursor(m->fmt, m->cur, i), &m->rd[i],
                               &m->runs->runs[from + i], m->block, m->buf[i], pf, err);
        if (st) {
            dsort_runmerge_close(m, i);
            return st;
        }
    }
    *cur = m->cur;
    return DSORT_OK;
}

void dsort_runmerge_close(struct dsort_runmerge *m, size_t k)
{
    for (size_t i = 0; i < k; i++)
        m->fmt->cursor_close(m->fx, dsort_recfmt_cursor(m->fmt, m->cur, i));
}

enum dsort_status dsort_runmerge_reduce(struct dsort_runmerge *m, struct dsort_error *err)
{
    while (m->runs->n > m->f) {
        dsort_runset_sort_smallest(m->runs);
        size_t k = dsort_fan_in_step(m->runs->n, m->f);
        void *cur;
        enum dsort_status st = dsort_runmerge_open(m, 0, k, &cur, err);
        if (st)
            return st;
        uint64_t bytes = 0;
        st = merge_into_run(m, cur, k, &bytes, err);
        dsort_runmerge_close(m, k);
        if (st)
            return st;
        m->passes++; /* a pass, not a run of the rounds */
        m->pass_bytes += bytes;
        if (m->on_pass && (st = m->on_pass(m->on_pass_ctx, m->runs, k, err)))
            return st;
        dsort_runset_drop(m->runs, 0, k);
    }
    return DSORT_OK;
}

void dsort_runmerge_release(struct dsort_runmerge *m)
{
    for (size_t i = 0; i < m->npf; i++)
        dsort_prefetch_destroy(m->pf[i]);
    free(m->pf);
    m->pf = NULL;
    m->npf = 0;
    free(m->rd);
    free(m->cur);
    free(m->buf);
    m->rd = NULL;
    m->cur = NULL;
    m->buf = NULL;
    dsort_mem_free(m->own, m->own_len);
    m->own = NULL;
    m->own_len = 0;
    m->slots = 0;
}
