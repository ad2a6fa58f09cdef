// Foreign device functions linked into the kernels' PTX at build time (see build.rs): the
// calls in src/lib.rs inline, and the status checks of Numba's ABI fold away when a function
// cannot fail. The same file is compiled for the host, for the simulator.
//
//     extern "C" __device__ int f(T* return_value, A1 a1, ...);   // 0 means success

// ANCHOR: mul_f32
// ret = a * b
extern "C" __device__ int mul_f32(float* ret, float a, float b) {
    *ret = a * b;
    return 0;
}
// ANCHOR_END: mul_f32

// ret = sum over k = 0..8 of 0.5 * (-0.5)^k * x^k, by Horner's rule with fused multiply-adds
// (what nvcc makes of `acc * x + c`): 8 FMAs, bounded on [0, 1] so that it can be iterated.
extern "C" __device__ int horner8(float* ret, float x) {
    float acc = 0.001953125f;
    acc = fmaf(acc, x, -0.00390625f);
    acc = fmaf(acc, x, 0.0078125f);
    acc = fmaf(acc, x, -0.015625f);
    acc = fmaf(acc, x, 0.03125f);
    acc = fmaf(acc, x, -0.0625f);
    acc = fmaf(acc, x, 0.125f);
    acc = fmaf(acc, x, -0.25f);
    acc = fmaf(acc, x, 0.5f);
    *ret = acc;
    return 0;
}

// ret = sqrt(x); fails with status 33 (EDOM) for x < 0: still reported after inlining.
extern "C" __device__ int checked_sqrt(float* ret, float x) {
    if (x < 0.0f) {
        return 33;
    }
    *ret = sqrtf(x);
    return 0;
}

// A plain C function (declared `extern "C" fn` in Rust): a + t * (b - a).
// ANCHOR: lerp_c
extern "C" __device__ float lerp_c(float a, float b, float t) {
    return fmaf(t, b - a, a);
}
// ANCHOR_END: lerp_c
