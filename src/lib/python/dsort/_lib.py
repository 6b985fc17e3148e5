"""ctypes bindings of libdsort (src/lib/dsort.h): finding the library, the structs, MPI_Comm.

Local to each process; nothing here communicates. The library is loaded on first use, so that
importing dsort (and `python3 -m dsort --help`) works without it.
"""

import ctypes
import ctypes.util
import glob
import os

DSORT_SUCCESS = 0
DSORT_ERR_ARG = 1
DSORT_ERR_NOMEM = 2
DSORT_ERR_MPI = 3
DSORT_ERR_INTERNAL = 4
DSORT_REVERSE = 1
DSORT_STABLE = 2


class Records01(ctypes.Structure):
    """struct dsort_records of libdsort 0.1: the raw key only."""

    _fields_ = [("rec_size", ctypes.c_size_t), ("key_off", ctypes.c_size_t),
                ("key_len", ctypes.c_size_t), ("flags", ctypes.c_uint)]


class Records02(ctypes.Structure):
    """struct dsort_records of libdsort 0.2: keys is NULL (the raw key) or a -k key list."""

    _fields_ = Records01._fields_ + [("keys", ctypes.c_char_p)]


class ErrInfo(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("rank", ctypes.c_int), ("msg", ctypes.c_char * 256)]


def _candidates():
    """Where libdsort may be, in the order tried (see docs/python.md)."""
    env = os.environ.get("DSORT_LIB")
    if env:
        return [env]  # the user said where: nothing else is tried
    here = os.path.dirname(os.path.abspath(__file__))
    found = sorted(glob.glob(os.path.join(here, "libdsort.so*")))
    try:  # written by cmake --install: the library directory relative to this package
        from . import _installed  # pylint: disable=import-outside-toplevel
        libdir = os.path.normpath(os.path.join(here, _installed.LIBDIR_FROM_PACKAGE))
        found += sorted(glob.glob(os.path.join(libdir, "libdsort.so*")))
    except ImportError:
        pass
    name = ctypes.util.find_library("dsort")
    if name:
        found.append(name)
    found.append("libdsort.so.0")  # LD_LIBRARY_PATH and the loader's own search path
    return found


class Lib:
    """The loaded library: its functions with their C signatures, and what its version has."""

    def __init__(self):
        from mpi4py import MPI  # pylint: disable=import-outside-toplevel
        # MPI first (mpi4py loads libmpi as the MPI library wants), then libdsort, which uses it.
        self.mpi = MPI
        errors = []
        self.dll = None
        for path in _candidates():
            try:
                self.dll = ctypes.CDLL(path)
                self.path = path
                break
            except OSError as e:
                errors.append(str(e))
        if self.dll is None:
            raise OSError("dsort: cannot load libdsort (set DSORT_LIB to its path): "
                          + "; ".join(errors))
        self.dll.dsort_version.restype = ctypes.c_char_p
        self.dll.dsort_version.argtypes = []
        self.version = self.dll.dsort_version().decode()
        self.version_info = tuple(int(x) for x in self.version.split(".")[:3])
        self.has_keys = self.version_info >= (0, 2, 0)
        self.Records = Records02 if self.has_keys else Records01
        # MPI_Comm is a pointer in Open MPI and an int in MPICH: take mpi4py's size of it.
        if MPI._sizeof(MPI.Comm) == ctypes.sizeof(ctypes.c_int):  # pylint: disable=protected-access
            self.Comm = ctypes.c_int
        else:
            self.Comm = ctypes.c_void_p
        self.dll.dsort_sort.restype = ctypes.c_int
        self.dll.dsort_sort.argtypes = [
            self.Comm, ctypes.POINTER(self.Records), ctypes.c_void_p, ctypes.c_size_t,
            ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t),
            ctypes.POINTER(ErrInfo)
        ]
        self.dll.dsort_strerror.restype = ctypes.c_char_p
        self.dll.dsort_strerror.argtypes = [ctypes.c_int]
        libc = ctypes.CDLL(None)
        self.free = libc.free
        self.free.restype = None
        self.free.argtypes = [ctypes.c_void_p]

    def comm_handle(self, comm):
        """The C MPI_Comm of an mpi4py communicator, as a ctypes value."""
        addr = self.mpi._addressof(comm)  # pylint: disable=protected-access
        return self.Comm.from_address(addr)


_LIB = None


def get():
    """The library, loaded on first call."""
    global _LIB  # pylint: disable=global-statement
    if _LIB is None:
        _LIB = Lib()
    return _LIB
