// CUB's device-wide algorithms behind plain C entry points, for `bench_algorithms`: compiled
// with nvcc on the benchmark machine (or ahead of time, named by GPUKERNEL_CUB_LIB) and
// opened with dlopen. Each call runs on the caller's CUstream (the CUDA runtime shares the
// device's primary context with gpukernel's runtime); temporary storage is allocated once per
// size with cudaMalloc, outside the timed calls (`*_prepare`).
#include <cub/cub.cuh>
#include <cuda_runtime.h>

static void* g_temp = nullptr;
static size_t g_temp_bytes = 0;

static int ensure_temp(size_t bytes) {
    if (bytes <= g_temp_bytes) return 0;
    if (g_temp) cudaFree(g_temp);
    g_temp = nullptr;
    g_temp_bytes = 0;
    cudaError_t e = cudaMalloc(&g_temp, bytes);
    if (e != cudaSuccess) return (int)e;
    g_temp_bytes = bytes;
    return 0;
}

#define REDUCE(NAME, T)                                                                    \
    extern "C" int NAME##_prepare(int n) {                                                 \
        size_t bytes = 0;                                                                  \
        cudaError_t e = cub::DeviceReduce::Sum(nullptr, bytes, (const T*)nullptr,          \
                                               (T*)nullptr, n);                            \
        if (e != cudaSuccess) return (int)e;                                               \
        return ensure_temp(bytes);                                                         \
    }                                                                                      \
    extern "C" int NAME(const T* in, T* out, int n, void* stream) {                        \
        size_t bytes = g_temp_bytes;                                                       \
        return (int)cub::DeviceReduce::Sum(g_temp, bytes, in, out, n,                      \
                                           (cudaStream_t)stream);                          \
    }

REDUCE(cub_sum_f32, float)
REDUCE(cub_sum_f64, double)
REDUCE(cub_sum_i32, int)

#define SCAN(NAME, T)                                                                      \
    extern "C" int NAME##_prepare(int n) {                                                 \
        size_t bytes = 0;                                                                  \
        cudaError_t e = cub::DeviceScan::InclusiveSum(nullptr, bytes, (const T*)nullptr,   \
                                                      (T*)nullptr, n);                     \
        if (e != cudaSuccess) return (int)e;                                               \
        return ensure_temp(bytes);                                                         \
    }                                                                                      \
    extern "C" int NAME(const T* in, T* out, int n, void* stream) {                        \
        size_t bytes = g_temp_bytes;                                                       \
        return (int)cub::DeviceScan::InclusiveSum(g_temp, bytes, in, out, n,               \
                                                  (cudaStream_t)stream);                   \
    }

SCAN(cub_scan_f32, float)

extern "C" int cub_hist256_prepare(int n) {
    size_t bytes = 0;
    cudaError_t e = cub::DeviceHistogram::HistogramEven(
        nullptr, bytes, (const unsigned char*)nullptr, (unsigned int*)nullptr, 257, 0, 256, n);
    if (e != cudaSuccess) return (int)e;
    return ensure_temp(bytes);
}
extern "C" int cub_hist256(const unsigned char* in, unsigned int* bins, int n, void* stream) {
    size_t bytes = g_temp_bytes;
    return (int)cub::DeviceHistogram::HistogramEven(g_temp, bytes, in, bins, 257, 0, 256, n,
                                                    (cudaStream_t)stream);
}

// Exclusive f32 sum.
extern "C" int cub_scan_excl_f32_prepare(int n) {
    size_t bytes = 0;
    cudaError_t e = cub::DeviceScan::ExclusiveSum(nullptr, bytes, (const float*)nullptr,
                                                  (float*)nullptr, n);
    if (e != cudaSuccess) return (int)e;
    return ensure_temp(bytes);
}
extern "C" int cub_scan_excl_f32(const float* in, float* out, int n, void* stream) {
    size_t bytes = g_temp_bytes;
    return (int)cub::DeviceScan::ExclusiveSum(g_temp, bytes, in, out, n, (cudaStream_t)stream);
}

// Segmented f32 sum: segment s is in[offsets[s]..offsets[s + 1]].
extern "C" int cub_segsum_f32_prepare(int segments) {
    size_t bytes = 0;
    cudaError_t e = cub::DeviceSegmentedReduce::Sum(
        nullptr, bytes, (const float*)nullptr, (float*)nullptr, segments,
        (const unsigned int*)nullptr, (const unsigned int*)nullptr + 1);
    if (e != cudaSuccess) return (int)e;
    return ensure_temp(bytes);
}
extern "C" int cub_segsum_f32(const float* in, float* out, int segments,
                              const unsigned int* offsets, void* stream) {
    size_t bytes = g_temp_bytes;
    return (int)cub::DeviceSegmentedReduce::Sum(g_temp, bytes, in, out, segments, offsets,
                                                offsets + 1, (cudaStream_t)stream);
}

// Even-bin histogram of f32 samples.
extern "C" int cub_histeven_f32_prepare(int n, int levels) {
    size_t bytes = 0;
    cudaError_t e = cub::DeviceHistogram::HistogramEven(
        nullptr, bytes, (const float*)nullptr, (unsigned int*)nullptr, levels, 0.0f, 1.0f, n);
    if (e != cudaSuccess) return (int)e;
    return ensure_temp(bytes);
}
extern "C" int cub_histeven_f32(const float* in, unsigned int* bins, int n, int levels,
                                float lower, float upper, void* stream) {
    size_t bytes = g_temp_bytes;
    return (int)cub::DeviceHistogram::HistogramEven(g_temp, bytes, in, bins, levels, lower,
                                                    upper, n, (cudaStream_t)stream);
}

// A user's operator: the product of 2x2 matrices modulo 2^16 packed in 64 bits (as
// gpukernel-algorithms-example-op's MatMul2): associative, not commutative.
struct MatMul2 {
    __device__ __forceinline__ unsigned long long operator()(unsigned long long x,
                                                             unsigned long long y) const {
        unsigned short a = x, b = x >> 16, c = x >> 32, d = x >> 48;
        unsigned short e = y, f = y >> 16, g = y >> 32, h = y >> 48;
        unsigned short p = a * e + b * g, q = a * f + b * h, r = c * e + d * g, s = c * f + d * h;
        return (unsigned long long)p | (unsigned long long)q << 16 |
               (unsigned long long)r << 32 | (unsigned long long)s << 48;
    }
};
static const unsigned long long MATMUL2_ONE = 1ull | 1ull << 48;

extern "C" int cub_matmul2_reduce_prepare(int n) {
    size_t bytes = 0;
    cudaError_t e = cub::DeviceReduce::Reduce(nullptr, bytes, (const unsigned long long*)nullptr,
                                              (unsigned long long*)nullptr, n, MatMul2{},
                                              MATMUL2_ONE);
    if (e != cudaSuccess) return (int)e;
    return ensure_temp(bytes);
}
extern "C" int cub_matmul2_reduce(const unsigned long long* in, unsigned long long* out, int n,
                                  void* stream) {
    size_t bytes = g_temp_bytes;
    return (int)cub::DeviceReduce::Reduce(g_temp, bytes, in, out, n, MatMul2{}, MATMUL2_ONE,
                                          (cudaStream_t)stream);
}
extern "C" int cub_matmul2_scan_prepare(int n) {
    size_t bytes = 0;
    cudaError_t e = cub::DeviceScan::InclusiveScan(nullptr, bytes,
                                                   (const unsigned long long*)nullptr,
                                                   (unsigned long long*)nullptr, MatMul2{}, n);
    if (e != cudaSuccess) return (int)e;
    return ensure_temp(bytes);
}
extern "C" int cub_matmul2_scan(const unsigned long long* in, unsigned long long* out, int n,
                                void* stream) {
    size_t bytes = g_temp_bytes;
    return (int)cub::DeviceScan::InclusiveScan(g_temp, bytes, in, out, MatMul2{}, n,
                                               (cudaStream_t)stream);
}

extern "C" int cub_sync() { return (int)cudaDeviceSynchronize(); }

#define SORT_KEYS(NAME, T)                                                                 \
    extern "C" int NAME##_prepare(int n) {                                                 \
        size_t bytes = 0;                                                                  \
        cudaError_t e = cub::DeviceRadixSort::SortKeys(nullptr, bytes, (const T*)nullptr,  \
                                                       (T*)nullptr, n);                    \
        if (e != cudaSuccess) return (int)e;                                               \
        return ensure_temp(bytes);                                                         \
    }                                                                                      \
    extern "C" int NAME(const T* in, T* out, int n, void* stream) {                        \
        size_t bytes = g_temp_bytes;                                                       \
        return (int)cub::DeviceRadixSort::SortKeys(g_temp, bytes, in, out, n, 0,           \
                                                   (int)(8 * sizeof(T)),                   \
                                                   (cudaStream_t)stream);                  \
    }

SORT_KEYS(cub_sort_u32, unsigned int)
SORT_KEYS(cub_sort_u64, unsigned long long)

extern "C" int cub_sort_pairs_u32_prepare(int n) {
    size_t bytes = 0;
    cudaError_t e = cub::DeviceRadixSort::SortPairs(
        nullptr, bytes, (const unsigned int*)nullptr, (unsigned int*)nullptr,
        (const unsigned int*)nullptr, (unsigned int*)nullptr, n);
    if (e != cudaSuccess) return (int)e;
    return ensure_temp(bytes);
}
extern "C" int cub_sort_pairs_u32(const unsigned int* keys_in, unsigned int* keys_out,
                                  const unsigned int* values_in, unsigned int* values_out, int n,
                                  void* stream) {
    size_t bytes = g_temp_bytes;
    return (int)cub::DeviceRadixSort::SortPairs(g_temp, bytes, keys_in, keys_out, values_in,
                                                values_out, n, 0, 32, (cudaStream_t)stream);
}
