//! The PTX reader: kernels, foreign declarations, definitions, kernel selection.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| gpukernel_runtime::__fuzz::ptx(data));
