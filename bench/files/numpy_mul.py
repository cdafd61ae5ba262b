#!/usr/bin/env python3
"""The NumPy peer of `glmul mul A B -o C`: C = A·B in float32, on the CPU.

usage: bench/files/numpy_mul.py A.npy B.npy C.npy [--fsync]

np.load both (float64 input is rounded to float32, as glmul does; Fortran
order is kept, BLAS reads it transposed), a @ b, np.save. No validation:
bench/files/run.sh compares glmul's C with this one.
With --fsync, C is fsynced (file and directory), as glmul fsyncs its C.
"""
import os
import sys

import numpy as np


def save(path, c, fsync):
    """np.save, then with fsync the file's data and its directory entry made
    durable, as glmul's renameio write does."""
    with open(path, "wb") as f:
        np.save(f, c)
        if fsync:
            f.flush()
            os.fsync(f.fileno())
    if fsync:
        d = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
        try:
            os.fsync(d)
        finally:
            os.close(d)


def args(name):
    """The peers' command line: A and B read as float32, C's path, --fsync."""
    fsync = sys.argv[4:] == ["--fsync"]
    if len(sys.argv) != 4 and not fsync:
        sys.exit("usage: %s A.npy B.npy C.npy [--fsync]" % name)
    a = np.load(sys.argv[1]).astype(np.float32, copy=False)
    b = np.load(sys.argv[2]).astype(np.float32, copy=False)
    return a, b, sys.argv[3], fsync


def main():
    a, b, c_path, fsync = args("numpy_mul.py")
    save(c_path, a @ b, fsync)


if __name__ == "__main__":
    main()
