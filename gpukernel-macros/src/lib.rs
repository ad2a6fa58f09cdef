//! Procedural macros of gpukernel. Use them through `gpukernel_device`, which re-exports them
//! (`use gpukernel_device::prelude::*`); the generated code names `::gpukernel_device::__private`
//! only (or `<path>::__private` with `crate = "path"`, for a renamed dependency), and its own
//! locals and parameters have mixed-site spans, so they never clash with the user's names.
//!
//! * [`macro@kernel`] turns a Rust function into a GPU kernel (an nvptx64 entry point) and, on
//!   the host, into a marker type implementing `gpukernel_device::Kernel` for typed launches
//!   and the simulator.
//! * [`declare_device!`] declares foreign CUDA C device functions (Numba's ABI
//!   `extern "C" __device__ int f(T* ret, args...)`) as typed Rust functions.
//!
//! This crate is a thin shim: each macro is `parse → IR → check → expand` in an ordinary
//! module (`kernel`, `foreign`), unit-tested on `proc_macro2` token streams.
#![warn(missing_docs)]

mod device_copy;
mod diag;
mod foreign;
mod hygiene;
mod kernel;
mod print;
mod ty;

use proc_macro::TokenStream;

/// Makes a function a GPU kernel.
///
/// ```ignore
/// use gpukernel_device::prelude::*;
///
/// #[kernel]
/// pub fn saxpy(a: f32, x: &[f32], mut y: DisjointSlice<f32>) {
///     let i = gpukernel_device::thread::index();
///     if let (Some(y), Some(x)) = (y.get_mut(&i), x.get(i.get())) {
///         *y += a * x;
///     }
/// }
/// ```
///
/// Parameters, lowered in order to the kernel ABI (`gpukernel_device::Kernel`):
/// * scalars (`i8`..`i64`, `u8`..`u64`, `usize`, `isize`, `f32`, `f64`, `bool`) and
///   `#[repr(C)]` structs implementing `DeviceCopy`: one parameter by value;
/// * `&[T]`: a read-only slice (pointer and length);
/// * `DisjointSlice<T>`: an output slice that each thread writes at its own index;
/// * `&mut [T]`: a mutable slice, only in an `unsafe fn` kernel;
/// * `*const T` / `*mut T`: one raw pointer.
///
/// The function must return `()`, and may not be generic, `async`, `const` or `extern`; its
/// parameter types may not name a lifetime (`&'static [T]` would let the body keep the data
/// past the launch; `'_` is fine). Its name may not be one that device code calls by symbol:
/// names beginning with `__` or `_Z`, `cuda*` device-runtime names, and `vprintf`, `printf`,
/// `malloc`, `free`, `memset`, `memcpy`, `memmove`, `memcmp`, `bcmp`, `abort`, `exit` (the
/// build also refuses a kernel named like a `declare_device!` symbol).
///
/// On nvptx64 it becomes `#[unsafe(no_mangle)] pub unsafe extern "gpu-kernel" fn name(..)`
/// (the crate needs `#![cfg_attr(target_arch = "nvptx64", feature(abi_gpu_kernel))]`) and
/// the exported global `__gpukernel_sig_name`, the kernel's signature fingerprint, which the
/// compiler computes from the device build's resolved parameter types
/// (`gpukernel_device::signature`). On the host it becomes a marker struct `name {}`
/// implementing `Kernel` (with the fingerprint of the host build's types as
/// `Kernel::SIGNATURE`: `module.kernel(name)` refuses a kernel whose two builds differ, naming
/// the parameter), and `SafeKernel` unless the kernel is an `unsafe fn`,
/// plus a function `name()` returning it: `let name = module.kernel(name)?;` looks the kernel
/// up, and the runtime launches it on a GPU or in the simulator. A kernel declared
/// `unsafe fn` launches only through `unsafe { stream.launch_unchecked(..) }`.
///
/// `#[kernel(crate = "gkd")]` names the device library when `gpukernel-device` is a
/// dependency renamed to `gkd`.
///
/// `#[kernel(same_len(x, y, out))]` declares one-dimensional slice parameters (`&[T]`,
/// `DisjointSlice<T>`, `&mut [T]`) of one length. Every typed launch (stream, capture, graph
/// node) compares the arguments' lengths on the host and refuses others
/// (`Error::SameLenViolated`, naming both parameters); the body may then rely on it, and the
/// compiler is told so: after one `i < x.len()` test, `y[i]` and `out.set(&i, ..)` need no
/// check of their own. Several groups may be given; naming a scalar, a 2D output, an unknown
/// or a repeated name is a compile error.
///
/// ```ignore
/// use gpukernel_device::prelude::*;
/// #[kernel(same_len(x, y, out))]
/// pub fn add(x: &[f32], y: &[f32], mut out: DisjointSlice<f32>) {
///     let i = gpukernel_device::thread::index();
///     if i.get() < x.len() {
///         out.set(&i, x[i.get()] + y[i.get()]); // no bounds checks left for `y` and `out`
///     }
/// }
/// ```
#[proc_macro_attribute]
pub fn kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    kernel::kernel(attr.into(), item.into()).into()
}

/// Implements `gpukernel_device::DeviceCopy` for a `#[repr(C)]` (or `#[repr(transparent)]`)
/// struct whose fields are all `DeviceCopy`, describing each field's offset and layout to
/// kernel signature fingerprints (`gpukernel_device::signature`): a field whose type differs
/// between the device and the host build (a `cfg`'d type alias) then refuses every kernel that
/// takes the struct, where a hand-written impl is seen by its size and alignment only.
///
/// ```ignore
/// use gpukernel_device::prelude::*;
/// #[derive(Clone, Copy, DeviceCopy)]
/// #[repr(C)]
/// pub struct Affine { pub scale: f32, pub offset: f32 }
/// ```
///
/// Generic structs, enums and unions are refused. `#[device_copy(crate = "gkd")]` names a
/// renamed `gpukernel-device` dependency.
#[proc_macro_derive(DeviceCopy, attributes(device_copy))]
pub fn derive_device_copy(input: TokenStream) -> TokenStream {
    device_copy::derive(input.into()).into()
}

/// Declares foreign CUDA C device functions as typed Rust functions.
///
/// ```ignore
/// use gpukernel_device::prelude::*;
///
/// declare_device!(unsafe extern { pub "mul_f32_f32", safe fn(f32, f32) -> f32 });
/// declare_device! {
///     unsafe extern {
///         /// Sums `n` floats.
///         pub sum = "sum_reduce", fn(*const f32, i32) -> f32;
///         pub "touch", fn(*mut u32);
///     }
/// }
/// ```
///
/// The entries go in `unsafe extern { .. }` blocks: a foreign function is trusted code, and
/// the `unsafe` is its author's promise that each symbol is defined by their own foreign code
/// with the signature given, as for Rust's `unsafe extern` blocks. Each entry is
/// `attributes visibility (rust_name =)? "symbol", (safe | unsafe)? (extern "C")? fn(args) -> ret`.
/// Only a `safe fn` entry is a safe wrapper (a promise that any argument values are sound, so it
/// may take no pointer); the others are `unsafe fn`s whose callers promise what the foreign
/// function needs. A first `crate = "gkd";`, before the block, names the device library when
/// `gpukernel-device` is a dependency renamed to `gkd`. Symbols that the CUDA driver (`vprintf`,
/// `malloc`, `free`, ...), libdevice (`__nv_*`), the C library (`memset`, `memcpy`, ...) or
/// the compiler's builtins define are refused: they are not the user's foreign code.
///
/// The two ABIs, and the C definition each entry expects:
///
/// | Rust entry | C definition |
/// |---|---|
/// | `"f", safe fn(a: f32, n: i32) -> f32` | `extern "C" __device__ int f(float* ret, float a, int n)` |
/// | `"g", fn(x: *mut f32, d: f32)` (returns `()`) | `extern "C" __device__ int g(void* ret, float* x, float d)` |
/// | `"h", safe extern "C" fn(a: f32, x: f32) -> f32` | `extern "C" __device__ float h(float a, float x)` |
/// | `"k", extern "C" fn(x: *mut f32)` (returns `()`) | `extern "C" __device__ void k(float* x)` |
///
/// * `fn` is Numba's ABI (`cuda.declare_device`): the function writes its result through the
///   first parameter and returns a status, 0 on success. The wrapper allocates the return
///   slot, calls the symbol and reports a non-zero status to the runtime (an error wherever the
///   host next observes the work: a synchronization or a copy to the host). For a `()` return
///   the slot is still passed, as `void*`, and the function must not write through it.
/// * `extern "C" fn` is a plain C call: the C function returns its value (`void` for `()`),
///   and no status is checked.
///
/// ```ignore
/// declare_device! {
///     unsafe extern {
///         /// Numba's ABI: `extern "C" __device__ int mul_f32_f32(float* ret, float a, float b)`.
///         pub "mul_f32_f32", safe fn(a: f32, b: f32) -> f32;
///         /// A plain C function: `extern "C" __device__ float axpy_c(float a, float x, float y)`.
///         pub "axpy_c", safe extern "C" fn(a: f32, x: f32, y: f32) -> f32;
///     }
/// }
/// ```
///
/// Arguments are scalars, raw pointers (the entry cannot be `safe`) and `DeviceCopy` structs;
/// the return type is a scalar, a raw pointer, a `DeviceCopy` struct or `()`. The C types:
/// `f32` `float`, `f64` `double`, `i8`..`i64` and `u8`..`u64` the integers of those widths
/// (`int`, `unsigned`, `long long`, `unsigned char`, or `int32_t` & co.: the check compares what
/// each type is, not its spelling), `usize` `size_t`, `isize` `ptrdiff_t`, `bool` `bool`,
/// `f16`/`bf16` by value `unsigned short` (their bits), `*const T` `const T*`, `*mut T` `T*`, a
/// `#[repr(C)]` struct the C struct of the same layout. The vector types of
/// `gpukernel_device::vector` are such structs: `f32x4` is CUDA's `float4`, `u32x4` `uint4`,
/// `i32x4` `int4`, `f64x2` `double2` (each aligned to its size, as CUDA's are); host code
/// names them as `gpukernel_runtime::vector::u32x4` & co.
#[proc_macro]
pub fn declare_device(input: TokenStream) -> TokenStream {
    foreign::declare_device(input.into()).into()
}

/// Prints from a kernel, `println!`-style: `gpu_println!("i = {}, x = {:.3}", i, x)`. The
/// format string is checked at compile time (placeholders against arguments; `{}`, `{:x}`,
/// `{:X}`, `{:o}`, `{:e}`, `{:E}`, precision, width and the `<` `+` `#` `0` flags) and becomes a
/// C format string for PTX's `vprintf`; in the simulator it is formatted on the host, as C's
/// `printf` would. See `gpukernel_device::print`. A first `crate = "path";` names a renamed
/// `gpukernel-device` dependency.
#[proc_macro]
pub fn gpu_println(input: TokenStream) -> TokenStream {
    print::print(input.into(), true).into()
}

/// As [`gpu_println!`], without the newline.
#[proc_macro]
pub fn gpu_print(input: TokenStream) -> TokenStream {
    print::print(input.into(), false).into()
}
