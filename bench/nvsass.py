#!/usr/bin/env python3
"""NVIDIA's machine code (SASS) for a GL compute shader, and its K loop in numbers.

GL gives no SASS, but NVIDIA's shader disk cache keeps it: each compiled
program is a zstd frame holding an "NVuc" container that nvdisasm reads as a
raw binary. Three steps (the first and third on the GPU machine, where the
driver and CUDA's nvdisasm are; the middle one here, where zstd is).
.device/ is the device recipe's folder (../shared/device/prepare.sh makes
it, with on-device.sh; build atprobe into it: go build -o .device/atprobe
./glcompute/internal/atprobe):

    # on the GPU machine: compile the kernel into an empty cache directory
    mkdir -p /tmp/glc
    __GL_SHADER_DISK_CACHE_PATH=/tmp/glc __GL_SHADER_DISK_CACHE_SKIP_CLEANUP=1 \\
        REPS=1 bash .device/on-device.sh .device/atprobe 256 nat:256x128x16_16x8_db_at
    cp $(find /tmp/glc -name '*.bin') $OUT/k.bin

    # here: the NVuc containers out of the cache file (apt-get install zstd)
    bench/nvsass.py extract k.bin .device/sass/k      # writes .device/sass/k.0.nvuc, ...

    # on the GPU machine
    /usr/local/cuda/bin/nvdisasm -b SM90 -hex .device/sass/k.0.nvuc > $OUT/k.sass

    # here: registers, and per loop the instruction mix and the stall cycles
    # the compiler scheduled (control bits of each instruction)
    bench/nvsass.py stats k.sass

docs/PERFORMANCE.md ("Bounds checks out of the K loop") shows what it found.
"""
import collections
import re
import shutil
import subprocess
import sys

ZSTD_MAGIC = bytes.fromhex("28b52ffd")


def extract(cache_file, prefix):
    data = open(cache_file, "rb").read()
    starts = [m.start() for m in re.finditer(re.escape(ZSTD_MAGIC), data)]
    if not starts:
        sys.exit(f"nvsass: no zstd frame in {cache_file}: not an NVIDIA GL shader cache file?")
    if shutil.which("zstd") is None:
        sys.exit("nvsass: needs the zstd command (apt-get install zstd)")
    n = 0
    for s in starts:
        # Up to the next frame: zstd may complain of what follows its frame
        # (the cache's own records) yet writes the frame's content.
        end = next((e for e in starts if e > s), len(data))
        r = subprocess.run(["zstd", "-q", "-d", "-c"], input=data[s:end], capture_output=True)
        if r.returncode != 0 and not r.stdout:
            continue
        if not r.stdout.startswith(b"NVuc"):
            continue
        out = f"{prefix}.{n}.nvuc"
        open(out, "wb").write(r.stdout)
        print(f"{out}: {len(r.stdout)} bytes (frame at {s} of {cache_file})")
        n += 1
    if n == 0:
        sys.exit(f"nvsass: no NVuc container in the zstd frames of {cache_file}")


def parse(sass_file):
    """Instructions of nvdisasm -hex output with the control bits of each."""
    lines = open(sass_file).read().split("\n")
    ins = []
    for i, line in enumerate(lines):
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?);\s*/\* (0x[0-9a-f]+) \*/", line)
        if not m or i + 1 >= len(lines):
            continue
        m2 = re.search(r"/\* (0x[0-9a-f]+) \*/", lines[i + 1])
        if not m2:
            continue
        hi = int(m2.group(1), 16)
        ins.append({
            "addr": int(m.group(1), 16), "text": m.group(2).strip(),
            # Volta and later: bits 41-44 of the high word are the stall
            # cycles, 52-57 the barriers waited on, 58-61 the reuse flags.
            "stall": (hi >> 41) & 0xF, "wait": (hi >> 52) & 0x3F, "reuse": (hi >> 58) & 0xF,
        })
    return ins


def opcode(text):
    text = re.sub(r"^@!?U?P[T0-9]+\s+", "", text)
    return text.split()[0].split(".")[0]


def stats(sass_file):
    text = open(sass_file).read()
    m = re.search(r"Register count=(\d+)", text)
    local = len(re.findall(r"\b(LDL|STL)\b", text))
    print(f"{sass_file}: registers {m.group(1) if m else '?'}; local memory (LDL/STL): {local} instructions")
    ins = parse(sass_file)
    for x in ins:
        b = re.search(r"\bBRA (0x[0-9a-f]+)", x["text"])
        if not b or int(b.group(1), 16) >= x["addr"]:
            continue
        lo, hi = int(b.group(1), 16), x["addr"]
        body = [y for y in ins if lo <= y["addr"] <= hi]
        ops = collections.Counter(opcode(y["text"]) for y in body)
        first = next((k for k, y in enumerate(body) if opcode(y["text"]) == "FFMA"), len(body))
        head = body[:first]
        print(f"loop {lo:#x}-{hi:#x}: {len(body)} instructions, {sum(y['stall'] for y in body)} stall cycles; "
              f"before its first FFMA {len(head)} instructions, {sum(y['stall'] for y in head)} stall cycles")
        print("   ", ", ".join(f"{k} {v}" for k, v in ops.most_common(16)))


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "extract":
        extract(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 3 and sys.argv[1] == "stats":
        stats(sys.argv[2])
    else:
        sys.exit("usage: bench/nvsass.py extract CACHE.bin PREFIX | stats FILE.sass (see the top of this file)")


if __name__ == "__main__":
    main()
