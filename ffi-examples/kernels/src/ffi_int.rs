//! Kernels that call foreign functions with integer signatures (every integer width, signed
//! and unsigned, `usize`/`isize`, `bool`, pointers), in both ABIs. The definitions are at the
//! end of `cuda/functions.cu`, spelled as C programmers spell them (`int`, `unsigned`, `long`,
//! `unsigned char`, a typedef), which the checks accept by what each type is.

use gpukernel_device::{prelude::*, thread};

declare_device! {
    unsafe extern {
        /// `a + 1`: Numba's own example, `extern "C" __device__ int bar(int* r, int a)`.
        pub "int_bar", safe fn(a: i32) -> i32;
        /// `x * by`, in 64 bits.
        pub "scale_u64", safe fn(x: u64, by: u32) -> u64;
        /// `a + b + c + d`, widened to 64 bits.
        pub "narrow_sum", safe fn(a: i8, b: u8, c: i16, d: u16) -> i64;
        /// `p[n - 1] + off`; fails with status 33 when `n == 0`.
        pub "last_plus", fn(p: *const i64, n: usize, off: isize) -> i64;
        /// `if flag { a } else { b }`: a plain C function.
        pub "pick_c", safe extern "C" fn(flag: bool, a: f64, b: f64) -> f64;
        /// `(hi << 32) | lo`: a plain C function.
        pub "join_c", safe extern "C" fn(hi: u32, lo: u32) -> u64;
    }
}

/// Each foreign function above applied to `x[i]` (and `w[i]`), one output per function.
#[kernel]
pub fn integer_signatures(
    x: &[i32],
    w: &[i64],
    mut bar: DisjointSlice<i32>,
    mut scaled: DisjointSlice<u64>,
    mut narrow: DisjointSlice<i64>,
    mut last: DisjointSlice<i64>,
    mut picked: DisjointSlice<f64>,
    mut joined: DisjointSlice<u64>,
) {
    let i = thread::index();
    let (Some(&xi), Some(wi)) = (x.get(i.get()), w.get(i.get())) else {
        return;
    };
    if let Some(o) = bar.get_mut(&i) {
        *o = int_bar(xi);
    }
    if let Some(o) = scaled.get_mut(&i) {
        *o = scale_u64(xi as u64, 3);
    }
    if let Some(o) = narrow.get_mut(&i) {
        *o = narrow_sum(xi as i8, xi as u8, xi as i16, xi as u16);
    }
    if let Some(o) = last.get_mut(&i) {
        // SAFETY: `wi` is one valid, initialised `i64` of `w`, and `n` = 1 reads only it.
        *o = unsafe { last_plus(wi as *const i64, 1, -(xi as isize)) };
    }
    if let Some(o) = picked.get_mut(&i) {
        *o = pick_c(xi % 2 == 0, xi as f64 * 0.5, -1.0);
    }
    if let Some(o) = joined.get_mut(&i) {
        *o = join_c(xi as u32, !(xi as u32));
    }
}
