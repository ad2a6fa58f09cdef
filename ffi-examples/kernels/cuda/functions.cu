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
