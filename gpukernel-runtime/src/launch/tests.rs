//! Simulator-backed tests of typed launches, with kernels written by hand the way
//! `#[kernel]` expands them (a marker type implementing `Kernel` and a `SimEntry`).
#![allow(non_camel_case_types)]

use core::ffi::c_void;

use gpukernel_device::{__private, DisjointSlice, Kernel, SafeKernel, SimEntry, thread};

use super::*;
use crate::error::Error;
use crate::{Context, Device, DeviceBuffer, DeviceCopy, DeviceSlice, Module};

/// PTX declaring the test kernels (the simulator's module is the set of `.entry` names) and
/// their signature fingerprints, as `#[kernel]` would export them.
pub(crate) const PTX: &str = "
    .version 7.8
    .target sm_90
    .address_size 64
    .visible .entry saxpy(.param .f32 a, .param .u64 x, .param .u64 xn, .param .u64 y, .param .u64 yn) { ret; }
    .visible .entry affine(.param .align 8 .b8 p[16], .param .u64 y, .param .u64 yn) { ret; }
    .visible .entry scale_in_place(.param .u64 x, .param .u64 xn, .param .f32 s) { ret; }
    .visible .entry out_of_bounds(.param .u64 x, .param .u64 xn) { ret; }
    .visible .entry fails_foreign(.param .u64 x, .param .u64 xn) { ret; }
    .visible .entry write_ptr(.param .u64 p) { ret; }
    .visible .global .align 8 .u64 __gpukernel_sig_saxpy = 7710162562058289153;
    .visible .global .align 8 .u64 __gpukernel_sig_affine = 7710162562058289154;
    .visible .global .align 8 .u64 __gpukernel_sig_scale_in_place = 7710162562058289155;
    .visible .global .align 8 .u64 __gpukernel_sig_out_of_bounds = 7710162562058289156;
    .visible .global .align 8 .u64 __gpukernel_sig_fails_foreign = 7710162562058289157;
    .visible .global .align 8 .u64 __gpukernel_sig_write_ptr = 7710162562058289158;
";

/// Reads ABI parameter `i` as a `T`.
unsafe fn arg<T: Copy>(p: *const *mut c_void, i: usize) -> T {
    // SAFETY: the caller names an existing parameter of type `T`.
    unsafe { (*p.add(i)).cast::<T>().read() }
}

#[derive(Clone, Copy)]
pub(crate) struct saxpy;
// SAFETY: NAME is the PTX entry above, Params its parameters, SIM_ENTRY reads them in ABI order.
unsafe impl Kernel for saxpy {
    const NAME: &'static str = "saxpy";
    type Params = (f32, &'static [f32], DisjointSlice<'static, f32>);
    const SIGNATURE: u64 = 0x6b00000000000001;
    const SIM_ENTRY: SimEntry = saxpy_entry;
}
// SAFETY: a safe kernel: sound for any arguments of its parameter types.
unsafe impl SafeKernel for saxpy {}
unsafe fn saxpy_entry(p: *const *mut c_void) {
    // SAFETY: the typed launch passes (f32, ptr, len, ptr, len) for live buffers.
    unsafe {
        let a: f32 = arg(p, 0);
        let x =
            __private::slice_from_raw(arg::<u64>(p, 1) as *const f32, arg::<u64>(p, 2) as usize);
        let mut y = __private::disjoint_from_raw::<f32>(
            arg::<u64>(p, 3) as *mut f32,
            arg::<u64>(p, 4) as usize,
        );
        let i = thread::index();
        if let Some(yi) = y.get_mut(&i) {
            *yi += a * x[i.get()];
        }
    }
}

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Affine {
    scale: f32,
    offset: f32,
    bias: f64,
}
// SAFETY: repr(C), plain numbers.
unsafe impl DeviceCopy for Affine {}

#[derive(Clone, Copy)]
struct affine;
// SAFETY: as for `saxpy`.
unsafe impl Kernel for affine {
    const NAME: &'static str = "affine";
    type Params = (Affine, DisjointSlice<'static, f64>);
    const SIGNATURE: u64 = 0x6b00000000000002;
    const SIM_ENTRY: SimEntry = affine_entry;
}
// SAFETY: a safe kernel: sound for any arguments of its parameter types.
unsafe impl SafeKernel for affine {}
unsafe fn affine_entry(p: *const *mut c_void) {
    // SAFETY: (Affine by value, ptr, len).
    unsafe {
        let a: Affine = arg(p, 0);
        let mut y = __private::disjoint_from_raw::<f64>(
            arg::<u64>(p, 1) as *mut f64,
            arg::<u64>(p, 2) as usize,
        );
        let i = thread::index();
        y.set(&i, (a.scale * i.get() as f32 + a.offset) as f64 + a.bias);
    }
}

#[derive(Clone, Copy)]
struct scale_in_place;
// SAFETY: as for `saxpy`.
unsafe impl Kernel for scale_in_place {
    const NAME: &'static str = "scale_in_place";
    type Params = (&'static mut [f32], f32);
    const SIGNATURE: u64 = 0x6b00000000000003;
    const SIM_ENTRY: SimEntry = scale_entry;
}
unsafe fn scale_entry(p: *const *mut c_void) {
    // SAFETY: (ptr, len, f32); each thread touches a grid-stride set of indices.
    unsafe {
        let x =
            __private::slice_from_raw_mut(arg::<u64>(p, 0) as *mut f32, arg::<u64>(p, 1) as usize);
        let s: f32 = arg(p, 2);
        let mut i = thread::global_index_x();
        while i < x.len() {
            x[i] *= s;
            i += thread::grid_stride_x();
        }
    }
}

#[derive(Clone, Copy)]
pub(crate) struct out_of_bounds;
// SAFETY: as for `saxpy`.
unsafe impl Kernel for out_of_bounds {
    const NAME: &'static str = "out_of_bounds";
    type Params = (&'static [u32],);
    const SIGNATURE: u64 = 0x6b00000000000004;
    const SIM_ENTRY: SimEntry = oob_entry;
}
// SAFETY: a safe kernel: sound for any arguments of its parameter types.
unsafe impl SafeKernel for out_of_bounds {}
unsafe fn oob_entry(p: *const *mut c_void) {
    // SAFETY: (ptr, len).
    let x = unsafe {
        __private::slice_from_raw(arg::<u64>(p, 0) as *const u32, arg::<u64>(p, 1) as usize)
    };
    let i = thread::index().get();
    std::hint::black_box(x[i + x.len()]);
}

#[derive(Clone, Copy)]
pub(crate) struct fails_foreign;
// SAFETY: as for `saxpy`.
unsafe impl Kernel for fails_foreign {
    const NAME: &'static str = "fails_foreign";
    type Params = (&'static [u32],);
    const SIGNATURE: u64 = 0x6b00000000000005;
    const SIM_ENTRY: SimEntry = fails_foreign_entry;
}
// SAFETY: a safe kernel: sound for any arguments of its parameter types.
unsafe impl SafeKernel for fails_foreign {}
unsafe fn fails_foreign_entry(_p: *const *mut c_void) {
    if thread::index().get() == 5 {
        gpukernel_device::ffi::report_foreign_failure("mul_f32_f32", 7);
    }
}

#[derive(Clone, Copy)]
struct write_ptr;
// SAFETY: as for `saxpy`.
unsafe impl Kernel for write_ptr {
    const NAME: &'static str = "write_ptr";
    type Params = (*mut u32,);
    const SIGNATURE: u64 = 0x6b00000000000006;
    const SIM_ENTRY: SimEntry = write_ptr_entry;
}
unsafe fn write_ptr_entry(p: *const *mut c_void) {
    // SAFETY: the test passes a pointer to at least one u32; only thread 0 writes.
    unsafe {
        if thread::index().get() == 0 {
            (arg::<u64>(p, 0) as *mut u32).write(42);
        }
    }
}

pub(crate) fn sim() -> (Context, Module) {
    let ctx = Device::simulator().primary_context().unwrap();
    let module = ctx.load_module(PTX.as_bytes()).unwrap();
    (ctx, module)
}

/// As [`sim`], on a context of the test's own: for tests whose kernels fail foreign calls, as
/// any observation point of a context reports (and clears) its pending failures, and tests
/// run in parallel.
pub(crate) fn sim_private() -> (Context, Module) {
    let ctx = Context::private_simulator_for_tests();
    let module = ctx.load_module(PTX.as_bytes()).unwrap();
    (ctx, module)
}

#[test]
fn saxpy_on_the_simulator() {
    let (ctx, module) = sim();
    let k = module.kernel(saxpy).unwrap();
    let n = 1000;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let dx = ctx.htod_copy(&x).unwrap();
    let mut dy = ctx.htod_copy(&vec![1.0f32; n]).unwrap();
    let s = ctx.new_stream().unwrap(); // own stream: the default one is shared by other tests
    s.launch(
        &k,
        LaunchConfig::for_elements(n).unwrap(),
        (2.0f32, &dx, &mut dy),
    )
    .unwrap();
    s.synchronize().unwrap();
    assert_eq!(s.last_launch(), Some("saxpy"));
    let y = dy.to_host_vec().unwrap();
    for (i, v) in y.iter().enumerate() {
        assert_eq!(*v, 2.0 * i as f32 + 1.0, "element {i}");
    }
}

#[test]
fn launch_on_views_touches_only_the_view() {
    let (ctx, module) = sim();
    let k = module.kernel(saxpy).unwrap();
    let dx = ctx.htod_copy(&[1.0f32; 8]).unwrap();
    let mut dy = ctx.alloc_zeros::<f32>(8).unwrap();
    {
        let (_, mut hi) = dy.split_at_mut(4).unwrap();
        let xs = dx.slice(4..).unwrap();
        ctx.default_stream()
            .launch(
                &k,
                LaunchConfig::for_elements(4).unwrap(),
                (3.0f32, xs, &mut hi),
            )
            .unwrap();
    }
    assert_eq!(
        dy.to_host_vec().unwrap(),
        [0.0, 0.0, 0.0, 0.0, 3.0, 3.0, 3.0, 3.0]
    );
}

#[test]
fn struct_params_cross_by_value() {
    let (ctx, module) = sim();
    let k = module.kernel(affine).unwrap();
    let mut y = ctx.alloc_zeros::<f64>(10).unwrap();
    let p = Affine {
        scale: 2.0,
        offset: 0.5,
        bias: 100.0,
    };
    ctx.default_stream()
        .launch(&k, LaunchConfig::new(1, 10), (p, &mut y))
        .unwrap();
    let y = y.to_host_vec().unwrap();
    for (i, v) in y.iter().enumerate() {
        assert_eq!(*v, (2.0 * i as f32 + 0.5) as f64 + 100.0);
    }
}

#[test]
fn unsafe_kernels_launch_unchecked() {
    let (ctx, module) = sim();
    let k = module.kernel(scale_in_place).unwrap();
    let mut x = ctx.htod_copy(&[1.0f32, 2.0, 3.0, 4.0, 5.0]).unwrap();
    // SAFETY: the kernel keeps threads on disjoint grid-stride indices.
    unsafe {
        ctx.default_stream()
            .launch_unchecked(&k, LaunchConfig::new(1, 2), (&mut x, 10.0f32))
    }
    .unwrap();
    assert_eq!(x.to_host_vec().unwrap(), [10.0, 20.0, 30.0, 40.0, 50.0]);
}

#[test]
fn raw_pointer_params() {
    let (ctx, module) = sim();
    let k = module.kernel(write_ptr).unwrap();
    let mut b = ctx.alloc_zeros::<u32>(4).unwrap();
    let s = ctx.default_stream();
    // `write_ptr` stands for an `unsafe fn` kernel (it writes through its pointer).
    // SAFETY: the pointer is to a live buffer of 4 u32s that nothing else uses.
    unsafe { s.launch_unchecked(&k, LaunchConfig::new(1, 1), (b.device_ptr(),)) }.unwrap();
    assert_eq!(b.to_host_vec().unwrap(), [42, 0, 0, 0]);
    b.memset_zeros().unwrap();
    // SAFETY: as above.
    unsafe { s.launch_unchecked(&k, LaunchConfig::new(1, 1), (&mut b,)) }.unwrap();
    assert_eq!(b.to_host_vec().unwrap(), [42, 0, 0, 0]);
}

#[test]
fn parameter_array_layout_follows_the_abi() {
    let (ctx, _) = sim();
    let s = ctx.default_stream();
    let x = ctx.htod_copy(&[1.0f32; 3]).unwrap();
    let mut y = ctx.alloc_zeros::<f32>(5).unwrap();
    let (xp, yp) = (x.as_raw(), y.as_raw());
    let p = Affine {
        scale: 1.5,
        offset: -2.0,
        bias: 8.0,
    };
    let args = (2.5f32, &x, &mut y, p, 7u8);
    let mut abi =
        LaunchArgs::<(f32, &'static [f32], DisjointSlice<'static, f32>, Affine, u8)>::lower(
            args,
            &s.enqueuing(),
            &mut args::Lent::new::<saxpy>(),
        )
        .unwrap();
    let mut params = args::abi::ParamArray::new();
    <(f32, &DeviceBuffer<f32>, &mut DeviceBuffer<f32>, Affine, u8) as LaunchArgs<(
        f32,
        &'static [f32],
        DisjointSlice<'static, f32>,
        Affine,
        u8,
    )>>::fill(&mut abi, &mut params);
    let out = params.as_mut_slice();
    assert_eq!(out.len(), 7);
    // SAFETY: each pointer points into `abi`, at a value of the type the ABI says.
    unsafe {
        assert_eq!(*(out[0] as *const f32), 2.5);
        assert_eq!(*(out[1] as *const u64), xp);
        assert_eq!(*(out[2] as *const u64), 3);
        assert_eq!(*(out[3] as *const u64), yp);
        assert_eq!(*(out[4] as *const u64), 5);
        assert_eq!(*(out[5] as *const Affine), p);
        assert_eq!(*(out[6] as *const u8), 7);
    }
}

#[test]
fn configs_are_validated_before_the_launch() {
    let (ctx, module) = sim();
    let k = module.kernel(saxpy).unwrap();
    let x = ctx.htod_copy(&[0.0f32; 4]).unwrap();
    let mut y = ctx.alloc_zeros::<f32>(4).unwrap();
    // Own stream: other tests launch on the shared default one, which `last_launch` reads.
    let s = ctx.new_stream().unwrap();
    let mut check = |cfg: LaunchConfig, dim: &str| {
        let e = s.launch(&k, cfg, (1.0f32, &x, &mut y)).unwrap_err();
        match &e {
            Error::InvalidLaunchConfig {
                kernel, dimension, ..
            } => {
                assert_eq!(kernel, "saxpy");
                assert_eq!(*dimension, dim, "{e}");
            }
            other => panic!("unexpected error {other}"),
        }
    };
    check(LaunchConfig::new(0, 32), "grid.x");
    check(LaunchConfig::new((1, 70000), 32), "grid.y");
    check(LaunchConfig::new(1, (32, 0)), "block.y");
    check(LaunchConfig::new(1, 2048), "block.x");
    check(LaunchConfig::new(1, (64, 32)), "threads per block");
    check(LaunchConfig::new(1, (1, 1, 65)), "block.z");
    check(
        LaunchConfig::new(1, 32).with_shared_mem_bytes(1 << 20),
        "shared_mem_bytes",
    );
    // Every dimension within its limit, but more threads than a `ThreadIndex` can number.
    check(
        LaunchConfig::new((i32::MAX as u32, 65535, 65535), (32, 32)),
        "threads in the grid",
    );
    // Rejected configurations launch nothing.
    assert_eq!(s.last_launch(), None);
    let msg = s
        .launch(&k, LaunchConfig::new(1, 2048), (1.0f32, &x, &mut y))
        .unwrap_err()
        .to_string();
    assert_eq!(
        msg,
        "invalid launch configuration for `saxpy`: block.x = 2048, allowed 1..=1024"
    );
}

#[test]
fn for_elements_covers_n_and_checks_it() {
    let c = LaunchConfig::for_elements(1000).unwrap();
    assert_eq!(
        (c.grid, c.block, c.shared_mem_bytes),
        (Dim3::new(4, 1, 1), Dim3::new(256, 1, 1), 0)
    );
    let c = LaunchConfig::for_elements_with_block(1025, 1024).unwrap();
    assert_eq!(c.grid.x, 2);
    assert!(
        LaunchConfig::for_elements(0)
            .unwrap_err()
            .to_string()
            .contains("elements = 0")
    );
    assert!(LaunchConfig::for_elements_with_block(10, 0).is_err());
    let too_many = (i32::MAX as usize) * 256 + 1;
    let e = LaunchConfig::for_elements(too_many).unwrap_err();
    assert!(
        matches!(
            e,
            Error::InvalidLaunchConfig {
                dimension: "elements",
                ..
            }
        ),
        "{e}"
    );
    assert!(LaunchConfig::for_elements(too_many - 1).is_ok());
}

#[test]
fn optimal_block_size_on_the_simulator() {
    let (_, module) = sim();
    let k = module.kernel(saxpy).unwrap();
    assert_eq!(k.optimal_block_size(0).unwrap(), 256);
    let c = LaunchConfig::for_elements_optimal(300, &k).unwrap();
    assert_eq!((c.grid.x, c.block.x), (2, 256));
}

#[test]
fn wrong_kernel_name_lists_the_kernels() {
    let (_, module) = sim();
    let e = module.function("saxpi").unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("no kernel `saxpi`"), "{msg}");
    assert!(
        msg.contains("`saxpy`") && msg.contains("`affine`") && msg.contains("`write_ptr`"),
        "{msg}"
    );
    assert_eq!(module.kernel_names().len(), 6);
}

#[test]
fn untyped_launch_is_unsupported_on_the_simulator() {
    let (ctx, module) = sim();
    let f = module.function("saxpy").unwrap();
    // SAFETY: rejected before anything runs.
    let e = unsafe {
        ctx.default_stream()
            .launch_untyped(&f, LaunchConfig::new(1, 1), &mut [])
    }
    .unwrap_err();
    assert!(
        matches!(
            e,
            Error::Unsupported {
                backend: "simulator",
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("untyped launch"), "{e}");
}

#[test]
fn simulator_faults_name_the_kernel_and_thread() {
    let (ctx, module) = sim();
    let k = module.kernel(out_of_bounds).unwrap();
    let x = ctx.alloc_zeros::<u32>(4).unwrap();
    let e = ctx
        .default_stream()
        .launch(&k, LaunchConfig::new(1, 4), (&x,))
        .unwrap_err();
    match &e {
        Error::SimulatorFault {
            kernel, message, ..
        } => {
            assert_eq!(kernel, "out_of_bounds");
            assert!(message.contains("out of bounds"), "{message}");
        }
        other => panic!("unexpected {other}"),
    }
}

#[test]
fn foreign_failures_surface_at_synchronize() {
    let (ctx, module) = sim_private();
    let k = module.kernel(fails_foreign).unwrap();
    let x = ctx.alloc_zeros::<u32>(4).unwrap();
    let s = ctx.new_stream().unwrap();
    s.launch(&k, LaunchConfig::new(1, 32), (&x,)).unwrap();
    let e = s.synchronize().unwrap_err();
    match &e {
        Error::ForeignCallFailed {
            function,
            status,
            thread,
            kernel,
            ..
        } => {
            assert_eq!(function, "mul_f32_f32");
            assert_eq!(*status, 7);
            assert_eq!(*thread, 5);
            assert_eq!(kernel.as_deref(), Some("fails_foreign"));
        }
        other => panic!("unexpected {other}"),
    }
    // Reported once, then cleared. (Not `ctx.synchronize()`: it observes every stream of the
    // shared simulator context, so it would also report the failures of tests running beside
    // this one.)
    s.synchronize().unwrap();
}

/// The failing kernel launched on a stream of its own, with an output allocated there.
fn launch_failing(ctx: &Context, module: &Module) -> (crate::Stream, DeviceBuffer<u32>) {
    let k = module.kernel(fails_foreign).unwrap();
    let s = ctx.new_stream().unwrap();
    let x = s.alloc_zeros::<u32>(4).unwrap();
    s.launch(&k, LaunchConfig::new(1, 32), (&x,)).unwrap();
    (s, x)
}

fn assert_foreign_failure(r: Result<impl core::fmt::Debug>) {
    match r {
        Err(Error::ForeignCallFailed {
            function,
            status: 7,
            thread: 5,
            kernel,
            ..
        }) => {
            assert_eq!(function, "mul_f32_f32");
            assert_eq!(kernel.as_deref(), Some("fails_foreign"));
        }
        other => panic!("expected ForeignCallFailed, got {other:?}"),
    }
}

#[test]
fn foreign_failures_surface_at_every_host_read() {
    let (ctx, module) = sim_private();
    // `to_host_vec` right after the launch: the README's pattern.
    let (_s, x) = launch_failing(&ctx, &module);
    assert_foreign_failure(x.to_host_vec());
    assert_eq!(x.to_host_vec().unwrap(), [0; 4], "reported once");
    // `copy_to_host` and a stream's `memcpy_dtoh`.
    let (_s, x) = launch_failing(&ctx, &module);
    assert_foreign_failure(x.copy_to_host(&mut [0; 4]));
    let (s, x) = launch_failing(&ctx, &module);
    assert_foreign_failure(s.memcpy_dtoh(&mut [0; 4], &x));
    // An asynchronous copy to pinned memory, read on the host.
    let (s, x) = launch_failing(&ctx, &module);
    let mut pinned = ctx.alloc_pinned::<u32>(4).unwrap();
    s.memcpy_dtoh_async(&mut pinned, &x).unwrap();
    assert_foreign_failure(pinned.as_slice());
    // An event recorded after the launch.
    let (s, _x) = launch_failing(&ctx, &module);
    let e = ctx.new_event().unwrap();
    e.record(&s).unwrap();
    assert_foreign_failure(e.synchronize());
}

#[test]
fn foreign_failures_belong_to_the_module_whatever_thread_launched() {
    let (ctx, module) = sim_private();
    let k = module.kernel(fails_foreign).unwrap();
    let s = ctx.new_stream().unwrap();
    let x = s.alloc_zeros::<u32>(4).unwrap();
    std::thread::scope(|scope| {
        scope
            .spawn(|| s.launch(&k, LaunchConfig::new(1, 32), (&x,)).unwrap())
            .join()
            .unwrap()
    });
    // Synchronized from another thread than the launching one.
    assert_foreign_failure(s.synchronize());
    s.synchronize().unwrap();
}

#[test]
fn a_failure_of_a_dropped_module_is_reported_by_the_next_check() {
    let (ctx, module) = sim_private();
    let (s, x) = launch_failing(&ctx, &module);
    // The module and its kernel are gone before anything observed the stream.
    drop(module);
    assert_foreign_failure(s.synchronize());
    assert_eq!(x.to_host_vec().unwrap(), [0; 4]);
}

#[derive(Clone, Copy)]
struct saxpy_other_signature;
// SAFETY: the `saxpy` entry's parameters, under another Rust declaration (its fingerprint).
unsafe impl Kernel for saxpy_other_signature {
    const NAME: &'static str = "saxpy";
    type Params = (f32, &'static [f32], DisjointSlice<'static, f32>);
    const SIM_ENTRY: SimEntry = saxpy_entry;
    const SIGNATURE: u64 = 0x0bad;
}

#[derive(Clone, Copy)]
struct foreign_global;
// SAFETY: an entry without a fingerprint (as a CUDA C `__global__` has), taking one slice.
unsafe impl Kernel for foreign_global {
    const NAME: &'static str = "foreign_global";
    type Params = (&'static [u32],);
    const SIM_ENTRY: SimEntry = read_only_entry;
    const SIGNATURE: u64 = 0;
}
// SAFETY: reads nothing it is not given.
unsafe impl SafeKernel for foreign_global {}
unsafe fn read_only_entry(_p: *const *mut c_void) {}

#[test]
fn a_typed_kernel_must_be_the_code_of_its_rust_declaration() {
    let (ctx, module) = sim();
    // Same name and parameter sizes, another Rust signature: refused.
    let e = module.kernel(saxpy_other_signature).unwrap_err();
    assert!(
        matches!(
            &e,
            Error::KernelFingerprintMismatch { kernel, expected: 0x0bad, found }
                if kernel == "saxpy" && *found == saxpy::SIGNATURE
        ),
        "{e}"
    );
    // An entry without a fingerprint: refused, with the way out named.
    let ptx = "
        .version 7.8
        .target sm_90
        .address_size 64
        .visible .entry foreign_global(.param .u64 x, .param .u64 xn) { ret; }
    ";
    let m = ctx.load_module(ptx.as_bytes()).unwrap();
    let e = m.kernel(foreign_global).unwrap_err();
    assert!(matches!(e, Error::KernelNotVerified { .. }), "{e}");
    assert!(e.to_string().contains("kernel_unverified"), "{e}");
    // SAFETY: the entry takes (u64, u64), the lowering of `&[u32]`, and only reads it.
    let k = unsafe { m.kernel_unverified(foreign_global) }.unwrap();
    let x = ctx.alloc_zeros::<u32>(4).unwrap();
    let s = ctx.new_stream().unwrap();
    s.launch(&k, LaunchConfig::new(1, 1), (&x,)).unwrap();
}

#[test]
fn kernel_args_are_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<Context>();
    check::<Stream>();
    check::<Module>();
    check::<Function>();
    check::<TypedKernel<saxpy>>();
    check::<DeviceBuffer<f32>>();
    check::<crate::Event>();
    check::<crate::PinnedHostBuffer<f32>>();
}

#[test]
#[ignore = "timing probe, run by hand"]
fn lowering_cost_probe() {
    let ctx = Device::simulator().primary_context().unwrap();
    let (w, s, o) = (
        ctx.new_stream().unwrap(),
        ctx.new_stream().unwrap(),
        ctx.new_stream().unwrap(),
    );
    let x = w.htod_copy(&[1.0f32; 256]).unwrap();
    let mut y = w.htod_copy(&[1.0f32; 256]).unwrap();
    type P = (f32, &'static [f32], DisjointSlice<'static, f32>);
    let _ = <(f32, &DeviceBuffer<f32>, &mut DeviceBuffer<f32>) as LaunchArgs<P>>::lower(
        (1.0, &x, &mut y),
        &s.enqueuing(),
        &mut args::Lent::new::<saxpy>(),
    )
    .unwrap();
    let mut z = o.alloc_zeros::<f32>(256).unwrap();
    let _ = <(f32, &DeviceBuffer<f32>, &mut DeviceBuffer<f32>) as LaunchArgs<P>>::lower(
        (1.0, &x, &mut z),
        &o.enqueuing(),
        &mut args::Lent::new::<saxpy>(),
    )
    .unwrap();
    let n = probe_iterations(1_000_000);
    let t = std::time::Instant::now();
    for _ in 0..n {
        let mut abi = <(f32, &DeviceBuffer<f32>, &mut DeviceBuffer<f32>) as LaunchArgs<P>>::lower(
            (1.0, &x, &mut y),
            &s.enqueuing(),
            &mut args::Lent::new::<saxpy>(),
        )
        .unwrap();
        let mut params = args::abi::ParamArray::new();
        <(f32, &DeviceBuffer<f32>, &mut DeviceBuffer<f32>) as LaunchArgs<P>>::fill(
            &mut abi,
            &mut params,
        );
        std::hint::black_box(params.as_mut_slice());
    }
    println!(
        "lower + fill of (f32, &x, &mut y), x shared by 3 streams: {:.1} ns",
        t.elapsed().as_nanos() as f64 / n as f64
    );
}

/// Iterations of a timing probe: `GPUKERNEL_PROBE_N`, else `default` (fewer under valgrind,
/// whose instruction counts do not depend on the machine's load).
fn probe_iterations(default: usize) -> usize {
    std::env::var("GPUKERNEL_PROBE_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
#[ignore = "timing probe, run by hand"]
fn lowering_16_arrays_cost_probe() {
    // bench_launch's "16 arrays" shape: 16 buffers made on the launching stream, read.
    let ctx = Device::simulator().primary_context().unwrap();
    let s = ctx.new_stream().unwrap();
    let xs: Vec<DeviceBuffer<f32>> = (0..16)
        .map(|_| s.htod_copy(&[1.0f32; 256]).unwrap())
        .collect();
    type S = &'static [f32];
    type P = (S, S, S, S, S, S, S, S, S, S, S, S, S, S, S, S);
    let n = probe_iterations(1_000_000);
    let t = std::time::Instant::now();
    for _ in 0..n {
        let x = &xs;
        let args = (
            &x[0], &x[1], &x[2], &x[3], &x[4], &x[5], &x[6], &x[7], &x[8], &x[9], &x[10], &x[11],
            &x[12], &x[13], &x[14], &x[15],
        );
        let mut abi =
            LaunchArgs::<P>::lower(args, &s.enqueuing(), &mut args::Lent::new::<saxpy>()).unwrap();
        let mut params = args::abi::ParamArray::new();
        <(
            &DeviceBuffer<f32>,
            &DeviceBuffer<f32>,
            &DeviceBuffer<f32>,
            &DeviceBuffer<f32>,
            &DeviceBuffer<f32>,
            &DeviceBuffer<f32>,
            &DeviceBuffer<f32>,
            &DeviceBuffer<f32>,
            &DeviceBuffer<f32>,
            &DeviceBuffer<f32>,
            &DeviceBuffer<f32>,
            &DeviceBuffer<f32>,
            &DeviceBuffer<f32>,
            &DeviceBuffer<f32>,
            &DeviceBuffer<f32>,
            &DeviceBuffer<f32>,
        ) as LaunchArgs<P>>::fill(&mut abi, &mut params);
        std::hint::black_box(params.as_mut_slice());
    }
    println!(
        "lower + fill of 16 buffers read on their own stream: {:.1} ns",
        t.elapsed().as_nanos() as f64 / n as f64
    );
}

#[test]
fn the_cross_stream_benchmark_sequence_waits_only_at_first() {
    let (ctx, module) = sim();
    let k = module.kernel(saxpy).unwrap();
    let (writer, stream, other) = (
        ctx.new_stream().unwrap(),
        ctx.new_stream().unwrap(),
        ctx.new_stream().unwrap(),
    );
    let x = writer.htod_copy(&[1.0f32; 256]).unwrap();
    let mut y = writer.htod_copy(&[1.0f32; 256]).unwrap();
    let cfg = LaunchConfig::for_elements(256).unwrap();
    stream.launch(&k, cfg, (0.5f32, &x, &mut y)).unwrap();
    y.to_host_vec().unwrap();
    let mut z = writer.alloc_zeros::<f32>(256).unwrap();
    other.launch(&k, cfg, (0.5f32, &x, &mut z)).unwrap();
    other.synchronize().unwrap();
    let before = (x.raw_parts().tracker.waits(), y.raw_parts().tracker.waits());
    for _ in 0..100 {
        stream.launch(&k, cfg, (0.5f32, &x, &mut y)).unwrap();
    }
    assert_eq!(
        (x.raw_parts().tracker.waits(), y.raw_parts().tracker.waits()),
        before
    );
}

#[test]
#[ignore = "timing probe, run by hand"]
fn aliasing_check_cost_probe() {
    let ctx = Device::simulator().primary_context().unwrap();
    let x = ctx.htod_copy(&[1.0f32; 256]).unwrap();
    let mut y = ctx.alloc_zeros::<f32>(256).unwrap();
    let (px, py) = (x.raw_parts(), crate::DeviceSliceMut::raw_parts_mut(&mut y));
    let n = 10_000_000;
    let t = std::time::Instant::now();
    for _ in 0..n {
        // What the check adds to a launch of `saxpy(a, &x, &mut y)`: the scalar lends nothing.
        let mut lent = args::Lent::new::<saxpy>();
        lent.arg = 1;
        lent.add(std::hint::black_box(&px), "&[f32]").unwrap();
        lent.arg = 2;
        lent.add(std::hint::black_box(&py), "DisjointSlice<f32>")
            .unwrap();
        std::hint::black_box(&lent);
    }
    println!(
        "aliasing check of (f32, &x, &mut y): {:.2} ns",
        t.elapsed().as_nanos() as f64 / n as f64
    );
}

#[test]
fn the_aliasing_check_refuses_overlap_and_names_both_arguments() {
    let ctx = Device::simulator().primary_context().unwrap();
    let y = ctx.alloc_zeros::<f32>(256).unwrap();
    let pr = y.raw_parts();
    let pw = crate::memory::RawParts {
        access: crate::memory::tracker::Access::Write,
        ..pr
    };
    let mut lent = args::Lent::new::<saxpy>();
    lent.arg = 1;
    lent.add(&pr, core::any::type_name::<&'static [f32]>())
        .unwrap();
    // A second reader of the same bytes is fine.
    lent.arg = 2;
    lent.add(&pr, "&[f32]").unwrap();
    lent.arg = 3;
    let e = lent
        .add(&pw, core::any::type_name::<DisjointSlice<'static, f32>>())
        .unwrap_err();
    let s = e.to_string();
    assert!(matches!(e, Error::AliasedArguments { .. }), "{s}");
    assert!(
        s.contains("argument 1 (`&[f32]`) and argument 3 (`DisjointSlice<f32>`)"),
        "{s}"
    );
}

#[test]
fn a_read_after_a_write_of_the_same_bytes_is_refused() {
    let ctx = Device::simulator().primary_context().unwrap();
    let y = ctx.alloc_zeros::<f32>(256).unwrap();
    let other = ctx.alloc_zeros::<f32>(256).unwrap();
    let pr = y.raw_parts();
    let pw = crate::memory::RawParts {
        access: crate::memory::tracker::Access::Write,
        ..pr
    };
    let mut lent = args::Lent::new::<saxpy>();
    lent.arg = 1;
    lent.add(&pw, "DisjointSlice<f32>").unwrap();
    // Reads of other memory pass; a read of the written bytes does not, however many reads
    // came between.
    for arg in 2..5 {
        lent.arg = arg;
        lent.add(&other.raw_parts(), "&[f32]").unwrap();
    }
    lent.arg = 5;
    let e = lent.add(&pr, "&[f32]").unwrap_err().to_string();
    assert!(e.contains("argument 1") && e.contains("argument 5"), "{e}");
}

/// An empty buffer at address 0 (lent by another library) reaches the kernel as an aligned,
/// non-null pointer: the device side of a slice parameter assumes it is never null.
#[test]
fn an_empty_buffer_at_address_zero_is_passed_as_a_non_null_pointer() {
    let (ctx, module) = sim();
    let s = ctx.default_stream();
    let x = ctx.htod_copy(&[1.0f32; 3]).unwrap();
    // SAFETY: no element: nothing is ever read or written through the null pointer.
    let mut y = unsafe {
        DeviceBuffer::<f32>::from_raw_parts_with_owner(&ctx, crate::DevicePtr::null(), 0, ())
    }
    .unwrap();
    assert_eq!(y.as_raw(), 0);
    let args = (2.5f32, &x, &mut y);
    let mut abi = LaunchArgs::<(f32, &'static [f32], DisjointSlice<'static, f32>)>::lower(
        args,
        &s.enqueuing(),
        &mut args::Lent::new::<saxpy>(),
    )
    .unwrap();
    let mut params = args::abi::ParamArray::new();
    <(f32, &DeviceBuffer<f32>, &mut DeviceBuffer<f32>) as LaunchArgs<(
        f32,
        &'static [f32],
        DisjointSlice<'static, f32>,
    )>>::fill(&mut abi, &mut params);
    let out = params.as_mut_slice();
    assert_eq!(out.len(), 5);
    // SAFETY: each pointer points into `abi`, at a value of the type the ABI says.
    unsafe {
        assert_eq!(*(out[3] as *const u64), 256, "the empty buffer's address");
        assert_eq!(*(out[4] as *const u64), 0);
    }
    let k = module.kernel(saxpy).unwrap();
    s.launch(&k, LaunchConfig::new(1, 32), (2.5f32, &x, &mut y))
        .unwrap();
    s.synchronize().unwrap();
}
