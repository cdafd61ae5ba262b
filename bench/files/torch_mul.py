#!/usr/bin/env python3
"""The PyTorch (cuBLAS) peer of `glmul mul A B -o C`: C = A·B in float32 on
the CUDA GPU, files to files.

usage: bench/files/torch_mul.py A.npy B.npy C.npy [--fsync]

np.load both (float64 input rounded to float32 on the CPU, as the NumPy
peer does), torch.from_numpy(...).cuda() (pageable memory, not pinned),
TF32 off (glmul computes in full float32), torch.mm, synchronize,
.cpu().numpy(), np.save. The whole process is what run.sh times: Python and
torch start-up and CUDA context creation included, as glmul's include its
start-up and OpenGL context. Exits 3 when CUDA is not available.
With --fsync, C is fsynced (file and directory), as glmul fsyncs its C.
"""
import os
import sys

import numpy as np
import torch


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


def main():
    fsync = sys.argv[4:] == ["--fsync"]
    if len(sys.argv) != 4 and not fsync:
        sys.exit("usage: torch_mul.py A.npy B.npy C.npy [--fsync]")
    if not torch.cuda.is_available():
        print("torch_mul: CUDA is not available", file=sys.stderr)
        sys.exit(3)
    torch.backends.cuda.matmul.allow_tf32 = False
    a = torch.from_numpy(np.load(sys.argv[1]).astype(np.float32, copy=False)).cuda()
    b = torch.from_numpy(np.load(sys.argv[2]).astype(np.float32, copy=False)).cuda()
    c = torch.mm(a, b)
    torch.cuda.synchronize()
    save(sys.argv[3], c.cpu().numpy(), fsync)


if __name__ == "__main__":
    main()
