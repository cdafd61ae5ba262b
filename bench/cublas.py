#!/usr/bin/env python3
"""cuBLAS fp32 GEMM rates through PyTorch, for same-run comparison with glmul.

TF32 is off (fp32 FMA, as glmul's GLSL kernels do); times come from CUDA
events after at least 0.5 s of warm-up (as glmul's own after idle); the
median of --reps runs is reported.

usage: bench/cublas.py [--reps 20] MxKxN|N ...    prints CSV: m,k,n,median_ms,gflops
"""
import argparse
import statistics
import sys
import time


def parse_shape(s):
    dims = [int(x) for x in s.lower().split("x")]
    return tuple(dims) if len(dims) == 3 else (dims[0],) * 3


def cublas_median_ms(m, k, n, reps=20):
    """Median time in ms of one fp32 m×k by k×n product on the GPU."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    g = torch.Generator(device="cuda").manual_seed(1)
    a = torch.rand(m, k, device="cuda", generator=g) * 2 - 1
    b = torch.rand(k, n, device="cuda", generator=g) * 2 - 1
    # Warm up for at least half a second, as glmul does after idle
    # (measure.MinWarmup): an idle H100 drops its SM clock to 345-585 MHz
    # and needs 0.1-0.3 s of load to return to 1980 (docs/PERFORMANCE.md),
    # so three warm-up products left small shapes timed at a low clock.
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 0.5:
        for _ in range(3):
            torch.matmul(a, b)
        torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        torch.matmul(a, b)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("shapes", nargs="+")
    args = ap.parse_args()
    print("m,k,n,median_ms,gflops")
    for s in args.shapes:
        m, k, n = parse_shape(s)
        med = cublas_median_ms(m, k, n, args.reps)
        print(f"{m},{k},{n},{med:.4f},{2 * m * n * k / med / 1e6:.1f}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
