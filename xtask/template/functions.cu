// Foreign device functions called from the Rust kernels (kernels/src/lib.rs).
//
// The ABI: extern "C" __device__ int f(T* return_value, A1 a1, ...); 0 means success, any
// other status is reported by the host as Error::ForeignCallFailed.

// ret = x * factor
extern "C" __device__ int scale_f32(float* ret, float x, float factor) {
    *ret = x * factor;
    return 0;
}
