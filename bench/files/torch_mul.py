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
import sys

import torch

from numpy_mul import args, save  # beside this file: the same loading and saving


def main():
    if not torch.cuda.is_available():
        print("torch_mul: CUDA is not available", file=sys.stderr)
        sys.exit(3)
    a, b, c_path, fsync = args("torch_mul.py")
    torch.backends.cuda.matmul.allow_tf32 = False
    c = torch.mm(torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda())
    torch.cuda.synchronize()
    save(c_path, c.cpu().numpy(), fsync)


if __name__ == "__main__":
    main()
