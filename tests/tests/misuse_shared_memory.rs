//! Static shared memory counts against a block's limit in the simulator as on the GPU: a
//! kernel with 40 KiB of `shared_array!` gets 8 KiB of dynamic shared memory without opting
//! in, so a launch asking for 48 KiB (88 KiB in all) is refused, as the driver refuses it.
//! The simulator used to report no static shared memory and run such a launch.

use ffi_examples_kernels::PTX;
use ffi_examples_kernels::reduce::{STATIC_40K_ELEMENTS, shared_40k_static};
use gpukernel_runtime::link::Linker;
use gpukernel_runtime::{Error, Kernel, LaunchConfig};
use gpukernel_tests::devices;

const KIB: u32 = 1024;

#[test]
fn static_shared_memory_counts_against_the_block_limit() {
    let (blocks, threads) = (2u32, 128u32);
    let n = (blocks * threads) as usize;
    for (name, ctx) in devices() {
        let module = Linker::new(&ctx)
            .and_then(|mut l| {
                l.add_ptx_kernels(PTX, "kernels.ptx", &[shared_40k_static::NAME])
                    .link_and_load()
            })
            .unwrap();
        let k = module.kernel(shared_40k_static).unwrap();
        // 40 KiB of `shared_array!`, nothing more: the kernel cannot fail a foreign call, so
        // it keeps no kernel-name record (16 bytes of shared memory and two stores per thread
        // in every kernel of a crate with foreign calls, before nvptx-builder's kernel-name
        // pass).
        let stat = k.static_shared_bytes();
        assert_eq!(
            stat,
            40 * KIB,
            "{name}: the static shared memory of `shared_40k_static`"
        );
        let room = 48 * KIB - stat;
        let stream = ctx.default_stream();
        let mut out = ctx.alloc_zeros::<u32>(n).unwrap();
        let want = |dynamic_bytes: u32| -> Vec<u32> {
            (0..n)
                .map(|i| {
                    let t = i % threads as usize;
                    let v = (STATIC_40K_ELEMENTS - 1 - t) as u32;
                    if t == 0 { v + dynamic_bytes / 4 } else { v }
                })
                .collect()
        };

        // Static + dynamic exactly at the limit without opting in (48 KiB).
        let fits = LaunchConfig::new(blocks, threads).with_shared_mem_bytes(room);
        stream.launch(&k, fits, (&mut out,)).unwrap();
        assert_eq!(out.to_host_vec().unwrap(), want(room), "{name}");

        // 40 + 48 KiB: refused before it runs.
        let over = LaunchConfig::new(blocks, threads).with_shared_mem_bytes(48 * KIB);
        match stream.launch(&k, over, (&mut out,)) {
            Err(Error::InvalidLaunchConfig { kernel, .. }) => {
                assert_eq!(kernel, "shared_40k_static", "{name}")
            }
            other => panic!("{name}: 40 KiB static + 48 KiB dynamic was not refused: {other:?}"),
        }
        let e = stream
            .launch(&k, over.with_shared_mem_bytes(room + 1), (&mut out,))
            .unwrap_err();
        assert!(
            matches!(e, Error::InvalidLaunchConfig { .. }),
            "{name}: {e}"
        );

        // Opting in leaves the device's opt-in limit minus the static 40 KiB.
        k.set_max_dynamic_shared_bytes(48 * KIB).unwrap();
        stream.launch(&k, over, (&mut out,)).unwrap();
        assert_eq!(out.to_host_vec().unwrap(), want(48 * KIB), "{name}");
        let optin = ctx
            .device()
            .properties()
            .unwrap()
            .max_shared_memory_per_block_optin;
        assert!(
            k.set_max_dynamic_shared_bytes(optin - stat + 1).is_err(),
            "{name}: more than the opt-in limit minus the static arrays was accepted"
        );
    }
}
