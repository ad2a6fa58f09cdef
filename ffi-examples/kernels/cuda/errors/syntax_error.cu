// Deliberately broken: the linker tests check that NVRTC's log names this file and line 6.
#include "../gpukernel_abi.h"

extern "C" __device__ int broken(float* ret, float x) {
    *ret = x * 2.0f
    return 0;  // missing ';' on the line above
}
