//! Formatted output from kernels: [`gpu_print!`](crate::gpu_print) and
//! [`gpu_println!`](crate::gpu_println).
//!
//! On the GPU the macros call PTX's `vprintf` (the CUDA `printf`): the text appears on the
//! host's stdout when the host next synchronizes with the device (a stream or context
//! synchronization, a copy to the host). In the simulator the same format string is
//! formatted on the host, as C's `printf` does, and written to stdout at once, one call per
//! locked write.
//!
//! The format string is checked at compile time (placeholders against arguments, specs
//! against the argument types) and becomes one C format string per call site:
//!
//! | placeholder | integer | float | `bool` |
//! |---|---|---|---|
//! | `{}` | `%lld` / `%llu` | `%g` | `true` / `false` (`%s`) |
//! | `{:x}` `{:X}` `{:o}` | `%llx` `%llX` `%llo` (two's complement at the type's width) | — | — |
//! | `{:e}` `{:E}` | — | `%e` `%E` | — |
//! | `{:.3}` | — | `%.3f` | — |
//! | `{:8}` `{:<8}` `{:08}` `{:+}` `{:#x}` | width, `-`, `0`, `+`, `#` flags | same | width, `-` |
//!
//! `f32` (and `f16`, `bf16`) arguments are passed as `f64`, like C's variadic promotion;
//! integers as 64-bit. At most 32 arguments (the CUDA limit).
//!
//! ```
//! use gpukernel_device::prelude::*;
//! use gpukernel_device::{gpu_println, thread};
//!
//! #[kernel]
//! pub fn report(x: &[f32]) {
//!     let i = thread::index().get();
//!     if i < x.len() {
//!         gpu_println!("thread {} of block {}: x = {:.3}, {:#x}", i, thread::block_idx_x(), x[i], i);
//!     }
//! }
//! ```

/// What kind of C conversion an argument takes.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// A signed integer of this many bits.
    Signed(u32),
    /// An unsigned integer.
    Unsigned,
    /// A float (passed as `f64`).
    Float,
    /// `bool` (passed as a pointer to "true" or "false").
    Bool,
}

/// A value [`gpu_println!`](crate::gpu_println) can print: integers, floats, `bool`, the half
/// types, and references to them.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be printed from a kernel",
    label = "not an integer, float or `bool`",
    note = "`gpu_println!` prints integers, floats (`f32`, `f64`, `f16`, `bf16`) and `bool`"
)]
///
/// ```
/// use gpukernel_device::half::f16;
/// use gpukernel_device::print::PrintArg;
/// fn printable<T: PrintArg>(_: T) {}
/// printable(1u8);
/// printable(-2i64);
/// printable(0.5f32);
/// printable(f16::ONE);
/// printable(true);
/// printable(&3usize);
/// ```
pub trait PrintArg: Copy + sealed::Sealed {
    /// The conversion class.
    #[doc(hidden)]
    const CLASS: Class;
    /// The 64-bit slot handed to `vprintf` (an `f64`'s bits for floats).
    #[doc(hidden)]
    fn slot(self) -> u64;
}

mod sealed {
    /// Sealed: a `bool`'s slot is a pointer the host formatter reads as a C string, so only
    /// this module's types may say which class they are.
    pub trait Sealed {}
    macro_rules! sealed {
        ($($t:ty),*) => { $(impl Sealed for $t {})* };
    }
    sealed!(
        i8, i16, i32, i64, isize, u8, u16, u32, u64, usize, f32, f64, bool
    );
    sealed!(crate::half::f16, crate::half::bf16);
    impl<T: Sealed> Sealed for &T {}
}

macro_rules! print_int {
    ($($t:ty => $class:expr),*) => { $(
        impl PrintArg for $t {
            const CLASS: Class = $class;
            #[inline(always)]
            fn slot(self) -> u64 {
                self as i64 as u64
            }
        }
    )* };
}
print_int!(i8 => Class::Signed(8), i16 => Class::Signed(16), i32 => Class::Signed(32),
           i64 => Class::Signed(64), isize => Class::Signed(64));
macro_rules! print_uint {
    ($($t:ty),*) => { $(
        impl PrintArg for $t {
            const CLASS: Class = Class::Unsigned;
            #[inline(always)]
            fn slot(self) -> u64 {
                self as u64
            }
        }
    )* };
}
print_uint!(u8, u16, u32, u64, usize);

impl PrintArg for f64 {
    const CLASS: Class = Class::Float;
    #[inline(always)]
    fn slot(self) -> u64 {
        self.to_bits()
    }
}
impl PrintArg for f32 {
    const CLASS: Class = Class::Float;
    #[inline(always)]
    fn slot(self) -> u64 {
        (self as f64).to_bits()
    }
}
impl PrintArg for crate::half::f16 {
    const CLASS: Class = Class::Float;
    #[inline(always)]
    fn slot(self) -> u64 {
        self.to_f64().to_bits()
    }
}
impl PrintArg for crate::half::bf16 {
    const CLASS: Class = Class::Float;
    #[inline(always)]
    fn slot(self) -> u64 {
        self.to_f64().to_bits()
    }
}

static TRUE: &[u8; 5] = b"true\0";
static FALSE: &[u8; 6] = b"false\0";

impl PrintArg for bool {
    const CLASS: Class = Class::Bool;
    #[inline(always)]
    fn slot(self) -> u64 {
        if self {
            TRUE.as_ptr() as u64
        } else {
            FALSE.as_ptr() as u64
        }
    }
}
impl<T: PrintArg> PrintArg for &T {
    const CLASS: Class = T::CLASS;
    #[inline(always)]
    fn slot(self) -> u64 {
        (*self).slot()
    }
}

/// One placeholder's spec, as the macro parsed it.
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    /// C flags, a subset of `-0+#`.
    pub flags: &'static str,
    /// Minimum width (0: none).
    pub width: u32,
    /// Precision, or -1.
    pub precision: i32,
    /// `b'\0'` for `{}`, else one of `x X o e E`.
    pub ty: u8,
}

/// A piece of the format: literal text (unescaped) or an argument's placeholder.
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub enum Piece {
    /// Text, copied with `%` doubled.
    Lit(&'static str),
    /// The next argument.
    Arg(Spec, Class),
}

/// The slot of argument `v` printed with `spec`: a signed integer in hex or octal is shown
/// at its own width, as Rust does.
#[doc(hidden)]
#[inline(always)]
pub fn slot<T: PrintArg>(v: T, spec: Spec) -> u64 {
    let s = v.slot();
    match T::CLASS {
        Class::Signed(bits) if bits < 64 && matches!(spec.ty, b'x' | b'X' | b'o') => {
            s & ((1u64 << bits) - 1)
        }
        _ => s,
    }
}

const fn push(out: &mut [u8], n: &mut usize, s: &[u8]) {
    let mut i = 0;
    while i < s.len() {
        out[*n] = s[i];
        *n += 1;
        i += 1;
    }
}

const fn push_num(out: &mut [u8], n: &mut usize, v: u32) {
    let mut digits = [0u8; 10];
    let (mut k, mut v) = (0, v);
    loop {
        digits[k] = b'0' + (v % 10) as u8;
        k += 1;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    while k > 0 {
        k -= 1;
        out[*n] = digits[k];
        *n += 1;
    }
}

/// Builds the NUL-terminated C format string of `pieces` (then `\n` when `newline`) into
/// `N` bytes (the macro sizes `N` generously; the rest stays NUL). Evaluated at compile time;
/// a spec that does not fit its argument's type stops the compilation with a message.
#[doc(hidden)]
pub const fn build<const N: usize>(pieces: &[Piece], newline: bool) -> [u8; N] {
    let mut out = [0u8; N];
    let mut n = 0;
    let mut p = 0;
    while p < pieces.len() {
        match pieces[p] {
            Piece::Lit(text) => {
                let b = text.as_bytes();
                let mut i = 0;
                while i < b.len() {
                    if b[i] == b'%' {
                        push(&mut out, &mut n, b"%%");
                    } else {
                        out[n] = b[i];
                        n += 1;
                    }
                    i += 1;
                }
            }
            Piece::Arg(spec, class) => {
                out[n] = b'%';
                n += 1;
                push(&mut out, &mut n, spec.flags.as_bytes());
                if spec.width > 0 {
                    push_num(&mut out, &mut n, spec.width);
                }
                let conv: &[u8] = match (class, spec.ty) {
                    (Class::Signed(_), 0) => b"lld",
                    (Class::Unsigned, 0) => b"llu",
                    (Class::Signed(_) | Class::Unsigned, b'x') => b"llx",
                    (Class::Signed(_) | Class::Unsigned, b'X') => b"llX",
                    (Class::Signed(_) | Class::Unsigned, b'o') => b"llo",
                    (Class::Float, 0) if spec.precision >= 0 => b"f",
                    (Class::Float, 0) => b"g",
                    (Class::Float, b'e') => b"e",
                    (Class::Float, b'E') => b"E",
                    (Class::Bool, 0) => b"s",
                    (Class::Float | Class::Bool, _) => {
                        panic!("gpu_println!: `x`, `X` and `o` print integers only")
                    }
                    (_, _) => panic!("gpu_println!: `e` and `E` print floats only"),
                };
                if spec.precision >= 0 {
                    if !matches!(class, Class::Float) {
                        panic!("gpu_println!: a precision (`.N`) applies to floats only");
                    }
                    out[n] = b'.';
                    n += 1;
                    push_num(&mut out, &mut n, spec.precision as u32);
                }
                push(&mut out, &mut n, conv);
            }
        }
        p += 1;
    }
    if newline {
        out[n] = b'\n';
        n += 1;
    }
    // The terminating NUL: `n < N` (the macro's bound), and the rest is zero.
    assert!(n < N, "gpu_println!: the format outgrew its buffer");
    out
}

/// Prints `format` (a NUL-terminated C format string from [`build`]) with `args`, one 64-bit
/// slot each: `vprintf` on the GPU, the host's formatter in the simulator.
///
/// # Safety
/// `format` must be the output of [`build`] for pieces whose [`Class`]es are the
/// [`PrintArg::CLASS`] of the arguments whose [`slot`]s `args` holds, in order (what
/// `gpu_println!` expands to): a `%s` conversion reads its slot as the address of a
/// NUL-terminated string, which only a `bool`'s slot is.
#[doc(hidden)]
#[inline(always)]
pub unsafe fn print(format: &[u8], args: &[u64]) {
    #[cfg(target_arch = "nvptx64")]
    {
        unsafe extern "C" {
            fn vprintf(format: *const u8, args: *const u8) -> i32;
        }
        let a = if args.is_empty() {
            core::ptr::null()
        } else {
            args.as_ptr().cast::<u8>()
        };
        // SAFETY: `format` is NUL-terminated, its conversions take one 8-byte, 8-aligned slot
        // each, in order (`build`), and `args` holds exactly those slots (the caller's
        // promise).
        unsafe { vprintf(format.as_ptr(), a) };
    }
    #[cfg(not(target_arch = "nvptx64"))]
    crate::host_printf::print_formatted(format, args);
}
