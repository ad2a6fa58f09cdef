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
    histogram256, histogram256_aligned, nbody, saxpy_grid_stride, softmax_rows,
    softmax_rows_aligned, stencil5, sum_f32, transpose,
};
use ffi_examples_kernels::*;
use gpukernel_device::{Kernel, signature_symbol};

/// `(NAME, SIGNATURE)` of each listed kernel.
macro_rules! signatures {
    ($($k:ty),* $(,)?) => {
        [$((<$k as Kernel>::NAME, <$k as Kernel>::SIGNATURE)),*]
    };
}

const KERNELS: [(&str, u64); 52] = signatures![
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
];

/// The value of the `u64` global `symbol` in a PTX text, in either form LLVM prints it:
/// `.visible .global .align 8 .b8 NAME[8] = {b0, b1, ..};` (little-endian bytes, the ones
/// not listed are zero; no initializer at all is zero) or `.visible .global .align 8 .u64
/// NAME = value;`.
fn global_u64(ptx: &str, symbol: &str) -> Option<u64> {
    let is_name = |w: &str| {
        let w = w.trim_end_matches(';');
        w == symbol || w.strip_prefix(symbol).is_some_and(|r| r == "[8]")
    };
    let line = ptx
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with(".visible .global") && l.split_whitespace().any(is_name))?;
    let init = line
        .split_once('=')
        .map(|(_, v)| v.trim().trim_end_matches(';').trim());
    if line.contains(" .b8 ") {
        let mut bytes = [0u8; 8];
        if let Some(list) = init {
            let list = list.strip_prefix('{')?.strip_suffix('}')?;
            for (i, b) in list.split(',').enumerate() {
                *bytes.get_mut(i)? = b.trim().parse().ok()?;
            }
        }
        Some(u64::from_le_bytes(bytes))
    } else if line.contains(" .u64 ") {
        init.map_or(Some(0), |v| v.parse().ok())
    } else {
        None
    }
}

#[test]
fn every_kernel_exports_its_signature_in_the_ptx() {
    for (name, signature) in KERNELS {
        let symbol = signature_symbol(name);
        assert_eq!(
            global_u64(PTX, &symbol),
            Some(signature),
            "`{symbol}` in the PTX must hold `{name}::SIGNATURE`"
        );
    }
    // The list above is every kernel of the crate.
    let entries = PTX
        .lines()
        .filter(|l| l.trim_start().starts_with(".visible .entry"))
        .count();
    assert_eq!(entries, KERNELS.len());
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
.visible .global .align 8 .b8 __gpukernel_sig_b[8] = {7};
.visible .global .align 8 .u64 __gpukernel_sig_c = 42;
.visible .global .align 8 .b8 __gpukernel_sig_d[8];
";
    assert_eq!(
        global_u64(ptx, "__gpukernel_sig_a"),
        Some(0x8000_0000_0000_0201)
    );
    assert_eq!(global_u64(ptx, "__gpukernel_sig_b"), Some(7));
    assert_eq!(global_u64(ptx, "__gpukernel_sig_c"), Some(42));
    assert_eq!(global_u64(ptx, "__gpukernel_sig_d"), Some(0));
    assert_eq!(global_u64(ptx, "__gpukernel_sig_e"), None);
}
