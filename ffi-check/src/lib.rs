//! What gpukernel checks of foreign device functions, written once for every path that meets
//! foreign code: `declare_device!` (`gpukernel-macros`), the build-time paths
//! (`nvptx-builder`: clang for `foreign_cuda`, the host compile for the simulator) and the
//! run-time Linker (`gpukernel-runtime`: NVRTC).
//!
//! * [`record`]: the declaration record a `declare_device!` entry exports beside the kernels
//!   (`__gpukernel_foreign_<symbol>_<hash>`), parsed into a [`Declaration`], with the layout of
//!   each `#[repr(C)]` struct it passes ([`StructLayout`]).
//! * [`check`]: the header-free C++ check of a definition ([`CHECK_HEADER`] and one
//!   `static_assert` per property under a `#line` at the Rust declaration), and how a
//!   compiler's log of it reads ([`check::read_log`]).
//! * [`reserved`]: the symbol names foreign code cannot define ([`reserved_symbol`]).
//!
//! This crate knows no compiler, no PTX and no driver: it makes text and reads text.
//!
//! ```
//! use gpukernel_ffi_check::{Declaration, check};
//! let record = "gpukernel-foreign-v1\nsymbol=scale\nabi=c\nat=src/lib.rs:7\nret=float\narg=float\n";
//! let decl = Declaration::parse(record).unwrap();
//! assert_eq!(decl.c_declaration(), "extern \"C\" __device__ float scale(float)");
//! let text = check::checks_text(&[&decl]);
//! assert!(text.contains("static_assert") && text.contains("#line 7 \"src/lib.rs\""));
//! ```

pub mod check;
pub mod record;
pub mod reserved;

pub use check::{CHECK_HEADER, CHECK_HEADER_NAME};
pub use record::{Declaration, FieldLayout, ForeignAbi, StructLayout};
pub use reserved::reserved_symbol;
