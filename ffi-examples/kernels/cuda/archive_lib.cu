// Built ahead of time into a static library (`nvcc -lib -rdc=true`, libforeign.a) by the
// ffi-examples build script; the `link_archive` example links it with the Rust kernels' PTX.
#include "gpukernel_abi.h"

// ret = x * x
extern "C" __device__ int archive_square(float* ret, float x) {
    *ret = x * x;
    return 0;
}

// ret = |x| (a second member function, so the archive holds more than one symbol)
extern "C" __device__ int archive_abs(float* ret, float x) {
    *ret = x < 0.0f ? -x : x;
    return 0;
}
