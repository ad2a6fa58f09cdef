// Built ahead of time into a host object with embedded device code (`nvcc -c -rdc=true`,
// object_lib.o) by the ffi-examples build script, for the linker's `.o` input kind.
#include "gpukernel_abi.h"

// ret = x - 1
extern "C" __device__ int object_sub_one(float* ret, float x) {
    *ret = x - 1.0f;
    return 0;
}
