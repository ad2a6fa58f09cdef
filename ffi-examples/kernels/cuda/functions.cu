// Foreign device functions called from Rust kernels (ffi-examples/kernels/src/ffi.rs).
//
// Every function follows Numba's ABI for foreign device functions:
//     extern "C" __device__ int f(T* return_value, A1 a1, ...);   // 0 means success
// Compiled at run time by NVRTC (`-rdc=true`) and linked with the Rust kernels' PTX.
#include "gpukernel_abi.h"

// ret = a * b
extern "C" __device__ int mul_f32_f32(float* ret, float a, float b) {
    *ret = a * b;
    return 0;
}

// ret = sum of array[0..n); the array crosses as a raw pointer plus an explicit length.
extern "C" __device__ int sum_reduce(float* ret, const float* array, int n) {
    if (n < 0) {
        return 1;
    }
    float acc = 0.0f;
    for (int i = 0; i < n; ++i) {
        acc += array[i];
    }
    *ret = acc;
    return 0;
}

// ret = a / b; fails with status 22 (EINVAL) when b == 0, which the Rust side must surface.
extern "C" __device__ int checked_div(float* ret, float a, float b) {
    if (b == 0.0f) {
        return 22;
    }
    *ret = a / b;
    return 0;
}

// Structs by value: ret = a.x * b.x + a.y * b.y
extern "C" __device__ int dot2(float* ret, Float2 a, Float2 b) {
    *ret = a.x * b.x + a.y * b.y;
    return 0;
}

// A struct-returning function: ret = (a.y, a.x) scaled by s.
extern "C" __device__ int swap_scale(Float2* ret, Float2 a, float s) {
    ret->x = a.y * s;
    ret->y = a.x * s;
    return 0;
}

// A function with no result: the return slot is unused, the effect goes through the pointer.
extern "C" __device__ int add_in_place(void* ret, float* x, float delta) {
    (void)ret;
    *x += delta;
    return 0;
}

// A plain C function (declared `extern "C" fn` in Rust): no status, no return slot.
extern "C" __device__ float axpy_c(float a, float x, float y) {
    return a * x + y;
}

// Integer signatures, spelled as C programmers spell them (no <cstdint>: NVRTC has none), for
// the declarations in ffi-examples/kernels/src/ffi_int.rs. The checks compare what each type
// is (signedness, width), so `long` fits a declared `i64` and `unsigned` a `u32`.
typedef unsigned int my_u32;

// Numba's own example shape: ret = a + 1.
extern "C" __device__ int int_bar(int* r, int a) {
    *r = a + 1;
    return 0;
}

// ret = x * by, in 64 bits.
extern "C" __device__ int scale_u64(unsigned long long* ret, unsigned long long x, my_u32 by) {
    *ret = x * by;
    return 0;
}

// 8- and 16-bit arguments, widened: ret = a + b + c + d.
extern "C" __device__ int narrow_sum(long* ret, signed char a, unsigned char b, short c,
                                     unsigned short d) {
    *ret = (long)a + (long)b + (long)c + (long)d;
    return 0;
}

// A pointer, a size and a signed offset: ret = p[n - 1] + off; fails with status 33 for n == 0.
extern "C" __device__ int last_plus(long long* ret, const long long* p, unsigned long n,
                                    long long off) {
    if (n == 0) {
        return 33;
    }
    *ret = p[n - 1] + off;
    return 0;
}

// Plain C functions: flag ? a : b, and (hi << 32) | lo.
extern "C" __device__ double pick_c(bool flag, double a, double b) {
    return flag ? a : b;
}

extern "C" __device__ unsigned long long join_c(unsigned hi, unsigned int lo) {
    return ((unsigned long long)hi << 32) | lo;
}
