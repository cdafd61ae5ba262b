#!/usr/bin/env python3
"""bench/files/run.sh's tables: one case's runs, checks and limits as Markdown.

usage: bench/files/report.py CASEDIR CASE TOOL...

Reads CASEDIR/A.npy and B.npy (headers only), CASEDIR/log/runs.tsv (one
line a run: tool, rep, wall seconds, peak RSS KiB, exit status; rep 0 is
the untimed warm-up) and CASEDIR/C_glmul.npy against CASEDIR/C_numpy.npy,
and prints the case's Markdown. Exit status 1 when a command failed or
glmul's C differs from NumPy's (or either is missing), else 0: a limit
missed is a FAIL in the table, not an exit status.
"""
import os
import statistics
import sys

import numpy as np

MiB = 1 << 20
# The limits ("glmul mul at disk speed"). MB is read as MiB.
RATIO_LIMITS = {"input_bound": ("numpy", 2.0), "output_bound": ("numpy", 1.2), "square8192": ("torch", 1.0)}
RSS_ABC = {"input_bound", "output_bound"}  # peak RSS ≤ 1.3×(A+B+C) + 64 MiB
RSS_ABS = {"tall_a": 512, "thin_big_c": 512}  # peak RSS ≤ this many MiB
RTOL = 1e-4
CHUNK_BYTES = 64 * MiB


def size(nbytes):
    if nbytes >= MiB:
        return f"{nbytes / MiB:.1f} MiB"
    return f"{nbytes / 1024:.1f} KiB"


def describe(name, shape, dtype, fortran):
    n = shape[0] * shape[1] * dtype.itemsize
    order = ", Fortran order" if fortran else ""
    return f"{name} {shape[0]}×{shape[1]} {dtype.name}{order} ({size(n)})", n


def read_runs(path):
    runs = {}
    with open(path) as f:
        for line in f:
            tool, rep, wall, rss, code = line.split("\t")
            runs.setdefault(tool, []).append((int(rep), float(wall), int(rss), int(code)))
    return runs


def compare(cg, cn):
    """Whether glmul's C (cg) equals NumPy's (cn): np.allclose with rtol
    1e-4 and atol 1e-4·max|C|, read through maps in blocks of rows."""
    if not os.path.exists(cg) or not os.path.exists(cn):
        missing = " and ".join(os.path.basename(p) for p in (cg, cn) if not os.path.exists(p))
        return False, f"{missing} missing"
    g, n = np.load(cg, mmap_mode="r"), np.load(cn, mmap_mode="r")
    if g.shape != n.shape:
        return False, f"shapes differ: glmul {g.shape}, numpy {n.shape}"
    rows = max(1, CHUNK_BYTES // max(1, n.shape[1] * 4))
    cmax = 0.0
    for i in range(0, n.shape[0], rows):
        cmax = max(cmax, float(np.max(np.abs(n[i:i + rows]), initial=0.0)))
    atol, ok, dmax = RTOL * cmax, True, 0.0
    for i in range(0, n.shape[0], rows):
        gi, ni = np.asarray(g[i:i + rows], dtype=np.float32), np.asarray(n[i:i + rows], dtype=np.float32)
        ok = ok and np.allclose(gi, ni, rtol=RTOL, atol=atol)
        with np.errstate(invalid="ignore"):
            dmax = max(dmax, float(np.nanmax(np.abs(gi - ni), initial=0.0)))
    rel = f" = {dmax / cmax:.1e}·max abs C" if cmax else ""
    return ok, f"max abs diff {dmax:.2e}{rel}"


def tail(path, lines=3):
    try:
        with open(path, errors="replace") as f:
            return [l.rstrip() for l in f.readlines()[-lines:]]
    except OSError:
        return []


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__.strip().split("\n\n")[1])
    casedir, case, tools = sys.argv[1], sys.argv[2], sys.argv[3:]
    a = np.load(os.path.join(casedir, "A.npy"), mmap_mode="r")
    b = np.load(os.path.join(casedir, "B.npy"), mmap_mode="r")
    fortran = lambda x: x.flags.f_contiguous and not x.flags.c_contiguous
    da, na = describe("A", a.shape, a.dtype, fortran(a))
    db, nb = describe("B", b.shape, b.dtype, fortran(b))
    dc, nc = describe("C", (a.shape[0], b.shape[1]), np.dtype("<f4"), False)
    runs = read_runs(os.path.join(casedir, "log", "runs.tsv"))
    reps = max((r[0] for rs in runs.values() for r in rs), default=0)

    print(f"### {case}\n")
    print(f"{da}, {db}, {dc}; A+B+C {size(na + nb + nc)}. "
          f"{reps} timed run(s) of each, after one untimed warm-up run of each.\n")
    print("| command | min wall s | median wall s | peak RSS MiB | runs |")
    print("|---|--:|--:|--:|---|")
    status, stats, failed = 0, {}, {}
    for tool in ("glmul", "numpy", "torch"):
        rs = runs.get(tool)
        if tool not in tools or not rs:
            print(f"| {tool} | — | — | — | not run (no PyTorch with CUDA) |")
            continue
        bad = [r for r in rs if r[3] != 0]
        timed = [r for r in rs if r[0] > 0 and r[3] == 0]
        if bad:
            status, failed[tool] = 1, bad
            note = "FAIL: " + ", ".join(f"exit {r[3]} ({'warm-up' if r[0] == 0 else f'run {r[0]}'})" for r in bad)
        else:
            note = "ok"
        if timed:
            walls = [r[1] for r in timed]
            stats[tool] = (min(walls), statistics.median(walls), max(r[2] for r in timed) / 1024)
            print(f"| {tool} | {stats[tool][0]:.3f} | {stats[tool][1]:.3f} | {stats[tool][2]:.1f} | {note} |")
        else:
            print(f"| {tool} | — | — | — | {note} |")

    print("\n| check | measured | limit | result |")
    print("|---|--:|---|---|")
    limit_fails = 0
    for peer in ("numpy", "torch"):
        lim = RATIO_LIMITS.get(case)
        lim = lim[1] if lim and lim[0] == peer else None
        limtxt = "—" if lim is None else f"≤ {lim:.1f}×"
        if "glmul" in stats and peer in stats and "glmul" not in failed and peer not in failed:
            ratio = stats["glmul"][0] / stats[peer][0]
            result = "—" if lim is None else ("PASS" if ratio <= lim else "FAIL")
            measured = f"{ratio:.2f}×"
        else:
            measured = "—"
            result = "—" if lim is None else ("SKIP (no PyTorch with CUDA)" if peer not in tools else "FAIL (a command failed)")
        limit_fails += result.startswith("FAIL")
        print(f"| glmul / {peer}, min wall | {measured} | {limtxt} | {result} |")
    if case in RSS_ABC or case in RSS_ABS:
        if case in RSS_ABC:
            bound = 1.3 * (na + nb + nc) / MiB + 64
            limtxt = f"≤ 1.3×(A+B+C) + 64 MiB = {bound:.1f} MiB"
        else:
            bound = RSS_ABS[case]
            limtxt = f"≤ {bound} MiB"
        if "glmul" in stats and "glmul" not in failed:
            rss = stats["glmul"][2]
            measured, result = f"{rss:.1f} MiB", ("PASS" if rss <= bound else "FAIL")
        else:
            measured, result = "—", "FAIL (glmul failed)"
        limit_fails += result.startswith("FAIL")
        print(f"| glmul peak RSS | {measured} | {limtxt} | {result} |")
    ok, detail = compare(os.path.join(casedir, "C_glmul.npy"), os.path.join(casedir, "C_numpy.npy"))
    if not ok:
        status = 1
    print(f"| glmul's C = NumPy's C | {detail} | allclose, rtol 1e-4, atol 1e-4·max abs C | {'PASS' if ok else 'FAIL'} |")

    for tool, bad in failed.items():
        rep = bad[0][0]
        log = os.path.join(casedir, "log", f"{tool}.{rep}.err")
        lines = tail(log)
        print(f"\n{tool} {'warm-up' if rep == 0 else f'run {rep}'} exited {bad[0][3]}; the end of {log}:\n")
        print("```\n" + "\n".join(lines or ["(empty)"]) + "\n```")
    print()
    # one line for run.sh's summary: commands and C all right?, limits missed
    with open(os.path.join(casedir, "log", "summary.tsv"), "w") as f:
        f.write(f"{case}\t{'FAIL' if status else 'ok'}\t{limit_fails}\n")
    sys.exit(status)


if __name__ == "__main__":
    main()
