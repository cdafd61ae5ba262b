#!/usr/bin/env python3
"""bench/multigpu/run.sh's report: glmul on one GPU and on a group, and
cuBLASXt, as Markdown tables with the acceptance ratios.

usage: bench/multigpu/report.py DIR

Reads from DIR (what run.sh wrote; Python's standard library only, so it
runs anywhere on the files brought back):
  glmul-N-single.json        glmul -n N -format json (the single-device path)
  glmul-N-devices-L.json     glmul -n N -devices L -format json (L: 1, 1-2, ..., all)
  cublasxt-N-PIN.jsonl       cublasxt.py's lines (PIN: enabled, registered, disabled)
  commands.tsv, env.txt      run.sh's record of the commands and the machine

The ratios: group on all GPUs against the single path on one GPU, end to
end (target ≥ 1.85× at N = 32768, ≥ 1.7× at 16384), and against cuBLASXt
on all GPUs (target ≥ 6×, every N); a target missed is a FAIL in the table,
not an exit status. A run that is absent or unreadable is marked so.

Exit status 1 when any glmul validation is not ok (or skipped) or any
cuBLASXt line failed its check or its call; else 0 (2: usage).
"""
import json
import os
import re
import sys

TARGET_SPEEDUP = {16384: 1.7, 32768: 1.85}  # group on all ÷ single path, end to end
TARGET_VS_XT = 6.0  # group on all ÷ cuBLASXt on all, every N
PRIMARY_PIN = "enabled"


def load_json(path):
    """(object, None), or (None, why) for a file absent, empty or not JSON."""
    if not os.path.exists(path):
        return None, "missing"
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        return None, f"unreadable ({e.strerror})"
    if not text.strip():
        return None, "no output"
    try:
        return json.loads(text), None
    except ValueError as e:
        return None, f"not JSON ({e})"


def load_commands(d):
    """commands.tsv: {name: (exit, seconds, command)}."""
    out = {}
    try:
        with open(os.path.join(d, "commands.tsv")) as f:
            for line in f:
                parts = line.rstrip("\n").split("\t")
                if len(parts) >= 4:
                    out[parts[0]] = (parts[1], parts[2], parts[3])
    except OSError:
        pass
    return out


def why_missing(cmds, name, base):
    """base ("missing", "no output", ...) with the command's fate where commands.tsv has it."""
    c = cmds.get(name)
    if not c:  # not in commands.tsv: not run, if there is a commands.tsv
        return base + " (not run)" if base == "missing" and cmds else base
    code = c[0]
    if code in ("124", "137"):
        return f"{base}: killed at the time limit after {c[1]} s"
    if code != "0":
        return f"{base}: exit {code} after {c[1]} s"
    return base


def num(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and x == x and abs(x) != float("inf")


def read_single(path):
    j, why = load_json(path)
    if j is None:
        return None, why
    try:
        m, k, n = j["m"], j["k"], j["n"]
        s = j.get("summary", {}) or {}
        if num(s.get("end_to_end_ms")) and s["end_to_end_ms"] > 0:
            sec = s["end_to_end_ms"] / 1e3
        else:
            sec = j["timings"]["end_to_end_ns"] / 1e9
        v = j.get("validation", {}) or {}
        dev = j.get("device", {}) or {}
        return {"m": m, "k": k, "n": n, "s": sec, "tflops": 2.0 * m * k * n / sec / 1e12 if sec > 0 else None,
                "ok": v.get("ok") is True and v.get("mode") != "none", "validation": v,
                "renderer": dev.get("renderer", "?"), "kernel": j.get("kernel", "?")}, None
    except (KeyError, TypeError, ZeroDivisionError) as e:
        return None, f"unexpected JSON ({type(e).__name__}: {e})"


def read_group(path):
    j, why = load_json(path)
    if j is None:
        return None, why
    try:
        m, k, n = j["m"], j["k"], j["n"]
        sec = j["end_to_end_ns"] / 1e9
        v = j.get("validation", {}) or {}
        devs = j.get("devices") or []
        return {"m": m, "k": k, "n": n, "s": sec, "tflops": 2.0 * m * k * n / sec / 1e12 if sec > 0 else None,
                "runs": [r / 1e9 for r in j.get("runs_ns") or []], "panels": j.get("panels"), "panel_cols": j.get("panel_cols"),
                "ok": v.get("ok") is True and v.get("mode") != "none", "validation": v, "devices": devs}, None
    except (KeyError, TypeError, ZeroDivisionError) as e:
        return None, f"unexpected JSON ({type(e).__name__}: {e})"


def read_xt(path):
    """cublasxt.py's lines; a line that is not JSON becomes a failed record."""
    recs = []
    with open(path) as f:
        for i, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                r = json.loads(line)
                if not isinstance(r, dict):
                    raise ValueError("not an object")
            except ValueError as e:
                r = {"ok": False, "error": f"{os.path.basename(path)} line {i} is not JSON ({e})"}
            recs.append(r)
    return recs


def f3(x):
    return f"{x:.4f}" if num(x) else "—"


def f1(x):
    return f"{x:.1f}" if num(x) else "—"


def ratio_cell(r, target, why=None):
    """(measured, target, result) cells; why: the reason there is no valid
    ratio (a run missing, or one whose check failed)."""
    tcell = f"≥ {target:.2f}×" if target else "—"
    if r is None:
        return "—", tcell, (why or "missing") if target else "—"
    if why:  # measured, but from a run that did not validate: no verdict
        return f"{r:.2f}×", tcell, why
    return f"{r:.2f}×", tcell, (("PASS" if r >= target else "FAIL") if target else "—")


def main(argv):
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    d = argv[1]
    if not os.path.isdir(d):
        print(f"report.py: {d}: not a directory", file=sys.stderr)
        return 2
    cmds = load_commands(d)
    files = sorted(os.listdir(d))

    sizes = set()
    singles, groups, xts = {}, {}, {}  # n -> ..., n -> {label: ...}, n -> [records]
    notes = {}  # (kind, n, label) -> why missing
    for name in files:
        mo = re.fullmatch(r"glmul-(\d+)-single\.json", name)
        if mo:
            sizes.add(int(mo.group(1)))
            continue
        mo = re.fullmatch(r"glmul-(\d+)-devices-(all|\d+(?:-\d+)*)\.json", name)
        if mo:
            sizes.add(int(mo.group(1)))
            groups.setdefault(int(mo.group(1)), {})[mo.group(2)] = None
            continue
        mo = re.fullmatch(r"cublasxt-(\d+)(?:-([a-z]+))?\.jsonl", name)
        if mo:
            n = int(mo.group(1))
            sizes.add(n)
            for r in read_xt(os.path.join(d, name)):
                r.setdefault("pin", mo.group(2) or "?")
                xts.setdefault(n, []).append(r)
    for name in cmds:  # runs that left no file
        mo = re.fullmatch(r"(?:glmul|cublasxt) (\d+) .*", name)
        if mo:
            sizes.add(int(mo.group(1)))
    if not sizes:
        print(f"report.py: {d}: no glmul-N-*.json or cublasxt-N-*.jsonl files", file=sys.stderr)
        return 1
    sizes = sorted(sizes)

    for n in sizes:
        singles[n], why = read_single(os.path.join(d, f"glmul-{n}-single.json"))
        if why:
            notes[("single", n)] = why_missing(cmds, f"glmul {n} single", why)
        labels = set(groups.get(n, {})) | {"1", "all"}
        for name in cmds:
            mo = re.fullmatch(rf"glmul {n} devices (\S+)", name)
            if mo:
                labels.add(mo.group(1).replace(",", "-"))
        groups[n] = {}
        for lab in labels:
            g, why = read_group(os.path.join(d, f"glmul-{n}-devices-{lab}.json"))
            groups[n][lab] = g
            if why:
                notes[("group", n, lab)] = why_missing(cmds, f"glmul {n} devices {lab.replace('-', ',')}", why)

    failures = []
    out = []
    p = out.append

    # --- header ---------------------------------------------------------
    p("# glmul on several GPUs against cuBLASXt, host memory to host memory\n")
    try:
        with open(os.path.join(d, "env.txt")) as f:
            env = f.read().split("\n\n")
        p("\n".join("- " + line for line in env[0].splitlines() if line.strip()))
        for block in env[1:]:
            if "name,driver_version" in block:
                p("\n```\n" + block.strip() + "\n```")
    except OSError:
        p("- env.txt missing: the machine was not recorded")
    p("")
    p("End to end: A and B in host memory to C in host memory, float32, N×N·N×N; TFLOPS = 2N³ / s / 10¹². "
      "glmul's single path (`glmul -n N`, one GPU): its pipelined pass after the timed kernel runs; the group "
      "(`glmul -n N -devices L`): the median of its timed runs; cuBLASXt (`cublasXtSgemm` from host memory, "
      "TF32 off): the median of its timed calls after one warm-up, pinning as its pin column says "
      f"(the main table: `{PRIMARY_PIN}` where run). Every glmul product was validated by glmul on the CPU in "
      "float64; every cuBLASXt result was checked (all of C finite, sampled rows against a float64 product).\n")

    # --- main table -------------------------------------------------------
    def xt_pick(n):
        recs = xts.get(n, [])
        pins = [r.get("pin") for r in recs]
        pin = PRIMARY_PIN if PRIMARY_PIN in pins else (pins[0] if pins else None)
        recs = [r for r in recs if r.get("pin") == pin]
        one = [r for r in recs if isinstance(r.get("gpus"), list) and len(r["gpus"]) == 1]
        one.sort(key=lambda r: r["gpus"] != [0])
        alls = [r for r in recs if r.get("gpu_set") == "all"] or \
               sorted((r for r in recs if isinstance(r.get("gpus"), list)), key=lambda r: -len(r["gpus"]))
        return (one[0] if one else None), (alls[0] if alls else None)

    def xt_cells(r, n, pin_hint):
        if r is None:
            return [why_missing(cmds, f"cublasxt {n} {pin_hint}", "missing"), "—"]
        if r.get("error"):
            return ["error", "—"]
        s = r.get("median_s")
        cell = f3(s) + ("" if r.get("ok") else " (check FAILED)")
        return [cell, f1(r.get("tflops"))]

    def g_cells(g, why):
        if g is None:
            return [why or "missing", "—"]
        return [f3(g["s"]) + ("" if g["ok"] else " (validation FAILED)"), f1(g["tflops"])]

    def shares(g):
        if g is None:
            return "—"
        parts = []
        for dv in g["devices"]:
            sh = dv.get("share")
            parts.append(f"{dv.get('index', '?')}: {100 * sh:.0f}%" if num(sh) else f"{dv.get('index', '?')}: ?")
        return ", ".join(parts) or "—"

    gall_n = {n: len(groups[n]["all"]["devices"]) for n in sizes if groups[n].get("all")}
    G = max(gall_n.values()) if gall_n else None
    xall_n = [len(xt_pick(n)[1]["gpus"]) for n in sizes if xt_pick(n)[1] and isinstance(xt_pick(n)[1].get("gpus"), list)]
    XG = max(xall_n) if xall_n else None
    p("| N | glmul 1 GPU, single path: s | TFLOPS | group on 1 GPU: s | TFLOPS | "
      f"group on all{f' ({G})' if G else ''}: s | TFLOPS | shares of the flops | "
      f"cuBLASXt 1 GPU: s | TFLOPS | cuBLASXt all{f' ({XG})' if XG else ''}: s | TFLOPS |")
    p("|--:|--:|--:|--:|--:|--:|--:|---|--:|--:|--:|--:|")
    for n in sizes:
        s = singles[n]
        sc = [notes.get(("single", n), "missing"), "—"] if s is None else \
            [f3(s["s"]) + ("" if s["ok"] else " (validation FAILED)"), f1(s["tflops"])]
        x1, xa = xt_pick(n)
        pin = (x1 or xa or {}).get("pin", PRIMARY_PIN)
        row = [str(n)] + sc + g_cells(groups[n].get("1"), notes.get(("group", n, "1"))) + \
            g_cells(groups[n].get("all"), notes.get(("group", n, "all"))) + [shares(groups[n].get("all"))] + \
            xt_cells(x1, n, pin) + xt_cells(xa, n, pin)
        p("| " + " | ".join(row) + " |")
    p("")

    # --- ratios -------------------------------------------------------------
    p("## The acceptance ratios\n")
    p("Speedup: the single path's end-to-end time over the group's on all GPUs. Against cuBLASXt: cuBLASXt's "
      "time on all GPUs over the group's on all GPUs. Group on 1 ÷ single path: the group path's cost on one "
      "GPU (above 1: the group path is faster). Scaling: the group on 1 GPU over the group on all, per GPU.\n")
    p("| N | group all ÷ single path | target | result | group all ÷ cuBLASXt all | target | result | "
      "group on 1 ÷ single path | scaling per GPU |")
    p("|--:|--:|--:|---|--:|--:|---|--:|--:|")
    for n in sizes:
        s, g1, ga = singles[n], groups[n].get("1"), groups[n].get("all")
        xa = xt_pick(n)[1]
        sp = s["s"] / ga["s"] if s and ga and ga["s"] > 0 else None
        vx = xa["median_s"] / ga["s"] if xa and ga and num(xa.get("median_s")) and not xa.get("error") and ga["s"] > 0 else None
        bad_g = "INVALID: glmul's validation failed" if (s and not s["ok"]) or (ga and not ga["ok"]) else None
        if xa and xa.get("error"):
            bad_x = "cuBLASXt error"
        elif xa and not xa.get("ok"):
            bad_x = "INVALID: cuBLASXt's check failed"
        elif ga and not ga["ok"]:
            bad_x = "INVALID: glmul's validation failed"
        else:
            bad_x = None
        c1 = ratio_cell(sp, TARGET_SPEEDUP.get(n), bad_g)
        c2 = ratio_cell(vx, TARGET_VS_XT, bad_x)
        g1s = f"{s['s'] / g1['s']:.2f}×" if s and g1 and g1["s"] > 0 else "—"
        scal = f"{g1['s'] / ga['s'] / len(ga['devices']):.2f}" if g1 and ga and ga["s"] > 0 and ga["devices"] else "—"
        p(f"| {n} | " + " | ".join(c1) + " | " + " | ".join(c2) + f" | {g1s} | {scal} |")
    p("")

    # --- scaling over prefixes -----------------------------------------------
    def lab_key(lab):
        return (lab == "all", len(lab.split("-")))

    if any(len([lab for lab in groups[n] if groups[n][lab]]) > 2 for n in sizes):
        p("## The group on 1, 2, ... GPUs\n")
        p("| N | -devices | GPUs | s | TFLOPS | ÷ single path | ÷ group on 1 |")
        p("|--:|---|--:|--:|--:|--:|--:|")
        for n in sizes:
            base1 = groups[n].get("1")
            for lab in sorted(groups[n], key=lab_key):
                g = groups[n][lab]
                if g is None:
                    p(f"| {n} | {lab.replace('-', ',')} | — | {notes.get(('group', n, lab), 'missing')} | — | — | — |")
                    continue
                sp = f"{singles[n]['s'] / g['s']:.2f}×" if singles[n] and g["s"] > 0 else "—"
                s1 = f"{base1['s'] / g['s']:.2f}×" if base1 and g["s"] > 0 else "—"
                p(f"| {n} | {lab.replace('-', ',')} | {len(g['devices'])} | {f3(g['s'])} | {f1(g['tflops'])} | {sp} | {s1} |")
        p("")

    # --- devices of the group runs ------------------------------------------------
    p("## The group runs, device by device (the last timed run)\n")
    p("| N | -devices | device | renderer | kernel | panels | reruns | share | busy s | TFLOPS | error |")
    p("|--:|---|--:|---|---|--:|--:|--:|--:|--:|---|")
    any_dev = False
    for n in sizes:
        for lab in sorted(groups[n], key=lab_key):
            g = groups[n][lab]
            if not g:
                continue
            for dv in g["devices"]:
                any_dev = True
                busy = dv.get("busy_ns", dv.get("end_to_end_ns"))  # the key before 2026-11-29
                gf = dv.get("gflops")
                sh = dv.get("share")
                p(f"| {n} | {lab.replace('-', ',')} | {dv.get('index', '?')} | {dv.get('renderer', '?')} | "
                  f"{dv.get('kernel', '?')} | {dv.get('panels', '?')} | {dv.get('reruns', 0)} | "
                  f"{f'{100 * sh:.1f}%' if num(sh) else '—'} | {f3(busy / 1e9) if num(busy) else '—'} | "
                  f"{f1(gf / 1e3) if num(gf) else '—'} | {dv.get('error') or ''} |")
    if not any_dev:
        p("| — | no group run read | | | | | | | | | |")
    p("")

    # --- cuBLASXt -----------------------------------------------------------
    p("## cuBLASXt calls\n")
    p("| N | GPUs | pin | block dim | median s | runs s (min–max) | TFLOPS | rel. Frobenius error | rows | non-finite | check |")
    p("|--:|---|---|--:|--:|---|--:|--:|--:|--:|---|")
    any_xt = False
    for n in sizes:
        for r in xts.get(n, []):
            any_xt = True
            gpus = r.get("gpus")
            gl = ",".join(map(str, gpus)) if isinstance(gpus, list) else r.get("gpu_set", "?")
            runs = r.get("runs_s") or []
            rr = f"{min(runs):.4f}–{max(runs):.4f}" if runs and all(num(x) for x in runs) else "—"
            if r.get("error"):
                chk = "ERROR: " + str(r["error"])[:120]
            else:
                chk = "ok" if r.get("ok") else "FAILED"
            err = r.get("rel_frobenius")
            p(f"| {n} | {gl} | {r.get('pin', '?')} | {r.get('block_dim', '—')} | {f3(r.get('median_s'))} | {rr} | "
              f"{f1(r.get('tflops'))} | {f'{err:.2e}' if num(err) else '—'} | {r.get('rows_checked', '—')} | "
              f"{r.get('nonfinite', '—')} | {chk} |")
            if not r.get("ok"):
                failures.append(f"cuBLASXt N={n} GPUs {gl} pin {r.get('pin')}: " + (f"error: {r['error']}" if r.get("error") else
                                f"check failed (rel. Frobenius error {err}, {r.get('nonfinite')} non-finite)"))
            if r.get("dry_run"):
                failures.append(f"cuBLASXt N={n} GPUs {gl}: a dry run (NumPy), not cuBLASXt")
    if not any_xt:
        p("| — | no cuBLASXt line read | | | | | | | | | |")
    p("")

    # --- validation -------------------------------------------------------------
    p("## glmul's validations\n")
    p("| N | run | mode | ok | worst ratio (≤ 1) |")
    p("|--:|---|---|---|--:|")
    for n in sizes:
        runs = [("single path", singles[n])] + [(f"-devices {lab.replace('-', ',')}", groups[n][lab])
                                                for lab in sorted(groups[n], key=lab_key)]
        for what, r in runs:
            if r is None:
                continue
            v = r["validation"]
            wr = v.get("worst_ratio")
            p(f"| {n} | {what} | {v.get('mode', '?')} | {'yes' if r['ok'] else '**NO**'} | "
              f"{f'{wr:.3g}' if num(wr) else ('non-finite' if v.get('nonfinite') else '—')} |")
            if not r["ok"]:
                failures.append(f"glmul N={n} {what}: validation " + ("skipped (mode none)" if v.get("mode") == "none" else "not ok") +
                                f" ({json.dumps(v)[:200]})")
    p("")

    # --- missing and commands -------------------------------------------------------
    miss = [f"N={k[1]} " + ("single path" if k[0] == "single" else f"-devices {k[2].replace('-', ',')}") + f": {v}"
            for k, v in sorted(notes.items(), key=lambda kv: (kv[0][1], str(kv[0])))]
    for n in sizes:
        x1, xa = xt_pick(n)
        if not xts.get(n):
            miss.append(f"N={n} cuBLASXt: no lines")
        elif x1 is None or xa is None:
            miss.append(f"N={n} cuBLASXt: " + ("no 1-GPU line" if x1 is None else "no all-GPU line"))
    if miss:
        p("## Missing runs\n")
        p("\n".join(f"- {m}" for m in miss))
        p("")
    if cmds:
        p("## Commands\n")
        p("| step | exit | s | command |")
        p("|---|--:|--:|---|")
        for name, (code, secs, cmd) in cmds.items():
            p(f"| {name} | {code} | {secs} | `{cmd.strip()}` |")
        p("")

    if failures:
        p("## FAILED checks\n")
        p("\n".join(f"- {f}" for f in failures))
        p("")
    print("\n".join(out))
    for f in failures:
        print(f"report.py: FAIL: {f}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
