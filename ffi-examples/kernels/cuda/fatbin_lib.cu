// Built ahead of time into a fatbin (sm_90 SASS + compute_90 PTX) by the ffi-examples build
// script, and into a deliberately wrong-architecture fatbin (sm_80 only) for the error tests.
#include "gpukernel_abi.h"

// ret = x * scale + bias
extern "C" __device__ int fatbin_affine(float* ret, float x, float scale, float bias) {
    *ret = x * scale + bias;
    return 0;
}
