// Built ahead of time into a cubin (`nvcc -cubin -rdc=true -arch=sm_90`) by the ffi-examples
// build script; the `link_cubin` example links that cubin with the Rust kernels' PTX.
#include "gpukernel_abi.h"

// ret = x + 1
extern "C" __device__ int cubin_add_one(float* ret, float x) {
    *ret = x + 1.0f;
    return 0;
}
