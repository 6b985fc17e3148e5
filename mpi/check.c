#include "check.h"

#include <errno.h>
#include <stdlib.h>

#include "mem.h"

enum dsort_status dsort_check_inputs(const struct dsort_comm *c, const struct dsort_inputs *in,
                                     const struct dsort_format *fmt, const struct dsort_order *ord,
                                     size_t block, struct dsort_vsum *total,
                                     struct dsort_error *err)
{
    const size_t rs = fmt->rec_size;
    size_t per = block / rs ? block / rs : 1;
    uint64_t first, count;
    dsort_io_split(in->total_records, c->rank, c->size, &first, &count);
    if (per > count && count > 0)
        per = (size_t)count;
    struct dsort_vsum mine;
    enum dsort_status st = dsort_vsum_init(&mine, fmt, err);
    unsigned char *buf = NULL;
    size_t buflen = per * rs;
    if (!st && !(buf = dsort_mem_alloc(buflen)))
        st = DSORT_ERR(err, DSORT_ENOMEM, errno, "cannot allocate a %zu-byte read buffer", buflen);
    for (uint64_t done = 0; !st && done < count;) {
        size_t n = count - done < per ? (size_t)(count - done) : per;
        st = dsort_inputs_read(in, first + done, n, buf, err);
        if (!st)
            dsort_vsum_add(&mine, fmt, ord, buf, n);
        done += n;
    }
    dsort_mem_free(buf, buflen);
    size_t psz = dsort_vsum_packed_size(fmt->key_len);
    unsigned char *packed = malloc(psz), *all = NULL;
    if (!st && !packed)
        st = DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    if (!st && c->rank == 0 && !(all = malloc(psz * (size_t)c->size)))
        st = DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    if ((st = dsort_comm_agree(c, st, err)))
        goto out;
    dsort_vsum_pack(&mine, packed);
    MPI_Gather(packed, (int)psz, MPI_BYTE, all, (int)psz, MPI_BYTE, 0, c->comm);
    if (c->rank == 0) {
        for (int r = 0; r < c->size; r++) {
            dsort_vsum_unpack(&mine, all + (size_t)r * psz);
            dsort_vsum_append(total, &mine, ord);
        }
        dsort_vsum_pack(total, packed);
    }
    MPI_Bcast(packed, (int)psz, MPI_BYTE, 0, c->comm);
    dsort_vsum_unpack(total, packed);
out:
    dsort_vsum_destroy(&mine);
    free(packed);
    free(all);
    return st;
}
