//! Every `#[kernel]` carries its signature fingerprint into the device code: the PTX of the
//! example kernels crate holds, for each `.entry`, the exported global
//! `__gpukernel_sig_<entry>` whose value is the host's `Kernel::SIGNATURE` of that kernel
//! (the runtime compares the two before it hands out a typed kernel).

use ffi_examples_kernels::ffi::*;
use ffi_examples_kernels::ffi_int::integer_signatures;
use ffi_examples_kernels::grid::*;
use ffi_examples_kernels::math_kernels::*;
use ffi_examples_kernels::numeric::*;
use ffi_examples_kernels::reduce::*;
use ffi_examples_kernels::suite::gemm::{gemm_bf16, gemm_bf16_wide, sgemm};
use ffi_examples_kernels::suite::{
    histogram256, histogram256_aligned, nbody, saxpy_grid_stride, saxpy_same_len, softmax_rows,
    softmax_rows_aligned, stencil5, sum_f32, transpose,
};
use ffi_examples_kernels::*;
use gpukernel_device::signature::{ParamSignature, SIGNATURE_MAGIC};
use gpukernel_device::{Kernel, signature_symbol};
use gpukernel_runtime::{Device, Module};

/// `(NAME, SIGNATURE, PARAM_SIGNATURES, lookup)` of each listed kernel, where `lookup` looks
/// the kernel up in a module the way a typed launch does.
macro_rules! signatures {
    ($($k:path),* $(,)?) => {
        [$((
            <$k as Kernel>::NAME,
            <$k as Kernel>::SIGNATURE,
            <$k as Kernel>::PARAM_SIGNATURES,
            (|m: &Module| m.kernel($k).map(drop)) as fn(&Module) -> gpukernel_runtime::Result<()>,
        )),*]
    };
}

type Entry = (
    &'static str,
    u64,
    &'static [ParamSignature],
    fn(&Module) -> gpukernel_runtime::Result<()>,
);

const KERNELS: [Entry; 69] = signatures![
    empty_kernel,
    saxpy,
    saxpy_cuda_style,
    affine,
    scalar_abi,
    scale_in_place,
    block_reduce_sum,
    block_reduce_sum_aligned,
    block_reduce_sum_dynamic,
    warp_reduce_sum,
    warp_reduce_sum_unchecked,
    atomic_sum,
    shared_40k_static,
    multiply_vectors,
    sum_rows,
    divide_checked,
    dot_with,
    swap_and_scale,
    add_through_pointer,
    add_one_cubin,
    affine_fatbin,
    square_archive,
    sub_one_object,
    axpy_with_c_abi,
    integer_signatures,
    saxpy_grid_stride,
    sum_f32,
    histogram256,
    histogram256_aligned,
    transpose,
    stencil5,
    softmax_rows,
    softmax_rows_aligned,
    nbody,
    sgemm,
    gemm_bf16,
    gemm_bf16_wide,
    math_f32,
    math_f64,
    black_scholes,
    black_scholes_cuda_style,
    graph::halve_until,
    transpose_2d,
    add_2d_grid_stride,
    coordinates_3d,
    f16_ops,
    bf16_ops,
    to_half,
    half2_ops,
    saxpy4,
    double_split,
    print_values,
    collectives::warp_collectives_f32,
    collectives::warp_collectives_f64,
    collectives::warp_collectives_i32,
    collectives::warp_collectives_u32,
    collectives::block_collectives_f32,
    collectives::block_collectives_f64,
    collectives::block_collectives_i32,
    collectives::block_collectives_u32,
    collectives::collectives_user_op,
    launch_shapes::shape_one_array,
    launch_shapes::shape_16_scalars,
    launch_shapes::shape_16_arrays,
    launch_shapes::shape_256_scalars,
    saxpy_same_len,
    transpose_view_2d,
    read_view_2d,
    row_sums_view_2d,
];

/// The words of the `u64`-array global `symbol` in a PTX text, in either form LLVM prints one:
/// `.visible .global .align 8 .b8 NAME[8 n] = {b0, b1, ..};` (little-endian bytes, the ones not
/// listed are zero; no initializer at all is zero) or `.visible .global .align 8 .b64 NAME[n] =
/// {w0, w1, ..};` (or `.u64 NAME = w;` for one word).
fn global_words(ptx: &str, symbol: &str) -> Option<Vec<u64>> {
    let line = ptx.lines().map(str::trim).find(|l| {
        l.starts_with(".visible .global")
            && l.split_whitespace().any(|w| {
                let w = w.trim_end_matches(';');
                w == symbol || w.strip_prefix(symbol).is_some_and(|r| r.starts_with('['))
            })
    })?;
    let (decl, init) = match line.split_once('=') {
        Some((d, v)) => (d, Some(v.trim().trim_end_matches(';').trim())),
        None => (line.trim_end_matches(';'), None),
    };
    let count: usize = match decl.split_once('[') {
        Some((_, r)) => r.split_once(']')?.0.parse().ok()?,
        None => 1,
    };
    let values: Vec<u64> = match init {
        Some(v) => v
            .trim_start_matches('{')
            .trim_end_matches('}')
            .split(',')
            .map(|x| x.trim().parse().ok())
            .collect::<Option<_>>()?,
        None => Vec::new(),
    };
    if decl.contains(" .b8 ") {
        let mut bytes = vec![0u8; count];
        for (b, v) in bytes.iter_mut().zip(&values) {
            *b = u8::try_from(*v).ok()?;
        }
        count.is_multiple_of(8).then(|| {
            bytes
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
                .collect()
        })
    } else if decl.contains(" .b64 ") || decl.contains(" .u64 ") {
        let mut words = vec![0u64; count];
        for (w, v) in words.iter_mut().zip(&values) {
            *w = *v;
        }
        Some(words)
    } else {
        None
    }
}

/// The simulator's module of a PTX text.
fn simulator_module(ptx: &str) -> Module {
    let ctx = Device::simulator().primary_context().unwrap();
    ctx.load_module(ptx.as_bytes()).unwrap()
}

#[test]
fn every_kernel_exports_its_signature_in_the_ptx() {
    for (name, signature, params, _) in KERNELS {
        let symbol = signature_symbol(name);
        let words = global_words(PTX, &symbol)
            .unwrap_or_else(|| panic!("`{symbol}` is missing from the PTX"));
        assert_eq!(words[0], SIGNATURE_MAGIC, "{symbol}");
        assert_eq!(
            words[1], signature,
            "`{symbol}` in the PTX must hold `{name}::SIGNATURE`"
        );
        assert_eq!(words.len(), 3 + 2 * params.len(), "{symbol}");
        assert_eq!(words[2], params.len() as u64, "{symbol}");
        for (i, p) in params.iter().enumerate() {
            assert_eq!(words[3 + 2 * i], p.fingerprint(i), "{symbol}: {}", p.name);
            assert_eq!(words[4 + 2 * i], p.summary(), "{symbol}: {}", p.name);
        }
    }
    // The list above is every kernel of the crate.
    let entries = PTX
        .lines()
        .filter(|l| l.trim_start().starts_with(".visible .entry"))
        .count();
    assert_eq!(entries, KERNELS.len());
}

#[test]
fn the_runtime_accepts_every_kernel_of_its_own_ptx() {
    let module = simulator_module(PTX);
    for (name, _, _, lookup) in KERNELS {
        if let Err(e) = lookup(&module) {
            panic!("`{name}`: {e}");
        }
    }
}

#[test]
fn signatures_tell_kernels_apart() {
    let mut all: Vec<u64> = KERNELS.iter().map(|k| k.1).collect();
    all.sort();
    all.dedup();
    assert_eq!(all.len(), KERNELS.len());
}

#[test]
fn the_global_reader_knows_both_forms() {
    let ptx = "\
.visible .global .align 8 .b8 __gpukernel_sig_a[8] = {1, 2, 0, 0, 0, 0, 0, 128};
.visible .global .align 8 .b8 __gpukernel_sig_b[16] = {7};
.visible .global .align 8 .u64 __gpukernel_sig_c = 42;
.visible .global .align 8 .b64 __gpukernel_sig_d[3] = {1, 2};
";
    assert_eq!(
        global_words(ptx, "__gpukernel_sig_a"),
        Some(vec![0x8000_0000_0000_0201])
    );
    assert_eq!(global_words(ptx, "__gpukernel_sig_b"), Some(vec![7, 0]));
    assert_eq!(global_words(ptx, "__gpukernel_sig_c"), Some(vec![42]));
    assert_eq!(global_words(ptx, "__gpukernel_sig_d"), Some(vec![1, 2, 0]));
    assert_eq!(global_words(ptx, "__gpukernel_sig_e"), None);
}

/// Kernels whose device build differs from their host build (`gpukernel-tests-misuse-kernels`):
/// `module.kernel(k)` refuses each, naming the parameter, on the simulator (which reads the
/// PTX's signature globals) and on a GPU.
mod device_and_host_differ {
    use super::*;
    use gpukernel_runtime::{Context, Error, LaunchConfig};
    use gpukernel_tests_misuse_kernels as mk;

    /// `(parameter, what this build has, what the PTX was compiled for)` of the refusal.
    #[track_caller]
    fn refused(r: gpukernel_runtime::Result<impl Sized>) -> (&'static str, String, String) {
        match r.map(drop).unwrap_err() {
            Error::KernelParamMismatch {
                param,
                expected,
                found,
                ..
            } => (param, expected, found),
            e => panic!("expected KernelParamMismatch, got: {e}"),
        }
    }

    fn check_refusals(m: &Module) {
        // `Real` is `f64` on the device and `f32` on the host.
        let (param, expected, found) = refused(m.kernel(mk::copy_real));
        assert_eq!(param, "x");
        assert_eq!(
            expected,
            "`&[T]` of float elements of 4 bytes (align 4), in no `same_len` group"
        );
        assert_eq!(
            found,
            "`&[T]` of float elements of 8 bytes (align 8), in no `same_len` group"
        );
        // `Flag` is `u8` on the device and `bool` on the host: one size.
        let (param, expected, found) = refused(m.kernel(mk::raise_flags));
        assert_eq!(param, "out");
        assert!(
            expected.starts_with("`DisjointSlice<T>` of bool elements of 1 bytes"),
            "{expected}"
        );
        assert!(
            found.starts_with("`DisjointSlice<T>` of unsigned integer elements of 1 bytes"),
            "{found}"
        );
        // The same inside a derived struct: one size and alignment, another field.
        let (param, expected, found) = refused(m.kernel(mk::apply_setting));
        assert_eq!(param, "s");
        assert_eq!(
            expected,
            "a struct value of 8 bytes (align 4), in no `same_len` group"
        );
        assert_eq!(
            found,
            format!("{expected} with other contents (a struct's fields or an array's elements)")
        );
        // `same_len(x, out)` given to the device build only.
        let (param, expected, found) = refused(m.kernel(mk::copy_assuming_same_len));
        assert_eq!(param, "x");
        assert!(expected.ends_with("in no `same_len` group"), "{expected}");
        assert!(found.ends_with("in `same_len` group 1"), "{found}");
        // The message says where to look.
        let e = m.kernel(mk::copy_real).map(drop).unwrap_err().to_string();
        assert!(
            e.starts_with("kernel `copy_real`: parameter `x` (#0, `&[Real]`) is"),
            "{e}"
        );
        assert!(e.contains("`cfg`'d type alias"), "{e}");
        // The control: `same_len` on both builds.
        m.kernel(mk::copy_same_len).unwrap();
    }

    /// A user's crate-level `fn __gk_body` is what a kernel body calling `__gk_body` reaches.
    fn check_user_items_stay_the_users(ctx: &Context, m: &Module) {
        let k = m.kernel(mk::calls_gk_body).unwrap();
        let mut out = ctx.alloc_zeros::<u32>(64).unwrap();
        let s = ctx.default_stream();
        s.launch(&k, LaunchConfig::for_elements(64).unwrap(), (&mut out,))
            .unwrap();
        assert_eq!(out.to_host_vec().unwrap(), [7; 64]);
    }

    #[test]
    fn the_simulator_refuses_kernels_whose_device_types_differ() {
        check_refusals(&simulator_module(mk::PTX));
    }

    #[test]
    fn a_kernel_body_calls_the_users_function_named_like_a_generated_one() {
        let ctx = Device::simulator().primary_context().unwrap();
        let m = ctx.load_module(mk::PTX.as_bytes()).unwrap();
        check_user_items_stay_the_users(&ctx, &m);
    }

    #[test]
    #[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
    fn a_gpu_refuses_kernels_whose_device_types_differ() {
        let ctx = match Device::get(0) {
            Ok(d) => d.primary_context().unwrap(),
            Err(e) => panic!("this test needs a CUDA GPU (feature `gpu` is on): {e}"),
        };
        let m = ctx.load_module(mk::PTX.as_bytes()).unwrap();
        check_refusals(&m);
        check_user_items_stay_the_users(&ctx, &m);
    }
}
