//! Image kind detection and every link input kind's shape check.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| gpukernel_runtime::__fuzz::kind(data));
