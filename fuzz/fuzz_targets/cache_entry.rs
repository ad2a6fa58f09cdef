//! Decoding the linker's on-disk cache entries.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| gpukernel_runtime::__fuzz::cache_entry(data));
