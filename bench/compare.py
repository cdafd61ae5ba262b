#!/usr/bin/env python3
"""glmul against cuBLAS fp32 on the same shapes, in one run, with the ratio.

Runs `glmul bench -format csv` on the shapes, then cuBLAS (PyTorch, TF32
off, CUDA events, medians) on each, and prints one table: glmul's GFLOPS per
kernel, cuBLAS's, and glmul as a percentage of cuBLAS. Needs an NVIDIA GPU
with PyTorch; glmul reaches the GPU through headless EGL.

With --unseen it also runs `glmul bench -unseen -kernels fast` on the same
shapes, as a GPU glmul never saw (the device model's kernel choice, no
tuning cache, no vendor's measured choice), and adds to each fast row its
kernel, GFLOPS and percentage of the first run's figure ("tuned": the
tuning cache's choice where glmul tune ran, else the vendor's built-in
one, which for NVIDIA was tuned on an H100). Explicit kernel specs and
tiled32 are the same either way and get no unseen columns.

usage: bench/compare.py [--glmul bin/glmul] [--reps 10] [--kernels tiled32,fast]
                        [--shapes 1024,2048,4096,...] [--unseen] [--csv out.csv]
"""
import argparse
import csv
import io
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cublas import cublas_median_ms  # noqa: E402

DEFAULT_SHAPES = "256,512,1024,2048,4096,8192,4097,1000x4096x1000,4096x64x4096,64x4096x64,8192x8192x256"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--glmul", default="bin/glmul")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--kernels", default="tiled32,fast")
    ap.add_argument("--shapes", default=DEFAULT_SHAPES)
    ap.add_argument("--unseen", action="store_true", help="also run glmul bench -unseen and compare it with the tuned choice")
    ap.add_argument("--csv", help="also write the table as CSV here")
    args = ap.parse_args()

    rows = bench(args)
    unseen = {}
    if args.unseen:
        unseen = {(r["m"], r["k"], r["n"], r["kernel"]): r for r in bench(args, "-unseen", kernels="fast")}

    cublas = {}
    for r in rows:
        key = (int(r["m"]), int(r["k"]), int(r["n"]))
        if key not in cublas:
            ms = cublas_median_ms(*key, reps=max(20, args.reps))
            cublas[key] = 2 * key[0] * key[1] * key[2] / ms / 1e6

    table = []
    for r in rows:
        key = (int(r["m"]), int(r["k"]), int(r["n"]))
        g = float(r["gflops"]) if r["gflops"] else 0.0
        t = {
            "shape": "x".join(map(str, key)), "kernel": r["spec"] or r["kernel"], "glmul_gflops": f"{g:.1f}",
            "cublas_gflops": f"{cublas[key]:.1f}",
            "pct_of_cublas": f"{100 * g / cublas[key]:.1f}" if not r["skipped"] else "",
            "valid": r["valid"], "skipped": r["skipped"],
        }
        u = unseen.get((r["m"], r["k"], r["n"], r["kernel"]))
        if args.unseen:
            ug = float(u["gflops"]) if u and u["gflops"] else 0.0
            t["unseen_kernel"] = (u["spec"] or u["kernel"]) if u else "-"
            t["unseen_gflops"] = f"{ug:.1f}" if u else "-"
            t["unseen_pct_of_tuned"] = f"{100 * ug / g:.1f}" if g > 0 and u and not u["skipped"] else ""
            t["valid"] += "/" + (u["valid"] if u else "-")
            if u and u["skipped"]:
                t["skipped"] = (t["skipped"] + "; " if t["skipped"] else "") + "unseen: " + u["skipped"]
        table.append(t)
    cols = ["shape", "kernel", "glmul_gflops", "cublas_gflops", "pct_of_cublas", "valid"]
    if args.unseen:
        cols[5:5] = ["unseen_kernel", "unseen_gflops", "unseen_pct_of_tuned"]
    widths = {c: max(len(c), *(len(t[c]) for t in table)) for c in cols}
    print("  ".join(c.rjust(widths[c]) for c in cols))
    for t in table:
        print("  ".join(t[c].rjust(widths[c]) for c in cols) + (f"  skipped: {t['skipped'][:60]}" if t["skipped"] else ""))
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=cols + ["skipped"])
            w.writeheader()
            w.writerows(table)


def bench(args, *extra, kernels=None):
    """Runs glmul bench on the shapes (with extra flags; kernels, if given, for --kernels) and returns its CSV rows."""
    cmd = [args.glmul, "bench", "-format", "csv", "-progress", "off", "-reps", str(args.reps),
           "-kernels", kernels or args.kernels, "-shapes", args.shapes, *extra]
    out = subprocess.run(cmd, capture_output=True, text=True)
    sys.stderr.write(out.stderr)
    if out.returncode != 0:
        sys.exit(f"compare: {' '.join(cmd)} exited {out.returncode}")
    return list(csv.DictReader(io.StringIO(out.stdout)))


if __name__ == "__main__":
    main()
