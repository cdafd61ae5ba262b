#!/usr/bin/env python3
"""Seeded random .npy inputs for bench/files/run.sh, in bounded memory.

usage: bench/files/make_inputs.py [--seed S] [--force] DIR [CASE ... | all]

Writes DIR/CASE/A.npy and DIR/CASE/B.npy for each case (default: the small
ones, input_bound and output_bound; `all` names every case). Values are
uniform on [-1, 1): A from numpy.random.default_rng(S), B from
default_rng(S + 1) (S defaults to 1), drawn as float32 in blocks of rows, so
a matrix's values do not depend on the block size. The variants of
input_bound hold the same values: input_bound_f8 as float64 (exactly),
input_bound_fortran in Fortran order (what np.asfortranarray then np.save
write).

A file is made with numpy.lib.format.open_memmap (which writes the header
and sizes the file, sparse) and then filled block by block with os.pwrite,
each block at most about 64 MiB: writing through the map instead would keep
every page written resident in this process (file pages count in RSS), so
a 1.5 GiB A would cost 1.5 GiB of RSS. Each file is written under a
temporary name and renamed when complete. A file that already exists with
the right shape, dtype and order is kept (the seed is not recorded: use
--force after changing --seed).
"""
import argparse
import os
import resource
import sys
import time

import numpy as np

F4, F8 = np.dtype("<f4"), np.dtype("<f8")

# name: (A shape, B shape, dtype, Fortran order)
CASES = {
    # 64 MiB in, 16 KiB out: reading the input is the work.
    "input_bound": ((4096, 4096), (4096, 1), F4, False),
    # 2 MiB in, 64 MiB out: writing C is the work.
    "output_bound": ((4096, 64), (64, 4096), F4, False),
    # 256 MiB each of A, B and C: the GPU's arithmetic is the work.
    "square8192": ((8192, 8192), (8192, 8192), F4, False),
    # a 1.5 GiB A times a thin B (1 MiB), C 1.5 MiB.
    "tall_a": ((24576, 16384), (16384, 16), F4, False),
    # thin factors (1.5 MiB and 1 MiB) whose product C is 1.5 GiB.
    "thin_big_c": ((24576, 16), (16, 16384), F4, False),
    # input_bound's values as float64 (128 MiB of A) and in Fortran order.
    "input_bound_f8": ((4096, 4096), (4096, 1), F8, False),
    "input_bound_fortran": ((4096, 4096), (4096, 1), F4, True),
}
DEFAULT_CASES = ["input_bound", "output_bound"]
BLOCK_BYTES = 64 << 20


def existing_ok(path, shape, dtype, fortran):
    """Whether path is already a .npy of this shape, dtype and order."""
    try:
        a = np.load(path, mmap_mode="r")
    except (OSError, ValueError):
        return False
    order_ok = a.flags.f_contiguous if fortran else a.flags.c_contiguous
    return a.shape == tuple(shape) and a.dtype == dtype and order_ok


def write_matrix(path, shape, dtype, fortran, seed):
    """Writes a rows×cols matrix of uniform [-1, 1) values to path."""
    rows, cols = shape
    rng = np.random.default_rng(seed)
    tmp = path + ".tmp"
    mm = np.lib.format.open_memmap(tmp, mode="w+", dtype=dtype, shape=shape, fortran_order=fortran)
    offset, item = mm.offset, dtype.itemsize
    del mm  # unmapped: nothing written through the map
    block_rows = max(1, BLOCK_BYTES // (cols * 4))
    fd = os.open(tmp, os.O_WRONLY)
    try:
        for i0 in range(0, rows, block_rows):
            r = min(block_rows, rows - i0)
            blk = rng.random((r, cols), dtype=np.float32)
            blk *= 2
            blk -= 1  # exact in float32: [0, 1) on a 2^-24 grid becomes [-1, 1)
            blk = blk.astype(dtype, copy=False)
            if not fortran:
                pwrite_all(fd, blk, offset + i0 * cols * item)
            else:  # column j's rows i0..i0+r lie together in the file
                cols_first = np.ascontiguousarray(blk.T)
                for j in range(cols):
                    pwrite_all(fd, cols_first[j], offset + (j * rows + i0) * item)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def pwrite_all(fd, arr, off):
    view = memoryview(arr).cast("B")
    while len(view):
        n = os.pwrite(fd, view, off)
        view, off = view[n:], off + n


def size(nbytes):
    return f"{nbytes / (1 << 20):.1f} MiB" if nbytes >= 1 << 20 else f"{nbytes / 1024:.1f} KiB"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog="cases: " + ", ".join(f"{k} (A {a[0]}×{a[1]}, B {b[0]}×{b[1]}{', float64' if d == F8 else ''}{', Fortran order' if f else ''})" for k, (a, b, d, f) in CASES.items()))
    ap.add_argument("dir", help="output directory; CASE/A.npy and CASE/B.npy are made in it")
    ap.add_argument("cases", nargs="*", default=DEFAULT_CASES, help="case names, or all (default: %(default)s)")
    ap.add_argument("--seed", type=int, default=1, help="A uses default_rng(SEED), B default_rng(SEED+1) (default: %(default)s)")
    ap.add_argument("--force", action="store_true", help="rewrite files that already exist")
    args = ap.parse_args()
    cases = list(CASES) if args.cases == ["all"] else args.cases
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        ap.error(f"unknown case(s) {unknown}; known: {', '.join(CASES)} or all")
    for case in cases:
        ashape, bshape, dtype, fortran = CASES[case]
        d = os.path.join(args.dir, case)
        os.makedirs(d, exist_ok=True)
        for name, shape, seed in (("A", ashape, args.seed), ("B", bshape, args.seed + 1)):
            path = os.path.join(d, name + ".npy")
            nbytes = shape[0] * shape[1] * dtype.itemsize
            what = f"{path}: {shape[0]}×{shape[1]} {dtype.name}{' Fortran order' if fortran else ''} ({size(nbytes)})"
            if not args.force and existing_ok(path, shape, dtype, fortran):
                print(f"{what}: exists, kept", flush=True)
                continue
            t0 = time.perf_counter()
            write_matrix(path, shape, dtype, fortran, seed)
            print(f"{what}: written in {time.perf_counter() - t0:.1f} s", flush=True)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    print(f"make_inputs: peak RSS {peak / 1024:.0f} MiB", file=sys.stderr)


if __name__ == "__main__":
    main()
