"""python3 -m dsort: sort a .npy file of a structured (or plain) array across MPI ranks.

    mpirun -n 4 python3 -m dsort particles.npy -o sorted.npy --order id
    mpirun -n 4 python3 -m dsort cells.npy -o sorted.npy --order=level,-morton -s

Each rank reads its slice of the input (memory-mapped), dsort.sort sorts them together, and
each rank writes its share at its place in the output (rank 0 writes the header first). The
records go through memory: this is the library's in-memory sort, not dsort's out-of-core one.
"""

import argparse
import sys

import numpy as np

import dsort


def parse(argv):
    p = argparse.ArgumentParser(prog="python3 -m dsort", description=(
        "Sort a .npy array across the ranks of MPI_COMM_WORLD with libdsort (run it under "
        "mpirun). Keys as numpy's order: field names, the first decides; '-NAME' sorts that "
        "field descending."))
    p.add_argument("input", nargs="?", help="the .npy file to sort (1-D)")
    p.add_argument("-o", "--output", help="the sorted .npy file to write")
    p.add_argument("--order", help="comma-separated field names (default: every field); "
                   "-NAME: descending (write --order=-NAME,... when the first has a -)")
    p.add_argument("-s", "--stable", action="store_true", help="equal keys keep input order")
    p.add_argument("-r", "--reverse", action="store_true",
                   help="descending: every key, and the record order of equal keys")
    p.add_argument("--keys", action="store_true",
                   help="print the dsort -k key list for the input's fields and exit")
    p.add_argument("--version", action="store_true", help="print libdsort's version and exit")
    a = p.parse_args(argv)
    if not a.version and (a.input is None or (a.output is None and not a.keys)):
        p.error("an input and -o OUTPUT are needed")
    return a


def run(comm, a):
    """Collective: read this rank's slice, sort, write this rank's share."""
    rank, size = comm.Get_rank(), comm.Get_size()
    src = np.load(a.input, mmap_mode="r")
    if src.ndim != 1:
        raise ValueError(f"{a.input}: a 1-D array is needed (shape {src.shape})")
    n = len(src)
    mine = np.array(src[rank * n // size:(rank + 1) * n // size])
    order = a.order.split(",") if a.order else None
    try:
        out = dsort.sort(mine, order=order, comm=comm, stable=a.stable, descending=a.reverse)
    except dsort.DsortError as e:  # raised on every rank: rank 0 says it, naming the rank
        if rank == 0:
            print(e, file=sys.stderr)
        return 2
    except (TypeError, ValueError, NotImplementedError) as e:  # this rank's, the others know
        print(f"dsort: rank {rank}/{size}: {str(e).removeprefix('dsort: ')}", file=sys.stderr)
        return 2
    start = comm.exscan(len(out)) or 0
    if rank == 0:
        np.lib.format.open_memmap(a.output, mode="w+", dtype=src.dtype, shape=(n,)).flush()
    comm.Barrier()
    if len(out):
        dst = np.load(a.output, mmap_mode="r+")
        dst[start:start + len(out)] = out
        dst.flush()
    comm.Barrier()
    return 0


def main(argv=None):
    a = parse(sys.argv[1:] if argv is None else argv)
    if a.version:
        print(f"dsort (Python) with libdsort {dsort.library_version()}")
        return 0
    if a.keys:
        order = a.order.split(",") if a.order else None
        print(dsort.keys_of(np.load(a.input, mmap_mode="r").dtype, order))
        return 0
    from mpi4py import MPI  # pylint: disable=import-outside-toplevel
    comm = MPI.COMM_WORLD
    try:
        return run(comm, a)
    except (OSError, ValueError) as e:  # reading or writing: the others may wait for this rank
        print(f"dsort: rank {comm.Get_rank()}/{comm.Get_size()} ({MPI.Get_processor_name()}): "
              f"{str(e).removeprefix('dsort: ')}", file=sys.stderr)
        comm.Abort(2)
    return 2


if __name__ == "__main__":
    sys.exit(main())
