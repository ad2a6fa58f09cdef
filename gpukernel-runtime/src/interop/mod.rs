//! Interoperation with other Rust CUDA libraries, without copies.
//!
//! - `cudarc` (feature `cudarc-interop`): buffers and streams both ways.

#[cfg(feature = "cudarc-interop")]
pub mod cudarc;
