// fasttwin.cu: a CUDA twin of shaders/fast.comp (plain row mapping, no
// padding, square products whose size the tiles divide), to see what
// nvcc and Nsight Compute say of the same algorithm on an NVIDIA GPU,
// which the GL driver does not (its program binaries hold no SASS, and
// Nsight Compute does not see GL dispatches). docs/PERFORMANCE.md, "What
// a CUDA twin and a sweep of 128-accumulator tiles say", has its results.
//
//   nvcc -O3 -arch=sm_90 -Xptxas -v [-DBM=128 -DBN=256 -DBK=8 -DTM=8 -DTN=8] -o fasttwin fasttwin.cu
//   ./fasttwin 4096
//   ncu --section SpeedOfLight --section Occupancy --section WarpStateStats -k fast -s 5 -c 1 ./fasttwin 4096
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cmath>
#include <cuda_runtime.h>

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 256
#endif
#ifndef BK
#define BK 8
#endif
#ifndef TM
#define TM 8
#endif
#ifndef TN
#define TN 8
#endif
#define THREADS ((BM / TM) * (BN / TN))
#define THREADS_X (BN / TN)
#define THREADS_Y (BM / TM)
#define GN (TN / 4)
#define BK4 (BK / 4)
#define ASTRIDE BK4
#define A_VEC4 (BM * BK4)
#define B_VEC4 (BK * BN / 4)
#define A_LOADS ((A_VEC4 + THREADS - 1) / THREADS)
#define B_LOADS ((B_VEC4 + THREADS - 1) / THREADS)
#define A_SIZE (BM * ASTRIDE)
#define B_SIZE (BK * (BN / 4))

__device__ __forceinline__ float4 fma4(float s, float4 b, float4 c) {
    return make_float4(fmaf(s, b.x, c.x), fmaf(s, b.y, c.y), fmaf(s, b.z, c.z), fmaf(s, b.w, c.w));
}
__device__ __forceinline__ float comp(float4 v, int i) { return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w; }

extern "C" __global__ void __launch_bounds__(THREADS) fast(const float4* __restrict__ A, const float4* __restrict__ B, float4* __restrict__ R,
                                                          unsigned M, unsigned K, unsigned N) {
    __shared__ float4 As[2 * A_SIZE];
    __shared__ float4 Bs[2 * B_SIZE];
    unsigned tid = threadIdx.x;
    unsigned tx = tid % THREADS_X, ty = tid / THREADS_X;
    unsigned row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    unsigned lda4 = K / 4, ldb4 = N / 4;
    float4 ra[A_LOADS], rb[B_LOADS];
    float4 acc[TM][GN];
#pragma unroll
    for (int i = 0; i < TM; i++)
#pragma unroll
        for (int j = 0; j < GN; j++) acc[i][j] = make_float4(0, 0, 0, 0);
#define LOAD_GLOBAL(kt)                                                         \
    _Pragma("unroll") for (int i = 0; i < A_LOADS; i++) {                       \
        unsigned idx = tid + i * THREADS;                                       \
        unsigned r = idx / BK4, c = (idx % BK4) * 4;                            \
        ra[i] = make_float4(0, 0, 0, 0);                                        \
        if ((A_VEC4 % THREADS == 0 || idx < A_VEC4) && row0 + r < M && (kt) + c < K) \
            ra[i] = A[(row0 + r) * lda4 + ((kt) + c) / 4];                      \
    }                                                                           \
    _Pragma("unroll") for (int i = 0; i < B_LOADS; i++) {                       \
        unsigned idx = tid + i * THREADS;                                       \
        unsigned r = idx / (BN / 4), c4 = idx % (BN / 4);                       \
        rb[i] = make_float4(0, 0, 0, 0);                                        \
        if ((B_VEC4 % THREADS == 0 || idx < B_VEC4) && (kt) + r < K && col0 + c4 * 4 < N) \
            rb[i] = B[((kt) + r) * ldb4 + col0 / 4 + c4];                       \
    }
#define STORE_SHARED(buf)                                                       \
    _Pragma("unroll") for (int i = 0; i < A_LOADS; i++) {                       \
        unsigned idx = tid + i * THREADS;                                       \
        if (A_VEC4 % THREADS == 0 || idx < A_VEC4)                              \
            As[(buf) * A_SIZE + (idx / BK4) * ASTRIDE + idx % BK4] = ra[i];     \
    }                                                                           \
    _Pragma("unroll") for (int i = 0; i < B_LOADS; i++) {                       \
        unsigned idx = tid + i * THREADS;                                       \
        if (B_VEC4 % THREADS == 0 || idx < B_VEC4) Bs[(buf) * B_SIZE + idx] = rb[i]; \
    }
    LOAD_GLOBAL(0)
    STORE_SHARED(0)
    __syncthreads();
    int buf = 0;
    for (unsigned kt = 0; kt < K; kt += BK) {
        bool more = kt + BK < K;
        if (more) { LOAD_GLOBAL(kt + BK) }
        unsigned aOff = buf * A_SIZE + ty * ASTRIDE;
        unsigned bOff = buf * B_SIZE + tx;
#pragma unroll
        for (int k4 = 0; k4 < BK4; k4++) {
            float4 a[TM];
#pragma unroll
            for (int i = 0; i < TM; i++) a[i] = As[aOff + i * THREADS_Y * ASTRIDE + k4];
#pragma unroll
            for (int kk = 0; kk < 4; kk++) {
                float4 b[GN];
#pragma unroll
                for (int j = 0; j < GN; j++) b[j] = Bs[bOff + (k4 * 4 + kk) * (BN / 4) + j * THREADS_X];
#pragma unroll
                for (int i = 0; i < TM; i++)
#pragma unroll
                    for (int j = 0; j < GN; j++) acc[i][j] = fma4(comp(a[i], kk), b[j], acc[i][j]);
            }
        }
        if (more) { STORE_SHARED(buf ^ 1) }
        buf ^= 1;
        __syncthreads();
    }
    unsigned ldc4 = N / 4;
#pragma unroll
    for (int i = 0; i < TM; i++) {
        unsigned row = row0 + i * THREADS_Y + ty;
        if (row < M) {
#pragma unroll
            for (int j = 0; j < GN; j++) {
                unsigned c4 = col0 / 4 + j * THREADS_X + tx;
                if (c4 < ldc4) R[row * ldc4 + c4] = acc[i][j];
            }
        }
    }
}

int main(int argc, char** argv) {
    unsigned n = argc > 1 ? atoi(argv[1]) : 4096;
    size_t bytes = (size_t)n * n * 4;
    std::vector<float> ha(n * (size_t)n), hb(n * (size_t)n);
    for (size_t i = 0; i < ha.size(); i++) { ha[i] = (rand() % 2001 - 1000) / 1000.f; hb[i] = (rand() % 2001 - 1000) / 1000.f; }
    float *a, *b, *c;
    cudaMalloc(&a, bytes); cudaMalloc(&b, bytes); cudaMalloc(&c, bytes);
    cudaMemcpy(a, ha.data(), bytes, cudaMemcpyHostToDevice);
    cudaMemcpy(b, hb.data(), bytes, cudaMemcpyHostToDevice);
    dim3 grid((n + BN - 1) / BN, (n + BM - 1) / BM);
    cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
    // warm up 0.5 s
    cudaEventRecord(e0);
    for (int i = 0; i < 200; i++) fast<<<grid, THREADS>>>((float4*)a, (float4*)b, (float4*)c, n, n, n);
    cudaEventRecord(e1); cudaEventSynchronize(e1);
    std::vector<float> ts;
    for (int r = 0; r < 20; r++) {
        cudaEventRecord(e0);
        fast<<<grid, THREADS>>>((float4*)a, (float4*)b, (float4*)c, n, n, n);
        cudaEventRecord(e1); cudaEventSynchronize(e1);
        float ms; cudaEventElapsedTime(&ms, e0, e1); ts.push_back(ms);
    }
    std::sort(ts.begin(), ts.end());
    float ms = ts[ts.size() / 2];
    std::vector<float> hc(n * (size_t)n);
    cudaMemcpy(hc.data(), c, bytes, cudaMemcpyDeviceToHost);
    double maxerr = 0;
    for (int t = 0; t < 20; t++) {
        unsigned i = rand() % n, j = rand() % n; double s = 0;
        for (unsigned k = 0; k < n; k++) s += (double)ha[i * (size_t)n + k] * hb[k * (size_t)n + j];
        maxerr = fmax(maxerr, fabs(s - hc[i * (size_t)n + j]));
    }
    printf("BM=%d BN=%d BK=%d TM=%d TN=%d n=%u: %.3f ms %.1f TFLOPS maxerr %.2g (%s)\n", BM, BN, BK, TM, TN, n, ms,
           2.0 * n * n * (double)n / ms / 1e9, maxerr, cudaGetErrorString(cudaGetLastError()));
    return 0;
}
