//! Machine code embedded at build time: a kernels crate's `FATBIN` (nvptx-builder's
//! `<name>.fatbin`) holds SASS for sm_80 and sm_90 and the PTX, loads with `ctx.load_module`
//! on every test device (the simulator reads its PTX entry) and runs its kernels; kernels that
//! call foreign functions left for the run-time Linker are not in it.

use ffi_examples_kernels::{FATBIN, saxpy};
use gpukernel_runtime::{ImageKind, Kernel, LaunchConfig};
use gpukernel_tests::devices;

/// `(kind, sm)` of each entry of a fatbin: kind 1 is PTX, 2 an ELF (SASS).
fn entries(fatbin: &[u8]) -> Vec<(u16, u32)> {
    let u16_at = |b: &[u8], at: usize| u16::from_le_bytes([b[at], b[at + 1]]);
    let u32_at = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    assert_eq!(u32_at(fatbin, 0), 0xBA55_ED50, "not a fatbin");
    let header = u16_at(fatbin, 6) as usize;
    let end = header + u64_at(fatbin, 8) as usize;
    let mut at = header;
    let mut out = Vec::new();
    while at + 32 <= end {
        let e = &fatbin[at..];
        out.push((u16_at(e, 0), u32_at(e, 28)));
        at += u32_at(e, 4) as usize + u64_at(e, 8) as usize;
    }
    out
}

#[test]
fn the_fatbin_holds_sass_for_sm_80_and_sm_90_and_the_ptx() {
    for (name, fatbin) in [
        ("ffi-examples-kernels", FATBIN),
        ("ffi-examples-lto-kernels", ffi_examples_lto_kernels::FATBIN),
    ] {
        assert_eq!(
            ImageKind::detect(fatbin).unwrap(),
            ImageKind::Fatbin,
            "{name}"
        );
        let e = entries(fatbin);
        assert!(
            e.contains(&(2, 80)) && e.contains(&(2, 90)),
            "{name}: {e:?}"
        );
        assert!(
            e.iter().any(|&(kind, _)| kind == 1),
            "{name}: no PTX entry: {e:?}"
        );
    }
    // An architecture-specific build gets SASS for that architecture alone.
    let e = entries(ffi_examples_hopper_kernels::FATBIN);
    assert_eq!(e.iter().filter(|&&(kind, _)| kind == 2).count(), 1, "{e:?}");
}

#[test]
fn the_fatbin_loads_and_runs_on_every_device() {
    for (device, ctx) in devices() {
        let module = ctx
            .load_module(FATBIN)
            .unwrap_or_else(|e| panic!("{device}: {e}"));
        let names = module.kernel_names();
        for k in [saxpy::NAME, "empty_kernel", "sum_f32", "sgemm"] {
            assert!(
                names.iter().any(|n| n == k),
                "{device}: {k} missing: {names:?}"
            );
        }
        // Calls a foreign function only the run-time Linker resolves: no SASS without that link.
        assert!(
            !names.iter().any(|n| n == "multiply_vectors"),
            "{device}: {names:?}"
        );
        let n = 1000;
        let xs: Vec<f32> = (0..n).map(|i| i as f32).collect();
        let x = ctx.htod_copy(&xs).unwrap();
        let mut y = ctx.htod_copy(&vec![1.0f32; n]).unwrap();
        let k = module.kernel(saxpy).unwrap();
        ctx.default_stream()
            .launch(
                &k,
                LaunchConfig::for_elements(n).unwrap(),
                (2.0f32, &x, &mut y),
            )
            .unwrap();
        let got = y.to_host_vec().unwrap();
        for i in 0..n {
            assert_eq!(got[i], 2.0f32.mul_add(xs[i], 1.0), "{device}: y[{i}]");
        }
    }
}

#[test]
fn foreign_code_linked_at_build_time_is_in_the_fatbin() {
    use ffi_examples_lto_kernels::multiply_vectors;
    for (device, ctx) in devices() {
        let module = ctx
            .load_module(ffi_examples_lto_kernels::FATBIN)
            .unwrap_or_else(|e| panic!("{device}: {e}"));
        let k = module.kernel(multiply_vectors).unwrap();
        let n = 513;
        let a: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
        let b: Vec<f32> = (0..n).map(|i| 3.0 - i as f32).collect();
        let (da, db) = (ctx.htod_copy(&a).unwrap(), ctx.htod_copy(&b).unwrap());
        let mut out = ctx.alloc_zeros::<f32>(n).unwrap();
        ctx.default_stream()
            .launch(
                &k,
                LaunchConfig::for_elements(n).unwrap(),
                (&da, &db, &mut out),
            )
            .unwrap();
        let got = out.to_host_vec().unwrap();
        for i in 0..n {
            assert_eq!(got[i], a[i] * b[i], "{device}: out[{i}]");
        }
    }
}

/// On a GPU the Linker loads the fatbin as it is: machine code for the device, nothing linked
/// or compiled (`LoadPath::MachineCode`).
#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn the_linker_loads_the_fatbin_s_machine_code_as_it_is() {
    use gpukernel_runtime::Device;
    use gpukernel_runtime::link::{InputKind, Linker, LoadPath};
    let ctx = Device::get(0).unwrap().primary_context().unwrap();
    let mut linker = Linker::new(&ctx).unwrap();
    linker.add_data(InputKind::Fatbin, FATBIN, "kernels.fatbin");
    match linker.load_path().unwrap() {
        LoadPath::MachineCode { input, arch } => {
            assert_eq!(input, "kernels.fatbin");
            let (major, minor) = ctx.compute_capability().unwrap();
            assert_eq!(arch.sm(), major * 10 + minor);
        }
        other => panic!("expected the machine code to load as it is, got {other:?}"),
    }
    let module = linker.link_and_load().unwrap();
    let k = module.kernel(saxpy).unwrap();
    let x = ctx.htod_copy(&[1.0f32, 2.0, 3.0]).unwrap();
    let mut y = ctx.htod_copy(&[1.0f32; 3]).unwrap();
    ctx.default_stream()
        .launch(
            &k,
            LaunchConfig::for_elements(3).unwrap(),
            (2.0f32, &x, &mut y),
        )
        .unwrap();
    assert_eq!(y.to_host_vec().unwrap(), [3.0, 5.0, 7.0]);
}
