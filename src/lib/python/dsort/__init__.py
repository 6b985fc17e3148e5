"""dsort: sort a numpy structured array across an mpi4py communicator, through libdsort.

    import numpy as np, dsort
    from mpi4py import MPI
    mine = dsort.sort(particles, order="id")            # COMM_WORLD, by field id
    mine = dsort.sort(cells, order=["level", "-morton"], stable=True, comm=MPI.COMM_WORLD)

sort() is collective over comm (every rank calls it, with the same dtype and arguments) and
returns this rank's share of the globally sorted records, exactly balanced: with N records in
all and p ranks, rank i gets sorted positions [i*N//p, (i+1)*N//p). See docs/python.md.
"""

import sys

import numpy as np

from . import _lib

__all__ = ["sort", "keys_of", "DsortError", "library_version"]


class DsortError(RuntimeError):
    """A failed sort: code (a DSORT_ERR_* value), the lowest failing rank, and its message."""

    def __init__(self, code, rank, msg):
        super().__init__(msg)
        self.code = code
        self.rank = rank


def library_version():
    """The loaded libdsort's version, "MAJOR.MINOR.PATCH" (loads the library)."""
    return _lib.get().version


# Keys whose bytes compare as memcmp does (with u16be... u64be): libdsort 0.1's raw key.
_RAW_TYPES = ("u8", "bytes")


def _field_key(name, dt, off):
    """(off, type, len) of one field, in dsort's -k terms, or TypeError."""
    if dt.names is not None or dt.subdtype is not None:
        raise TypeError(f"dsort: field '{name}' is {dt}: nested and array fields cannot be keys")
    size = dt.itemsize
    order = dt.byteorder
    if order == "=":
        order = "<" if sys.byteorder == "little" else ">"
    end = {"<": "le", ">": "be", "|": ""}[order]
    if dt.kind in "SV" and size > 0:
        return (off, "bytes", size)
    if dt.kind == "b" and size == 1:
        return (off, "u8", 1)
    if dt.kind in "ui" and size in (1, 2, 4, 8):
        return (off, f"{dt.kind}{8 * size}{end if size > 1 else ''}", size)
    if dt.kind == "f" and size in (4, 8):
        return (off, f"f{8 * size}{end}", size)
    raise TypeError(f"dsort: field '{name}' is {dt} ({dt.str}): keys are unsigned or signed "
                    "integers of 1, 2, 4 or 8 bytes, float32, float64, bool, or fixed-size "
                    "bytes ('S', 'V')")


def _keys(dtype, order):
    """[(off, type, len, descending)] for numpy's order argument (see sort)."""
    if dtype.names is None:  # a plain array: the element is the key
        if order is not None:
            raise ValueError("dsort: order is for structured arrays")
        return [_field_key("(element)", dtype, 0) + (False,)]
    if order is None:
        order = list(dtype.names)
    elif isinstance(order, str):
        order = [order]
    keys = []
    for name in order:
        desc = False
        if name not in dtype.fields and name.startswith("-") and name[1:] in dtype.fields:
            name, desc = name[1:], True
        if name not in dtype.fields:
            raise ValueError(f"dsort: no field '{name}' in {dtype}")
        dt, off = dtype.fields[name][:2]
        keys.append(_field_key(name, dt, off) + (desc,))
    if not keys:
        raise ValueError("dsort: order names no field")
    return keys


def keys_of(dtype, order=None):
    """The -k key list ("OFF:TYPE[:LEN][:r],...") that sort() gives libdsort for dtype and order;
    the same keys dsort -k takes for a file of these records."""
    parts = []
    for off, typ, size, desc in _keys(np.dtype(dtype), order):
        parts.append(f"{off}:{typ}" + (f":{size}" if typ == "bytes" else "") + (":r" if desc else ""))
    return ",".join(parts)


def _raw_key(keys):
    """(key_off, key_len) when the keys are one run of memcmp-ordered bytes, else None."""
    for _, typ, _, desc in keys:
        if desc or not (typ in _RAW_TYPES or typ.startswith("u") and typ.endswith("be")):
            return None
    for (off, _, size, _), (noff, _, _, _) in zip(keys, keys[1:]):
        if noff != off + size:
            return None
    return (keys[0][0], keys[-1][0] + keys[-1][2] - keys[0][0])


def _plan(lib, arr, order, stable, descending):
    """The records struct (and the keys string it points to) for arr; local, may raise."""
    if not isinstance(arr, np.ndarray):
        raise TypeError("dsort: sort takes a numpy array")
    if arr.ndim != 1:
        raise ValueError(f"dsort: sort takes a 1-D array (this one has shape {arr.shape})")
    if arr.dtype.hasobject:  # pointers: meaningless on another rank, and never to be copied
        raise TypeError(f"dsort: {arr.dtype} holds Python objects: records must be plain bytes")
    if arr.dtype.itemsize == 0:
        raise TypeError("dsort: records of 0 bytes")
    keys = _keys(arr.dtype, order)
    rec = lib.Records()
    rec.rec_size = arr.dtype.itemsize
    rec.flags = (_lib.DSORT_STABLE if stable else 0) | (_lib.DSORT_REVERSE if descending else 0)
    raw = _raw_key(keys)
    keystr = None
    if raw is not None:
        rec.key_off, rec.key_len = raw
    elif not lib.has_keys:
        raise NotImplementedError(
            f"dsort: libdsort {lib.version} ({lib.path}) compares raw bytes only; typed keys "
            f"({keys_of(arr.dtype, order)}) need libdsort 0.2 or later")
    else:
        keystr = keys_of(arr.dtype, order).encode()
        rec.key_off, rec.key_len = 0, rec.rec_size
    if lib.has_keys:
        rec.keys = keystr
    return rec, keystr


def _agree(comm, exc):
    """Collective: raise on every rank if any rank failed its local checks (exc, or None)."""
    size = comm.Get_size()
    bad = comm.allreduce(comm.Get_rank() if exc is not None else size, op=_lib.get().mpi.MIN)
    if bad == size:
        return
    msg = None
    if exc is not None:
        msg = f"dsort: rank {bad}: {str(exc).removeprefix('dsort: ')}"
    msg = comm.bcast(msg, root=bad)
    if exc is not None:
        raise exc
    raise DsortError(_lib.DSORT_ERR_ARG, bad, msg)


def sort(arr, order=None, comm=None, stable=False, descending=False):
    """Collective over comm (default MPI.COMM_WORLD): sort every rank's records together and
    return this rank's share of the sorted sequence, a new 1-D array of arr's dtype.

    arr: this rank's records, a 1-D numpy array (any length, 0 included), structured or plain;
      the same dtype on every rank. The records' bytes (padding included) are what is sorted.
    order: as numpy's: a field name or a list of them; the first decides, the next breaks its
      ties. A name with a '-' in front ("-x") sorts that field descending. None: every field,
      in the dtype's order (a plain array: the element). Fields must be integers of 1, 2, 4 or
      8 bytes, float32/float64 (either byte order), bool, or fixed-size bytes ('S', 'V': their
      bytes, unsigned); others raise TypeError. Floats order as numpy's: -0.0 == +0.0, every
      NaN equal to every other and after +inf.
    stable: equal keys keep input order (rank 0's records first, in array order, then rank
      1's...); otherwise equal keys come in the order of the records' bytes.
    descending: reverse every key (a '-' field becomes ascending) and, without stable, the
      records' byte order of equal keys too (dsort -r).
    Raises DsortError (every rank, the same code and message) when libdsort fails, and on every
    rank when any rank's arguments are wrong (that rank raises its own TypeError/ValueError).
    A failure of MPI itself inside the sort ends the job (MPI_ERRORS_ARE_FATAL on a duplicate
    of comm, whatever comm's own handler): one rank's failed call would otherwise leave the
    others waiting for it.
    Typed keys (anything but a run of bytes, bool, u1 and big-endian unsigned fields, each
    ascending) need libdsort 0.2; on 0.1 they raise NotImplementedError.
    """
    lib = _lib.get()
    if comm is None:
        comm = lib.mpi.COMM_WORLD
    exc = None
    try:
        rec, keystr = _plan(lib, arr, order, stable, descending)
        data = np.ascontiguousarray(arr)
    except (TypeError, ValueError, NotImplementedError) as e:
        exc = e
    _agree(comm, exc)
    out = _lib.ctypes.c_void_p()
    n_out = _lib.ctypes.c_size_t()
    err = _lib.ErrInfo()
    # mpi4py gives its communicators MPI_ERRORS_RETURN (for its exceptions): an MPI call that
    # failed on one rank in the middle of libdsort's exchange would come back on that rank
    # alone, while the others waited for its messages for ever (libdsort(3)). The sort runs on
    # a duplicate whose MPI errors end the job (comm itself is left as it is).
    work = comm.Dup()
    try:
        work.Set_errhandler(lib.mpi.ERRORS_ARE_FATAL)
        rc = lib.dll.dsort_sort(lib.comm_handle(work), _lib.ctypes.byref(rec),
                                data.ctypes.data if len(data) else None, len(data),
                                _lib.ctypes.byref(out), _lib.ctypes.byref(n_out),
                                _lib.ctypes.byref(err))
    finally:
        work.Free()
    del keystr  # kept alive until the call returned
    if rc != _lib.DSORT_SUCCESS:
        raise DsortError(rc, err.rank, "dsort: " + err.msg.decode(errors="replace"))
    try:
        if n_out.value == 0:
            return np.empty(0, dtype=arr.dtype)
        nbytes = n_out.value * arr.dtype.itemsize
        buf = (_lib.ctypes.c_char * nbytes).from_address(out.value)
        return np.frombuffer(buf, dtype=arr.dtype, count=n_out.value).copy()
    finally:
        lib.free(out)
