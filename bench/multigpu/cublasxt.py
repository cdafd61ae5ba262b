#!/usr/bin/env python3
"""cuBLASXt fp32 GEMM, host memory to host memory, on one or several GPUs.

cuBLASXt (cublasXtSgemm) takes A, B and C in host memory, tiles C over the
GPUs it is given and returns when C is back in host memory: the same
end-to-end product that `glmul -n N -devices ...` measures. It is called
through ctypes on the libcublas that ships with PyTorch's wheels
(site-packages/nvidia/*/lib/libcublas.so.*, found beside the torch package
without importing it; --libcublas names another).

Inputs are row-major NumPy float32 matrices, uniform on [-1, 1), seeded.
cuBLAS is column-major: the row-major C = A·B is the column-major
Cᵀ = Bᵀ·Aᵀ, so B's buffer goes in as the first operand and A's as the
second, with m and n swapped (xt_gemm_args). TF32 is off
(NVIDIA_TF32_OVERRIDE=0; the check below would also catch TF32's errors,
about 3e-4).

For each shape and each GPU set: one warm-up call, then --reps timed calls
(time.perf_counter around the whole, synchronous call; C is filled with NaN
before each, outside the timing), their median. Then the last C is checked:
every element finite (none left unwritten), and on --check-rows sampled
rows the relative Frobenius error against a float64 NumPy product below
--tol (1e-4). A broken binding cannot report fast garbage.

Pinning (--pin): enabled (default) sets CUBLASXT_PINNING_ENABLED, so
cuBLASXt pins A, B and C itself in each call (cudaHostRegister) and unpins
them after: that cost is in the time, as it is in a program that calls it
on its own arrays. registered pins them once with cudaHostRegister before
the timing (cuBLASXt's best case); disabled leaves them pageable.

Prints one JSON line per shape and GPU set on stdout:
  {"gpus": [0, 1], "gpu_set": "all", "m", "k", "n", "median_s", "tflops",
   "ok", "runs_s", "warmup_s", "block_dim", "pin", "rel_frobenius", ...}
and, where one failed, {"gpus", "gpu_set", "m", "k", "n", "ok": false,
"error"}. Exit status 0 when every line is ok, 1 otherwise, 2 for usage.

usage: cublasxt.py [--gpus LIST]... [--reps 5] [--block-dim B] [--pin MODE]
                   [--seed 1] [--libcublas PATH] SHAPE...
       cublasxt.py --dry-run [options] SHAPE...   (NumPy stands in for cuBLASXt)
       cublasxt.py --self-test                    (checks the operand swap)

  --gpus LIST   CUDA device ids, e.g. 0 or 0,1, or all (every CUDA device);
                repeat for several sets (default: --gpus 0 --gpus all)
  SHAPE         N (N×N times N×N) or MxKxN
"""
import argparse
import concurrent.futures
import ctypes
import glob
import importlib.util
import json
import os
import re
import statistics
import subprocess
import sys
import time

import numpy as np

CUBLAS_OP_N = 0
CUBLASXT_PINNING_DISABLED = 0
CUBLASXT_PINNING_ENABLED = 1
CUDA_HOST_REGISTER_DEFAULT = 0
DEFAULT_TOL = 1e-4
DEFAULT_CHECK_ROWS = 64
CHUNK_BYTES = 256 << 20
RNG_ROWS = 512  # rows of A or B a thread fills at a time

STATUS = {0: "CUBLAS_STATUS_SUCCESS", 1: "CUBLAS_STATUS_NOT_INITIALIZED", 3: "CUBLAS_STATUS_ALLOC_FAILED",
          7: "CUBLAS_STATUS_INVALID_VALUE", 8: "CUBLAS_STATUS_ARCH_MISMATCH", 11: "CUBLAS_STATUS_MAPPING_ERROR",
          13: "CUBLAS_STATUS_EXECUTION_FAILED", 14: "CUBLAS_STATUS_INTERNAL_ERROR", 15: "CUBLAS_STATUS_NOT_SUPPORTED",
          16: "CUBLAS_STATUS_LICENSE_ERROR"}


class XtError(RuntimeError):
    pass


def parse_shape(s):
    """'N' or 'MxKxN' to (m, k, n)."""
    try:
        dims = [int(x) for x in s.lower().split("x")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"shape {s!r}: want N or MxKxN")
    if len(dims) not in (1, 3) or any(d < 1 for d in dims):
        raise argparse.ArgumentTypeError(f"shape {s!r}: want N or MxKxN, each at least 1")
    return tuple(dims) if len(dims) == 3 else (dims[0],) * 3


def parse_gpus(s):
    """'all' or a comma-separated list of distinct CUDA device ids."""
    if s.strip() == "all":
        return "all"
    try:
        ids = [int(x) for x in s.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--gpus {s!r}: want all or CUDA device ids such as 0 or 0,1")
    if not ids or any(i < 0 for i in ids) or len(set(ids)) != len(ids):
        raise argparse.ArgumentTypeError(f"--gpus {s!r}: want all or distinct CUDA device ids from 0, such as 0,1")
    return ids


# --- row-major NumPy to column-major cuBLAS ------------------------------

def xt_gemm_args(a, b, c):
    """The column-major GEMM arguments that compute the row-major C = A·B.

    A row-major m×k buffer read column-major is Aᵀ (k×m, leading dimension
    k); likewise B is read as Bᵀ (n×k, ld n) and C as Cᵀ (n×m, ld n). So
    C = A·B is Cᵀ = Bᵀ·Aᵀ: first operand B's buffer, second A's, and the
    column-major shape (m', n', k') = (n, m, k)."""
    for name, x in (("A", a), ("B", b), ("C", c)):
        if x.dtype != np.float32 or x.ndim != 2 or not x.flags.c_contiguous:
            raise ValueError(f"{name} must be a C-contiguous 2-D float32 array")
    m, k = a.shape
    k2, n = b.shape
    if k2 != k or c.shape != (m, n):
        raise ValueError(f"shapes do not chain: A {a.shape}, B {b.shape}, C {c.shape}")
    return dict(transa=CUBLAS_OP_N, transb=CUBLAS_OP_N, m=n, n=m, k=k,
                A=b, lda=max(1, n), B=a, ldb=max(1, k), C=c, ldc=max(1, n))


def colmajor_view(flat, rows, cols, ld):
    """The rows×cols column-major matrix with leading dimension ld over flat."""
    isz = flat.itemsize
    return np.lib.stride_tricks.as_strided(flat, shape=(rows, cols), strides=(isz, ld * isz))


def emulate_sgemm(transa, transb, m, n, k, alpha, a_flat, lda, b_flat, ldb, beta, c_flat, ldc):
    """cublasSgemm's column-major semantics on flat float32 buffers, in NumPy
    (float64 sums): C = alpha·op(A)·op(B) + beta·C, C m×n, op(A) m×k."""
    if transa != CUBLAS_OP_N or transb != CUBLAS_OP_N:
        raise ValueError("emulate_sgemm: only CUBLAS_OP_N")
    if lda < max(1, m) or ldb < max(1, k) or ldc < max(1, m):
        raise XtError(STATUS[7] + f" (emulated: lda {lda} < m {m}, ldb {ldb} < k {k} or ldc {ldc} < m {m})")
    for flat, ld, cols, what in ((a_flat, lda, k, "A"), (b_flat, ldb, n, "B"), (c_flat, ldc, n, "C")):
        need = ld * (cols - 1) + (m if what != "B" else k)
        if flat.size < need:
            raise XtError(f"emulated: {what} would be read past its end ({need} elements, buffer {flat.size})")
    av = colmajor_view(a_flat, m, k, lda).astype(np.float64)
    bv = colmajor_view(b_flat, k, n, ldb).astype(np.float64)
    cv = colmajor_view(c_flat, m, n, ldc)
    out = alpha * (av @ bv)
    if beta != 0:  # BLAS: with beta 0, C is not read (it may hold NaN)
        out += beta * cv.astype(np.float64)
    cv[...] = out.astype(np.float32)


# --- the libraries ----------------------------------------------------------

def _version_key(path):
    m = re.search(r"\.so\.([0-9.]+)$", path)
    return tuple(int(x) for x in m.group(1).split(".") if x) if m else ()


def find_libcublas():
    """libcublas.so.* of the pip wheels beside the torch package (without
    importing torch): site-packages/nvidia/*/lib (cu13: nvidia/cu13/lib;
    cu12: nvidia/cublas/lib), then torch/lib."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.origin:
        raise XtError("no torch package found to locate libcublas beside; name it with --libcublas")
    torch_dir = os.path.dirname(spec.origin)
    site = os.path.dirname(torch_dir)
    found = []
    for pattern in (os.path.join(site, "nvidia", "*", "lib", "libcublas.so.*"), os.path.join(torch_dir, "lib", "libcublas.so.*")):
        found += [p for p in glob.glob(pattern) if re.search(r"/libcublas\.so\.[0-9.]+$", p)]
    if not found:
        raise XtError(f"no libcublas.so.* under {site}/nvidia/*/lib or {torch_dir}/lib; name it with --libcublas")
    return max(found, key=_version_key)


class Cudart:
    """The few CUDA runtime calls used here, from libcudart beside libcublas."""

    def __init__(self, libdir):
        paths = sorted((p for p in glob.glob(os.path.join(libdir, "libcudart.so*")) if re.search(r"libcudart\.so(\.[0-9.]+)?$", p)),
                       key=_version_key)
        if not paths:
            site = os.path.dirname(os.path.dirname(libdir))
            paths = sorted(glob.glob(os.path.join(site, "*", "lib", "libcudart.so.*")), key=_version_key)
        if not paths:
            raise XtError(f"no libcudart.so* in {libdir} or beside it")
        self.path = paths[-1]
        lib = ctypes.CDLL(self.path)
        lib.cudaGetDeviceCount.argtypes = [ctypes.POINTER(ctypes.c_int)]
        lib.cudaHostRegister.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint]
        lib.cudaHostUnregister.argtypes = [ctypes.c_void_p]
        lib.cudaGetErrorString.argtypes = [ctypes.c_int]
        lib.cudaGetErrorString.restype = ctypes.c_char_p
        lib.cudaRuntimeGetVersion.argtypes = [ctypes.POINTER(ctypes.c_int)]
        lib.cudaDriverGetVersion.argtypes = [ctypes.POINTER(ctypes.c_int)]
        for f in ("cudaGetDeviceCount", "cudaHostRegister", "cudaHostUnregister", "cudaRuntimeGetVersion", "cudaDriverGetVersion"):
            getattr(lib, f).restype = ctypes.c_int
        self.lib = lib

    def check(self, err, what):
        if err != 0:
            raise XtError(f"{what}: CUDA error {err} ({self.lib.cudaGetErrorString(err).decode(errors='replace')})")

    def device_count(self):
        n = ctypes.c_int(0)
        self.check(self.lib.cudaGetDeviceCount(ctypes.byref(n)), "cudaGetDeviceCount")
        return n.value

    def versions(self):
        rt, drv = ctypes.c_int(0), ctypes.c_int(0)
        self.lib.cudaRuntimeGetVersion(ctypes.byref(rt))
        self.lib.cudaDriverGetVersion(ctypes.byref(drv))
        return rt.value, drv.value

    def register(self, x):
        self.check(self.lib.cudaHostRegister(x.ctypes.data, x.nbytes, CUDA_HOST_REGISTER_DEFAULT), "cudaHostRegister")

    def unregister(self, x):
        self.check(self.lib.cudaHostUnregister(x.ctypes.data), "cudaHostUnregister")


class CublasXt:
    """cuBLASXt through ctypes: the handle's calls that this benchmark makes.
    m, n, k and the leading dimensions of cublasXtSgemm are size_t."""

    def __init__(self, path):
        self.path = path
        libdir = os.path.dirname(path)
        # libcublas needs libcublasLt of the same release; load it from the
        # same directory first in case the loader would not find it there.
        for lt in sorted(glob.glob(os.path.join(libdir, "libcublasLt.so.*")), key=_version_key)[-1:]:
            ctypes.CDLL(lt, mode=ctypes.RTLD_GLOBAL)
        lib = ctypes.CDLL(path)
        H, P = ctypes.c_void_p, ctypes.POINTER
        sig = {
            "cublasXtCreate": [P(H)],
            "cublasXtDestroy": [H],
            "cublasXtDeviceSelect": [H, ctypes.c_int, P(ctypes.c_int)],
            "cublasXtSetBlockDim": [H, ctypes.c_int],
            "cublasXtGetBlockDim": [H, P(ctypes.c_int)],
            "cublasXtSetPinningMemMode": [H, ctypes.c_int],
            "cublasXtSgemm": [H, ctypes.c_int, ctypes.c_int, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_size_t,
                              P(ctypes.c_float), ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t,
                              P(ctypes.c_float), ctypes.c_void_p, ctypes.c_size_t],
        }
        for name, args in sig.items():
            f = getattr(lib, name)
            f.argtypes, f.restype = args, ctypes.c_int
        self.lib = lib
        try:
            self.version = self._version()
        except (AttributeError, XtError):
            self.version = None

    def _version(self):
        f = self.lib.cublasGetProperty  # (libraryPropertyType, int*): MAJOR 0, MINOR 1, PATCH 2
        f.argtypes, f.restype = [ctypes.c_int, ctypes.POINTER(ctypes.c_int)], ctypes.c_int
        parts = []
        for t in range(3):
            v = ctypes.c_int(0)
            self.check(f(t, ctypes.byref(v)), "cublasGetProperty")
            parts.append(str(v.value))
        return ".".join(parts)

    @staticmethod
    def check(status, what):
        if status != 0:
            raise XtError(f"{what}: {STATUS.get(status, 'status')} ({status})")

    def create(self):
        h = ctypes.c_void_p()
        self.check(self.lib.cublasXtCreate(ctypes.byref(h)), "cublasXtCreate")
        return h

    def destroy(self, h):
        self.check(self.lib.cublasXtDestroy(h), "cublasXtDestroy")

    def device_select(self, h, ids):
        arr = (ctypes.c_int * len(ids))(*ids)
        self.check(self.lib.cublasXtDeviceSelect(h, len(ids), arr), f"cublasXtDeviceSelect({ids})")

    def set_block_dim(self, h, bd):
        self.check(self.lib.cublasXtSetBlockDim(h, bd), f"cublasXtSetBlockDim({bd})")

    def block_dim(self, h):
        v = ctypes.c_int(0)
        self.check(self.lib.cublasXtGetBlockDim(h, ctypes.byref(v)), "cublasXtGetBlockDim")
        return v.value

    def set_pinning(self, h, mode):
        self.check(self.lib.cublasXtSetPinningMemMode(h, mode), f"cublasXtSetPinningMemMode({mode})")

    def sgemm(self, h, a, b, c):
        """C = A·B for row-major float32 NumPy arrays (xt_gemm_args)."""
        g = xt_gemm_args(a, b, c)
        alpha, beta = ctypes.c_float(1.0), ctypes.c_float(0.0)
        self.check(self.lib.cublasXtSgemm(h, g["transa"], g["transb"], g["m"], g["n"], g["k"], ctypes.pointer(alpha),
                                          g["A"].ctypes.data, g["lda"], g["B"].ctypes.data, g["ldb"], ctypes.pointer(beta),
                                          g["C"].ctypes.data, g["ldc"]), "cublasXtSgemm")


class FakeXt:
    """--dry-run's stand-in for CublasXt: the same calls, the GEMM done by
    emulate_sgemm on the buffers the real call would be given (read back
    from their addresses), so the argument logic is exercised without a
    GPU. swap=False passes A and B unswapped, as a broken binding would."""

    path = "(dry run: NumPy emulation)"
    version = None

    def __init__(self, swap=True):
        self.swap = swap
        self.bd = 0

    def create(self):
        return object()

    def destroy(self, h):
        pass

    def device_select(self, h, ids):
        pass

    def set_block_dim(self, h, bd):
        self.bd = bd

    def block_dim(self, h):
        return self.bd

    def set_pinning(self, h, mode):
        pass

    @staticmethod
    def _flat(addr, count):
        return np.ctypeslib.as_array((ctypes.c_float * count).from_address(addr))

    def sgemm(self, h, a, b, c):
        g = xt_gemm_args(a, b, c)
        if not self.swap:  # the naive call: A first, m and n as NumPy has them
            g.update(A=a, lda=a.shape[1], B=b, ldb=b.shape[1], m=a.shape[0], n=b.shape[1])
        emulate_sgemm(g["transa"], g["transb"], g["m"], g["n"], g["k"], 1.0,
                      self._flat(g["A"].ctypes.data, g["A"].size), g["lda"],
                      self._flat(g["B"].ctypes.data, g["B"].size), g["ldb"], 0.0,
                      self._flat(g["C"].ctypes.data, g["C"].size), g["ldc"])


# --- inputs, check, timing ----------------------------------------------------

def make_inputs(m, k, n, seed):
    """A (m×k) and B (k×n) uniform on [-1, 1) in float32, and C (m×n).

    Blocks of rows are filled on threads (NumPy's generators release the
    GIL), each block from its own generator spawned from seed, so the
    inputs depend on the seed alone, not on the number of CPUs (one thread
    of the machine this was written on made a 32768² matrix in about 9 s)."""
    a = np.empty((m, k), dtype=np.float32)
    b = np.empty((k, n), dtype=np.float32)
    c = np.empty((m, n), dtype=np.float32)
    blocks = [(x, i, min(i + RNG_ROWS, x.shape[0])) for x in (a, b) for i in range(0, x.shape[0], RNG_ROWS)]
    seeds = np.random.SeedSequence(seed).spawn(len(blocks))

    def fill(job):
        (x, i, j), ss = job
        np.random.default_rng(ss).random(out=x[i:j], dtype=np.float32)
        x[i:j] *= 2
        x[i:j] -= 1

    with concurrent.futures.ThreadPoolExecutor(max_workers=min(32, os.cpu_count() or 1)) as ex:
        list(ex.map(fill, zip(blocks, seeds)))
    return a, b, c


def check(a, b, c, rows, tol, seed):
    """Whether C = A·B: every element of C finite, and the relative Frobenius
    error of `rows` sampled rows of C against a float64 product below tol."""
    m, k = a.shape
    n = b.shape[1]
    chunk = max(1, CHUNK_BYTES // max(1, n * 4))
    nonfinite = 0
    for i in range(0, m, chunk):
        nonfinite += int(c[i:i + chunk].size - np.count_nonzero(np.isfinite(c[i:i + chunk])))
    rng = np.random.default_rng(seed + 1)
    idx = np.sort(rng.choice(m, size=min(rows, m), replace=False))
    a_s = a[idx].astype(np.float64)
    ref = np.zeros((len(idx), n))
    kchunk = max(1, CHUNK_BYTES // max(1, n * 8))
    for k0 in range(0, k, kchunk):
        ref += a_s[:, k0:k0 + kchunk] @ b[k0:k0 + kchunk].astype(np.float64)
    got = c[idx].astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        den = float(np.linalg.norm(ref))
        err = float(np.linalg.norm(got - ref)) / den if den > 0 else float(np.linalg.norm(got))
    ok = nonfinite == 0 and bool(err < tol)  # NaN < tol is False
    return ok, err, nonfinite, len(idx)


def measure(xt, cudart, ids, label, a, b, c, args):
    """One GPU set on one shape: warm-up, timed calls, check. Returns the
    JSON line's dict."""
    m, k = a.shape
    n = b.shape[1]
    rec = {"gpus": ids, "gpu_set": label, "m": m, "k": k, "n": n}
    h = xt.create()
    try:
        xt.device_select(h, ids)
        if args.block_dim:
            xt.set_block_dim(h, args.block_dim)
        xt.set_pinning(h, CUBLASXT_PINNING_ENABLED if args.pin == "enabled" else CUBLASXT_PINNING_DISABLED)
        rec["block_dim"] = xt.block_dim(h)
        c.fill(np.nan)
        t0 = time.perf_counter()
        xt.sgemm(h, a, b, c)
        warm = time.perf_counter() - t0
        runs = []
        for _ in range(args.reps):
            c.fill(np.nan)  # outside the timing; a call that leaves C unwritten shows in the check
            t0 = time.perf_counter()
            xt.sgemm(h, a, b, c)
            runs.append(time.perf_counter() - t0)
    finally:
        xt.destroy(h)
    med = statistics.median(runs)
    ok, err, nonfinite, nrows = check(a, b, c, args.check_rows, args.tol, args.seed)
    rec.update(median_s=round(med, 6), tflops=round(2.0 * m * n * k / med / 1e12, 3), ok=ok,
               runs_s=[round(t, 6) for t in runs], warmup_s=round(warm, 6), reps=args.reps, pin=args.pin,
               rel_frobenius=err if np.isfinite(err) else None,  # JSON has no NaN
               rows_checked=nrows, nonfinite=nonfinite, tol=args.tol, seed=args.seed,
               library=xt.path, cublas_version=xt.version, tf32_override=os.environ.get("NVIDIA_TF32_OVERRIDE"),
               dry_run=bool(args.dry_run))
    if cudart is not None:
        rec["cuda_runtime"], rec["cuda_driver"] = cudart.versions()
    return rec


def emit(rec):
    print(json.dumps(rec), flush=True)


def self_test():
    """The operand swap against NumPy, on shapes where m, k and n differ,
    and that the check rejects the unswapped call. Exit status 0 if all hold."""
    failures = 0
    rng = np.random.default_rng(7)
    for m, k, n in ((1, 1, 1), (3, 5, 7), (7, 5, 3), (64, 33, 17), (17, 64, 33), (128, 128, 128), (1, 300, 2)):
        a = (rng.random((m, k), dtype=np.float32) * 2 - 1)
        b = (rng.random((k, n), dtype=np.float32) * 2 - 1)
        want = a.astype(np.float64) @ b.astype(np.float64)
        for swap in (True, False):
            c = np.full((m, n), np.nan, dtype=np.float32)
            try:
                FakeXt(swap=swap).sgemm(None, a, b, c)
                err = float(np.linalg.norm(c - want) / np.linalg.norm(want))
                ok_chk = check(a, b, c, DEFAULT_CHECK_ROWS, DEFAULT_TOL, 1)[0]
            except XtError as e:
                err, ok_chk = float("inf"), False
                note = str(e)
            else:
                note = ""
            good = err < DEFAULT_TOL
            # swapped: exact up to float32 rounding; unswapped: wrong (or
            # refused for bad leading dimensions) and the check must say so,
            # except where A·B = (Bᵀ·Aᵀ)ᵀ coincides with the naive reading
            # (1×1×1, or shapes where both are the same buffer layout).
            expect = swap or (m == k == n == 1)
            status = "ok" if (good == expect and ok_chk == good) else "FAIL"
            failures += status == "FAIL"
            print(f"self-test {m}x{k}x{n} {'swapped' if swap else 'unswapped'}: rel error {err:.2e}, check "
                  f"{'passes' if ok_chk else 'fails'}{' (' + note + ')' if note else ''}: {status}")
    # the check must catch an unwritten element and a small perturbation
    a = rng.random((40, 30), dtype=np.float32)
    b = rng.random((30, 20), dtype=np.float32)
    c = np.empty((40, 20), dtype=np.float32)
    FakeXt().sgemm(None, a, b, c)
    base = check(a, b, c, 64, DEFAULT_TOL, 1)[0]
    c2 = c.copy()
    c2[39, 19] = np.nan
    c3 = c * np.float32(1 + 1e-3)  # a TF32-sized error
    for what, got, want in (("exact product passes", base, True), ("one NaN fails", check(a, b, c2, 64, DEFAULT_TOL, 1)[0], False),
                            ("1e-3 relative error fails", check(a, b, c3, 64, DEFAULT_TOL, 1)[0], False)):
        status = "ok" if got == want else "FAIL"
        failures += status == "FAIL"
        print(f"self-test check: {what}: {status}")
    print(f"self-test: {'FAIL' if failures else 'ok'} ({failures} failure(s))")
    return 1 if failures else 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("shapes", nargs="*", type=parse_shape, metavar="SHAPE", help="N or MxKxN")
    ap.add_argument("--gpus", action="append", type=parse_gpus, metavar="LIST",
                    help="CUDA device ids (0 or 0,1) or all; repeat for several sets (default: 0 and all)")
    ap.add_argument("--reps", type=int, default=5, help="timed calls after one warm-up (default 5)")
    ap.add_argument("--block-dim", type=int, default=0, help="cublasXtSetBlockDim (default: cuBLASXt's own)")
    ap.add_argument("--pin", choices=("enabled", "registered", "disabled"), default="enabled",
                    help="host memory: enabled (cuBLASXt pins in each call; default), registered (pinned once, "
                         "outside the timing), disabled (pageable)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--check-rows", type=int, default=DEFAULT_CHECK_ROWS, help="rows of C checked in float64 (default 64)")
    ap.add_argument("--tol", type=float, default=DEFAULT_TOL, help="largest relative Frobenius error (default 1e-4)")
    ap.add_argument("--libcublas", help="libcublas.so to use (default: the one beside the torch package)")
    ap.add_argument("--dry-run", action="store_true", help="NumPy stands in for cuBLASXt (no GPU): checks the arguments")
    ap.add_argument("--dry-run-gpus", type=int, default=2, help="how many GPUs 'all' means in a dry run (default 2)")
    ap.add_argument("--self-test", action="store_true", help="check the operand swap and the check, then exit")
    args = ap.parse_args(argv)
    if args.self_test:
        return self_test()
    if not args.shapes:
        ap.error("no SHAPE given")
    if args.reps < 1:
        ap.error("--reps must be at least 1")
    if args.block_dim < 0 or args.check_rows < 1 or not args.tol > 0:
        ap.error("--block-dim must be ≥ 0, --check-rows ≥ 1 and --tol > 0")
    gpu_sets = args.gpus or [[0], "all"]

    os.environ.setdefault("NVIDIA_TF32_OVERRIDE", "0")  # before libcublas loads
    cudart = None
    try:
        if args.dry_run:
            xt, count = FakeXt(), args.dry_run_gpus
        else:
            xt = CublasXt(args.libcublas or find_libcublas())
            try:
                cudart = Cudart(os.path.dirname(xt.path))
                count = cudart.device_count()
            except (OSError, XtError) as e:
                if args.pin == "registered":
                    raise
                print(f"cublasxt.py: {e}; counting GPUs with nvidia-smi -L", file=sys.stderr)
                out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout
                count = sum(1 for line in out.splitlines() if line.startswith("GPU "))
    except (OSError, XtError) as e:
        print(f"cublasxt.py: {e}", file=sys.stderr)
        for (m, k, n) in args.shapes:
            for s in gpu_sets:
                emit({"gpus": s if s != "all" else None, "gpu_set": "all" if s == "all" else ",".join(map(str, s)),
                      "m": m, "k": k, "n": n, "ok": False, "error": str(e)})
        return 1
    print(f"cublasxt.py: {xt.path}, cuBLAS {xt.version}, {count} CUDA device(s), pin {args.pin}", file=sys.stderr)

    sets = []
    for s in gpu_sets:
        ids = list(range(count)) if s == "all" else s
        label = "all" if s == "all" else ",".join(map(str, s))
        sets.append((ids, label))

    status = 0
    for (m, k, n) in args.shapes:
        done = {}  # tuple(ids) -> the record of a set already measured on this shape
        t0 = time.perf_counter()
        a, b, c = make_inputs(m, k, n, args.seed)
        print(f"cublasxt.py: {m}x{k}x{n}: inputs made in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        registered = []
        try:
            if args.pin == "registered" and cudart is not None:
                for x in (a, b, c):
                    cudart.register(x)
                    registered.append(x)
            for ids, label in sets:
                if tuple(ids) in done:  # e.g. --gpus 0 --gpus all on a machine of one GPU: measured once
                    rec = dict(done[tuple(ids)], gpu_set=label, same_as=done[tuple(ids)]["gpu_set"])
                    emit(rec)
                    status |= not rec["ok"]
                    continue
                try:
                    if not ids or max(ids) >= count:
                        raise XtError(f"--gpus {label}: {count} CUDA device(s) here (ids 0 to {count - 1})")
                    t0 = time.perf_counter()
                    rec = measure(xt, cudart, ids, label, a, b, c, args)
                    print(f"cublasxt.py: {m}x{k}x{n} on GPUs {label}: median {rec['median_s']:.4f} s, "
                          f"{rec['tflops']:.2f} TFLOPS, rel. error {rec['rel_frobenius'] if rec['rel_frobenius'] is None else format(rec['rel_frobenius'], '.2e')}, "
                          f"{rec['nonfinite']} non-finite, "
                          f"{'ok' if rec['ok'] else 'FAILED'} ({time.perf_counter() - t0:.1f} s)", file=sys.stderr)
                except (XtError, ValueError, MemoryError) as e:
                    rec = {"gpus": ids, "gpu_set": label, "m": m, "k": k, "n": n, "ok": False, "error": str(e)}
                    print(f"cublasxt.py: {m}x{k}x{n} on GPUs {label}: {e}", file=sys.stderr)
                emit(rec)
                done[tuple(ids)] = rec
                status |= not rec["ok"]
        except XtError as e:  # registering failed
            for ids, label in sets:
                emit({"gpus": ids, "gpu_set": label, "m": m, "k": k, "n": n, "ok": False, "error": str(e)})
            status = 1
        finally:
            for x in registered:
                cudart.unregister(x)
            del a, b, c
    return 1 if status else 0


if __name__ == "__main__":
    sys.exit(main())
