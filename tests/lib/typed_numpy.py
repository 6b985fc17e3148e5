"""What the numpy oracles of typed keys share (tests/unit/typedkey_diff.py,
tests/lib_example/keys_numpy.py): numpy itself, found in Debian's python3 when the python3 on
PATH lacks it, and dsort's type names as numpy's dtypes."""

import os
import subprocess
import sys


def numpy_or_skip(name):
    """numpy; else re-run the calling script under /usr/bin/python3 when that has it (the
    python3 on PATH may be a pyenv one; Debian's has python3-numpy); else print NAME: SKIP and
    exit 77 (ctest's skip)."""
    try:
        import numpy
        return numpy
    except ImportError:
        if sys.executable != "/usr/bin/python3" and os.path.exists("/usr/bin/python3") and \
                subprocess.call(["/usr/bin/python3", "-c", "import numpy"],
                                stderr=subprocess.DEVNULL) == 0:
            os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
        print(f"{name}: SKIP: numpy is missing (apt-get install python3-numpy)")
        sys.exit(77)


# dsort's type name -> numpy's dtype
TYPES = {
    "u8": "u1", "i8": "i1",
    "u16le": "<u2", "u16be": ">u2", "i16le": "<i2", "i16be": ">i2",
    "u32le": "<u4", "u32be": ">u4", "i32le": "<i4", "i32be": ">i4",
    "u64le": "<u8", "u64be": ">u8", "i64le": "<i8", "i64be": ">i8",
    "f32le": "<f4", "f32be": ">f4", "f64le": "<f8", "f64be": ">f8",
}
