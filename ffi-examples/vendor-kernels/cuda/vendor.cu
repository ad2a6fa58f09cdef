// NVIDIA's own device code called from Rust kernels (src/lib.rs), through wrappers of ours:
// CUB's block reduce and scan, libcu++'s cuda::std::complex, and cuRAND's device API
// (Philox4x32-10, XORWOW). The headers are the CUDA toolkit's: on the GPU, NVRTC finds them
// at run time (the toolkit's include/ and include/cccl); for the simulator, the host compile
// of this file sees only the `#else` branches and libcu++ (build.rs adds include/cccl).
//
// Numba's ABI: extern "C" __device__ int f(T* ret, args...), 0 on success.
#ifdef __CUDA_ARCH__
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
// cuRAND's headers come with the full toolkit (and the nvidia-curand wheel), not with the
// compiler wheels: without them the cuRAND wrappers return VENDOR_NO_CURAND.
#if __has_include(<curand_kernel.h>)
#include <curand_kernel.h>
#define VENDOR_HAS_CURAND 1
#endif
#endif
#include <cuda/std/complex>

// The block size the CUB wrappers are instantiated for, and the floats of shared memory the
// Rust kernels give them (`TEMP_FLOATS` in src/lib.rs).
#define VENDOR_BLOCK 256
#define VENDOR_TEMP_FLOATS 1024

// Statuses besides 0.
#define VENDOR_WRONG_BLOCK 2      // blockDim is not (VENDOR_BLOCK, 1, 1)
#define VENDOR_NOT_SIMULATED 3    // cuRAND's XORWOW needs its skip-ahead tables: GPU only
#define VENDOR_MISALIGNED 4       // the temp storage is not aligned for CUB
#define VENDOR_NO_CURAND 5        // compiled for the GPU without cuRAND's headers

struct Complex32 {
    float re;
    float im;
};

static __device__ bool vendor_block_ok() {
    return blockDim.x == VENDOR_BLOCK && blockDim.y == 1 && blockDim.z == 1;
}

// The sum of `x` over the block, in every thread. `temp`: VENDOR_TEMP_FLOATS floats of shared
// memory (16-byte aligned), free again after the call.
extern "C" __device__ int vendor_block_sum(float* ret, float x, float* temp) {
    if (!vendor_block_ok()) return VENDOR_WRONG_BLOCK;
#ifdef __CUDA_ARCH__
    typedef cub::BlockReduce<float, VENDOR_BLOCK> Reduce;
    static_assert(sizeof(typename Reduce::TempStorage) <= VENDOR_TEMP_FLOATS * sizeof(float),
                  "the Rust kernel's shared array is too small for CUB's TempStorage");
    if (reinterpret_cast<unsigned long long>(temp) % alignof(typename Reduce::TempStorage) != 0)
        return VENDOR_MISALIGNED;
    float total = Reduce(*reinterpret_cast<typename Reduce::TempStorage*>(temp)).Sum(x);
    __syncthreads();
    // CUB gives the aggregate to thread 0: broadcast it through the (now free) storage.
    if (threadIdx.x == 0) temp[0] = total;
    __syncthreads();
    *ret = temp[0];
    __syncthreads();
#else
    temp[threadIdx.x] = x;
    __syncthreads();
    float total = 0.0f;
    for (int i = 0; i < VENDOR_BLOCK; ++i) total += temp[i];
    __syncthreads();
    *ret = total;
#endif
    return 0;
}

// The exclusive prefix sum of `x` over the block's threads (thread 0 gets 0).
extern "C" __device__ int vendor_block_exclusive_sum(float* ret, float x, float* temp) {
    if (!vendor_block_ok()) return VENDOR_WRONG_BLOCK;
#ifdef __CUDA_ARCH__
    typedef cub::BlockScan<float, VENDOR_BLOCK> Scan;
    static_assert(sizeof(typename Scan::TempStorage) <= VENDOR_TEMP_FLOATS * sizeof(float),
                  "the Rust kernel's shared array is too small for CUB's TempStorage");
    if (reinterpret_cast<unsigned long long>(temp) % alignof(typename Scan::TempStorage) != 0)
        return VENDOR_MISALIGNED;
    float prefix;
    Scan(*reinterpret_cast<typename Scan::TempStorage*>(temp)).ExclusiveSum(x, prefix);
    __syncthreads();
    *ret = prefix;
#else
    temp[threadIdx.x] = x;
    __syncthreads();
    float prefix = 0.0f;
    for (unsigned i = 0; i < threadIdx.x; ++i) prefix += temp[i];
    __syncthreads();
    *ret = prefix;
#endif
    return 0;
}

// exp(a) * b with libcu++'s complex numbers (the same header on the GPU and the host).
extern "C" __device__ int vendor_complex_exp_mul(Complex32* ret, float ar, float ai, float br, float bi) {
    cuda::std::complex<float> a(ar, ai), b(br, bi);
    cuda::std::complex<float> z = cuda::std::exp(a) * b;
    ret->re = z.real();
    ret->im = z.imag();
    return 0;
}

#ifndef __CUDA_ARCH__
// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11) for the
// simulator, with cuRAND's mapping of (seed, subsequence, offset) onto key and counter: key =
// seed, counter = (offset / 4, subsequence), output word offset % 4.
static void vendor_philox_block(unsigned ctr[4], unsigned key[2]) {
    for (int round = 0; round < 10; ++round) {
        unsigned long long p0 = 0xD2511F53ull * ctr[0];
        unsigned long long p1 = 0xCD9E8D57ull * ctr[2];
        unsigned next[4] = {
            (unsigned)(p1 >> 32) ^ ctr[1] ^ key[0],
            (unsigned)p1,
            (unsigned)(p0 >> 32) ^ ctr[3] ^ key[1],
            (unsigned)p0,
        };
        for (int i = 0; i < 4; ++i) ctr[i] = next[i];
        key[0] += 0x9E3779B9u;
        key[1] += 0xBB67AE85u;
    }
}
#endif

// The 32-bit output of cuRAND's Philox4x32-10 at `offset` of `subsequence`, for `seed`.
extern "C" __device__ int vendor_philox(unsigned* ret, unsigned long long seed,
                                        unsigned long long subsequence, unsigned long long offset) {
#if defined(VENDOR_HAS_CURAND)
    curandStatePhilox4_32_10_t state;
    curand_init(seed, subsequence, offset, &state);
    *ret = curand(&state);
#elif defined(__CUDA_ARCH__)
    return VENDOR_NO_CURAND;
#else
    unsigned long long block = offset / 4;
    unsigned ctr[4] = {(unsigned)block, (unsigned)(block >> 32), (unsigned)subsequence,
                       (unsigned)(subsequence >> 32)};
    unsigned key[2] = {(unsigned)seed, (unsigned)(seed >> 32)};
    vendor_philox_block(ctr, key);
    *ret = ctr[offset % 4];
#endif
    return 0;
}

// The 32-bit output of cuRAND's XORWOW at `offset` of `subsequence`, for `seed` (GPU only).
extern "C" __device__ int vendor_xorwow(unsigned* ret, unsigned long long seed,
                                        unsigned long long subsequence, unsigned long long offset) {
#if defined(VENDOR_HAS_CURAND)
    curandStateXORWOW_t state;
    curand_init(seed, subsequence, offset, &state);
    *ret = curand(&state);
    return 0;
#elif defined(__CUDA_ARCH__)
    return VENDOR_NO_CURAND;
#else
    (void)ret;
    (void)seed;
    (void)subsequence;
    (void)offset;
    return VENDOR_NOT_SIMULATED;
#endif
}
