// gpukernel_sim.h: compiles foreign CUDA C++ device code as host C++ for the gpukernel
// simulator. Force-included (`-include`) by nvptx_builder::host_cc; do not include it from
// code that nvcc or NVRTC compile.
//
// What maps: __device__/__host__/__forceinline__/__noinline__, threadIdx/blockIdx/blockDim/
// gridDim/warpSize, __syncthreads*, __syncwarp, __threadfence*, atomic* (int, unsigned,
// unsigned long long, float, double), __shfl*_sync, __ballot/__all/__any_sync, __activemask,
// the CUDA vector types, and the common math functions and intrinsics.
// What is refused with a compile error at the offending line: __global__ kernels, __shared__
// memory, textures and surfaces; inline PTX (asm) in the user's files (not in system headers)
// is refused by nvptx_builder::host_cc, which reads the preprocessed source.
#ifndef GPUKERNEL_SIM_H
#define GPUKERNEL_SIM_H

#ifndef __cplusplus
#error "gpukernel_sim.h: foreign CUDA sources are compiled as C++ (-x c++) for the simulator"
#endif

#include <algorithm>
#include <atomic>
#include <cassert>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#define GPUKERNEL_SIM 1

// ---- the simulator's entry points (gpukernel_device::host) -------------------------------
// They never unwind into the code that calls them (hence noexcept): a fault inside one (another thread of the
// block failed while this one waits at a barrier, or a warp mask without the calling lane)
// ends the simulated thread there, and its stack, these frames included, is discarded
// without running destructors.
extern "C" {
unsigned gpukernel_sim_thread_idx(unsigned which) noexcept;
unsigned gpukernel_sim_block_idx(unsigned which) noexcept;
unsigned gpukernel_sim_block_dim(unsigned which) noexcept;
unsigned gpukernel_sim_grid_dim(unsigned which) noexcept;
int gpukernel_sim_barrier(int kind, int predicate) noexcept;
unsigned gpukernel_sim_shfl_sync(unsigned mask, unsigned value, unsigned mode, unsigned arg,
                                 unsigned width) noexcept;
unsigned gpukernel_sim_ballot_sync(unsigned mask, int predicate) noexcept;
int gpukernel_sim_all_sync(unsigned mask, int predicate) noexcept;
unsigned gpukernel_sim_active_mask(void) noexcept;
unsigned gpukernel_sim_lane_id(void) noexcept;
}

// ---- qualifiers --------------------------------------------------------------------------
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __constant__
#define __managed__
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __builtin_align__(n) __attribute__((aligned(n)))
#define __grid_constant__

// ---- vector types and indices --------------------------------------------------------------
#define GPUKERNEL_VEC(T, N2, N3, N4)                                                          \
    struct N2 { T x, y; };                                                                    \
    struct N3 { T x, y, z; };                                                                 \
    struct __attribute__((aligned(4 * sizeof(T)))) N4 { T x, y, z, w; };                      \
    static inline N2 make_##N2(T x, T y) { return N2{x, y}; }                                 \
    static inline N3 make_##N3(T x, T y, T z) { return N3{x, y, z}; }                         \
    static inline N4 make_##N4(T x, T y, T z, T w) { return N4{x, y, z, w}; }
GPUKERNEL_VEC(float, float2, float3, float4)
GPUKERNEL_VEC(double, double2, double3, double4)
GPUKERNEL_VEC(int, int2, int3, int4)
GPUKERNEL_VEC(unsigned int, uint2, uint3, uint4)
GPUKERNEL_VEC(long long, longlong2, longlong3, longlong4)
GPUKERNEL_VEC(unsigned long long, ulonglong2, ulonglong3, ulonglong4)
#undef GPUKERNEL_VEC

struct dim3 {
    unsigned int x, y, z;
    constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1)
        : x(vx), y(vy), z(vz) {}
    constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
    constexpr operator uint3() const { return uint3{x, y, z}; }
};

namespace gpukernel_sim {
inline uint3 thread_idx() {
    return uint3{gpukernel_sim_thread_idx(0), gpukernel_sim_thread_idx(1), gpukernel_sim_thread_idx(2)};
}
inline uint3 block_idx() {
    return uint3{gpukernel_sim_block_idx(0), gpukernel_sim_block_idx(1), gpukernel_sim_block_idx(2)};
}
inline dim3 block_dim() {
    return dim3(gpukernel_sim_block_dim(0), gpukernel_sim_block_dim(1), gpukernel_sim_block_dim(2));
}
inline dim3 grid_dim() {
    return dim3(gpukernel_sim_grid_dim(0), gpukernel_sim_grid_dim(1), gpukernel_sim_grid_dim(2));
}
template <class...> struct unsupported : std::false_type {};
}  // namespace gpukernel_sim

#define threadIdx (::gpukernel_sim::thread_idx())
#define blockIdx (::gpukernel_sim::block_idx())
#define blockDim (::gpukernel_sim::block_dim())
#define gridDim (::gpukernel_sim::grid_dim())
#define warpSize 32

// ---- synchronization ---------------------------------------------------------------------
static inline void __syncthreads() { (void)gpukernel_sim_barrier(0, 0); }
static inline int __syncthreads_count(int p) { return gpukernel_sim_barrier(1, p); }
static inline int __syncthreads_and(int p) {
    dim3 d = gpukernel_sim::block_dim();
    return gpukernel_sim_barrier(2, p) == (int)(d.x * d.y * d.z);
}
static inline int __syncthreads_or(int p) { return gpukernel_sim_barrier(3, p) != 0; }
static inline void __syncwarp(unsigned mask = 0xffffffffu) {
    (void)gpukernel_sim_ballot_sync(mask, 0);
}
static inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
static inline void __threadfence_block() { std::atomic_thread_fence(std::memory_order_seq_cst); }
static inline void __threadfence_system() { std::atomic_thread_fence(std::memory_order_seq_cst); }

// ---- atomics (relaxed, like CUDA's) ----------------------------------------------------------
#define GPUKERNEL_ATOMIC_INT(T)                                                                \
    static inline T atomicAdd(T* p, T v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); } \
    static inline T atomicSub(T* p, T v) { return __atomic_fetch_sub(p, v, __ATOMIC_RELAXED); } \
    static inline T atomicAnd(T* p, T v) { return __atomic_fetch_and(p, v, __ATOMIC_RELAXED); } \
    static inline T atomicOr(T* p, T v) { return __atomic_fetch_or(p, v, __ATOMIC_RELAXED); }   \
    static inline T atomicXor(T* p, T v) { return __atomic_fetch_xor(p, v, __ATOMIC_RELAXED); } \
    static inline T atomicExch(T* p, T v) { return __atomic_exchange_n(p, v, __ATOMIC_RELAXED); } \
    static inline T atomicCAS(T* p, T expected, T desired) {                                   \
        __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_RELAXED,            \
                                    __ATOMIC_RELAXED);                                         \
        return expected;                                                                       \
    }                                                                                          \
    static inline T atomicMin(T* p, T v) {                                                     \
        T old = __atomic_load_n(p, __ATOMIC_RELAXED);                                          \
        while (v < old && !__atomic_compare_exchange_n(p, &old, v, true, __ATOMIC_RELAXED,     \
                                                       __ATOMIC_RELAXED)) {                    \
        }                                                                                      \
        return old;                                                                            \
    }                                                                                          \
    static inline T atomicMax(T* p, T v) {                                                     \
        T old = __atomic_load_n(p, __ATOMIC_RELAXED);                                          \
        while (v > old && !__atomic_compare_exchange_n(p, &old, v, true, __ATOMIC_RELAXED,     \
                                                       __ATOMIC_RELAXED)) {                    \
        }                                                                                      \
        return old;                                                                            \
    }
GPUKERNEL_ATOMIC_INT(int)
GPUKERNEL_ATOMIC_INT(unsigned int)
GPUKERNEL_ATOMIC_INT(unsigned long long)
GPUKERNEL_ATOMIC_INT(long long)
#undef GPUKERNEL_ATOMIC_INT

#define GPUKERNEL_ATOMIC_FLOAT(T, U)                                                           \
    static inline T atomicAdd(T* p, T v) {                                                     \
        U old = __atomic_load_n(reinterpret_cast<U*>(p), __ATOMIC_RELAXED);                    \
        for (;;) {                                                                             \
            T f;                                                                               \
            std::memcpy(&f, &old, sizeof f);                                                   \
            f += v;                                                                            \
            U next;                                                                            \
            std::memcpy(&next, &f, sizeof next);                                               \
            if (__atomic_compare_exchange_n(reinterpret_cast<U*>(p), &old, next, true,         \
                                            __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {             \
                T r;                                                                           \
                std::memcpy(&r, &old, sizeof r);                                               \
                return r;                                                                      \
            }                                                                                  \
        }                                                                                      \
    }                                                                                          \
    static inline T atomicExch(T* p, T v) {                                                    \
        U bits;                                                                                \
        std::memcpy(&bits, &v, sizeof bits);                                                   \
        U old = __atomic_exchange_n(reinterpret_cast<U*>(p), bits, __ATOMIC_RELAXED);          \
        T r;                                                                                   \
        std::memcpy(&r, &old, sizeof r);                                                       \
        return r;                                                                              \
    }
GPUKERNEL_ATOMIC_FLOAT(float, unsigned int)
GPUKERNEL_ATOMIC_FLOAT(double, unsigned long long)
#undef GPUKERNEL_ATOMIC_FLOAT

// ---- warp operations ---------------------------------------------------------------------
namespace gpukernel_sim {
template <class T> inline T shfl(unsigned mask, T v, unsigned mode, unsigned arg, int width) {
    static_assert(sizeof(T) == 4 || sizeof(T) == 8, "__shfl*_sync: 4- or 8-byte values only");
    if constexpr (sizeof(T) == 4) {
        unsigned bits;
        std::memcpy(&bits, &v, 4);
        bits = gpukernel_sim_shfl_sync(mask, bits, mode, arg, (unsigned)width);
        T r;
        std::memcpy(&r, &bits, 4);
        return r;
    } else {
        unsigned long long bits;
        std::memcpy(&bits, &v, 8);
        unsigned lo = gpukernel_sim_shfl_sync(mask, (unsigned)bits, mode, arg, (unsigned)width);
        unsigned hi = gpukernel_sim_shfl_sync(mask, (unsigned)(bits >> 32), mode, arg, (unsigned)width);
        bits = (unsigned long long)lo | ((unsigned long long)hi << 32);
        T r;
        std::memcpy(&r, &bits, 8);
        return r;
    }
}
}  // namespace gpukernel_sim
template <class T> static inline T __shfl_sync(unsigned mask, T v, int src, int width = 32) {
    return gpukernel_sim::shfl(mask, v, 0, (unsigned)src, width);
}
template <class T> static inline T __shfl_up_sync(unsigned mask, T v, unsigned d, int width = 32) {
    return gpukernel_sim::shfl(mask, v, 1, d, width);
}
template <class T> static inline T __shfl_down_sync(unsigned mask, T v, unsigned d, int width = 32) {
    return gpukernel_sim::shfl(mask, v, 2, d, width);
}
template <class T> static inline T __shfl_xor_sync(unsigned mask, T v, int m, int width = 32) {
    return gpukernel_sim::shfl(mask, v, 3, (unsigned)m, width);
}
static inline unsigned __ballot_sync(unsigned mask, int p) { return gpukernel_sim_ballot_sync(mask, p); }
static inline int __all_sync(unsigned mask, int p) { return gpukernel_sim_all_sync(mask, p); }
static inline int __any_sync(unsigned mask, int p) { return gpukernel_sim_ballot_sync(mask, p) != 0; }
static inline unsigned __activemask() { return gpukernel_sim_active_mask(); }

// ---- math and bit intrinsics -----------------------------------------------------------------
static inline float __fdividef(float a, float b) { return a / b; }
// glibc declares __expf & co. (its internal names) and, with _GNU_SOURCE, sincosf/exp10f:
// map CUDA's fast-math intrinsics by macro onto the standard functions.
#define __expf(x) expf(x)
#define __exp10f(x) exp10f(x)
#define __logf(x) logf(x)
#define __log2f(x) log2f(x)
#define __log10f(x) log10f(x)
#define __sinf(x) sinf(x)
#define __cosf(x) cosf(x)
#define __tanf(x) tanf(x)
#define __powf(a, b) powf(a, b)
#define __sincosf(x, s, c) sincosf(x, s, c)
static inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
static inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
static inline float __frsqrt_rn(float x) { return 1.0f / std::sqrt(x); }
static inline float __fsqrt_rn(float x) { return std::sqrt(x); }
static inline float __frcp_rn(float x) { return 1.0f / x; }
static inline float __saturatef(float x) { return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x); }
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
static inline double __dadd_rn(double a, double b) { return a + b; }
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline double __fma_rn(double a, double b, double c) { return std::fma(a, b, c); }
static inline float normcdff(float x) { return 0.5f * std::erfc(-x * 0.70710678118654752f); }
static inline double normcdf(double x) { return 0.5 * std::erfc(-x * 0.70710678118654752); }
static inline int __float_as_int(float x) { int r; std::memcpy(&r, &x, 4); return r; }
static inline unsigned __float_as_uint(float x) { unsigned r; std::memcpy(&r, &x, 4); return r; }
static inline float __int_as_float(int x) { float r; std::memcpy(&r, &x, 4); return r; }
static inline float __uint_as_float(unsigned x) { float r; std::memcpy(&r, &x, 4); return r; }
static inline long long __double_as_longlong(double x) { long long r; std::memcpy(&r, &x, 8); return r; }
static inline double __longlong_as_double(long long x) { double r; std::memcpy(&r, &x, 8); return r; }
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
static inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
static inline int __ffs(int x) { return __builtin_ffs(x); }
static inline int __ffsll(long long x) { return __builtin_ffsll(x); }
static inline unsigned __brev(unsigned x) {
    x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
    x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
    x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
    x = ((x >> 8) & 0x00ff00ffu) | ((x & 0x00ff00ffu) << 8);
    return (x >> 16) | (x << 16);
}
static inline int __mul24(int a, int b) { return (int)((long long)(a << 8 >> 8) * (b << 8 >> 8)); }
static inline unsigned __umul24(unsigned a, unsigned b) { return (a & 0xffffffu) * (b & 0xffffffu); }
static inline int __mulhi(int a, int b) { return (int)(((long long)a * b) >> 32); }
static inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a * b) >> 32); }
static inline int min(int a, int b) { return a < b ? a : b; }
static inline int max(int a, int b) { return a > b ? a : b; }
static inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
static inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
static inline long long min(long long a, long long b) { return a < b ? a : b; }
static inline long long max(long long a, long long b) { return a > b ? a : b; }
static inline unsigned long long min(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
static inline unsigned long long max(unsigned long long a, unsigned long long b) { return a > b ? a : b; }
static inline float min(float a, float b) { return std::fmin(a, b); }
static inline float max(float a, float b) { return std::fmax(a, b); }
static inline double min(double a, double b) { return std::fmin(a, b); }
static inline double max(double a, double b) { return std::fmax(a, b); }
using std::abs;
using std::ceil;
using std::fabs;
using std::floor;
using std::fma;
using std::sqrt;

// ---- refused features: a compile error at the offending line ---------------------------------
#define __global__                                                                             \
    _Pragma("GCC error \"gpukernel: __global__ kernels in foreign code are not supported; write the kernel in Rust with #[kernel] and call __device__ functions\"")
#define __shared__                                                                             \
    _Pragma("GCC error \"gpukernel: __shared__ memory in foreign code is not supported by the simulator; declare it in the Rust kernel (shared_array!) and pass a pointer\"")
// Inline PTX (`asm`) is refused too, but not here: system headers use `asm` for the host, so
// nvptx_builder::host_cc finds it in the preprocessed text of the user's own files instead.
#define __ldg(p) (*(p))

template <class T, int D = 1, int M = 0> struct texture {
    static_assert(gpukernel_sim::unsupported<T>::value,
                  "gpukernel: textures (texture<>) are not supported by the simulator");
};
typedef unsigned long long cudaTextureObject_t;
typedef unsigned long long cudaSurfaceObject_t;
#define GPUKERNEL_REFUSE(name, what)                                                           \
    template <class... A> static inline int name(A...) {                                       \
        static_assert(gpukernel_sim::unsupported<A...>::value,                                 \
                      "gpukernel: " #name ": " what " are not supported by the simulator");   \
        return 0;                                                                              \
    }
GPUKERNEL_REFUSE(tex1D, "textures")
GPUKERNEL_REFUSE(tex1Dfetch, "textures")
GPUKERNEL_REFUSE(tex2D, "textures")
GPUKERNEL_REFUSE(tex3D, "textures")
GPUKERNEL_REFUSE(tex2DLod, "textures")
GPUKERNEL_REFUSE(surf1Dread, "surfaces")
GPUKERNEL_REFUSE(surf1Dwrite, "surfaces")
GPUKERNEL_REFUSE(surf2Dread, "surfaces")
GPUKERNEL_REFUSE(surf2Dwrite, "surfaces")
GPUKERNEL_REFUSE(__nanosleep, "sleeps")
#undef GPUKERNEL_REFUSE

#endif  // GPUKERNEL_SIM_H
