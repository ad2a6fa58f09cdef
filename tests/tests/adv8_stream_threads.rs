//! Stream ordering from several host threads at once: four threads launch on their own
//! streams into disjoint views of one buffer, reading a shared input, while another thread
//! allocates and frees on the default stream and another reads the input back. Every
//! device: the simulator here (the trackers' locks, grants and in-flight marks under
//! contention: no deadlock, panic or lost update), and with the `gpu` feature the GPU, where
//! a missed ordering would show as a lost update.

use ffi_examples_kernels::{PTX, saxpy};
use gpukernel_runtime::LaunchConfig;
use gpukernel_runtime::link::Linker;
use gpukernel_tests::devices;

#[test]
fn launches_from_four_threads_into_views_of_one_buffer_keep_every_update() {
    const M: usize = 4096;
    for (name, ctx) in devices() {
        let rounds = if ctx.is_simulator() { 30 } else { 400 };
        // The examples' PTX also declares foreign functions: keep only `saxpy`.
        let md = Linker::new(&ctx)
            .unwrap()
            .add_ptx_kernels(PTX, "kernels.ptx", &["saxpy"])
            .link_and_load()
            .unwrap();
        let k = md.kernel(saxpy).unwrap();
        let x = ctx.htod_copy(&vec![1.0f32; M]).unwrap();
        let mut y = ctx.alloc_zeros::<f32>(4 * M).unwrap();
        {
            let (mut lo, mut hi) = y.split_at_mut(2 * M).unwrap();
            let (a, b) = lo.split_at_mut(M).unwrap();
            let (c, d) = hi.split_at_mut(M).unwrap();
            let cfg = LaunchConfig::for_elements(M).unwrap();
            std::thread::scope(|sc| {
                for mut part in [a, b, c, d] {
                    let (ctx, k, x) = (&ctx, &k, &x);
                    sc.spawn(move || {
                        let s = ctx.new_stream().unwrap();
                        for _ in 0..rounds {
                            s.launch(k, cfg, (1.0f32, x, &mut part)).unwrap();
                        }
                    });
                }
                sc.spawn(|| {
                    for i in 0..rounds {
                        let t = ctx.alloc_zeros::<f32>(1 + i).unwrap();
                        drop(t);
                    }
                });
                sc.spawn(|| {
                    for _ in 0..rounds / 4 {
                        assert!(x.to_host_vec().unwrap().iter().all(|&v| v == 1.0));
                    }
                });
            });
        }
        let got = y.to_host_vec().unwrap();
        let lost = got.iter().filter(|&&v| v != rounds as f32).count();
        println!(
            "PROBE stream_threads [{name}] {lost} of {} elements lost an update",
            4 * M
        );
        assert_eq!(lost, 0, "{name}");
    }
}
