// Shared by the example .cu files: lets them compile with NVRTC / nvcc (device code) and with a
// plain C++ compiler for the simulator (host code, where `__device__` means nothing).
#pragma once
#if !defined(__CUDACC__) && !defined(__CUDACC_RTC__)
#define __device__
#endif

// A plain two-float struct passed by value across the foreign-call boundary. Its Rust twin is
// `#[repr(C)] struct Float2 { x: f32, y: f32 }` in ffi-examples/kernels/src/ffi.rs.
struct Float2 {
    float x;
    float y;
};
