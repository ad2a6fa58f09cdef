//! The ELF (cubin, object), `ar` and fatbin readers.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| gpukernel_runtime::__fuzz::binary(data));
