//! Soundness probe: `TmaElement` is a safe, unsealed trait, and `TensorMap2D::new` checks the
//! extent with `size_of::<T>()` while the hardware (and the simulator) use the size of
//! `T::DATA_TYPE`. A one-byte element type that claims FLOAT64 gets a map eight times wider
//! than the memory it borrows: a TMA load through it reads past the view (and a store would
//! write there). Prints `PROBE <name> HOLE|OK`; with `GPUKERNEL_ADV_STRICT=1` a HOLE fails.

use ffi_examples_hopper_kernels::PTX;
use ffi_examples_hopper_kernels::adv::adv_tma_load_box;
use gpukernel_runtime::{
    Context, DeviceCopy, LaunchConfig, Module, Swizzle, TensorMap2D, TmaElement,
};
use gpukernel_tests::devices;

/// A byte, entirely safe to define.
#[derive(Clone, Copy, Debug, DeviceCopy)]
#[repr(transparent)]
struct Byte(u8);

/// Safe code: the trait is neither `unsafe` nor sealed.
impl TmaElement for Byte {
    const DATA_TYPE: u32 = 8; // CU_TENSOR_MAP_DATA_TYPE_FLOAT64: 8 bytes
}

fn hopper_module(name: &str, ctx: &Context) -> Option<Module> {
    if !ctx.is_simulator() && ctx.compute_capability().unwrap() != (9, 0) {
        println!("{name}: not compute capability 9.0");
        return None;
    }
    Some(ctx.load_module(PTX.as_bytes()).unwrap())
}

#[test]
fn a_lying_tma_element_reads_past_the_view() {
    for (name, ctx) in devices() {
        let Some(md) = hopper_module(&name, &ctx) else {
            continue;
        };
        // 1024 bytes: the first 256 are the view (value 1), the rest are outside it (0xEE).
        let host: Vec<Byte> = (0..1024)
            .map(|i| Byte(if i < 256 { 1 } else { 0xEE }))
            .collect();
        let all = ctx.htod_copy(&host).unwrap();
        let view = all.slice(..256).unwrap();
        // 16 rows of 16 one-byte elements, pitch 16 bytes: fits the 256-byte view by the
        // checks, which count size_of::<Byte>() = 1 byte per element.
        let map = TensorMap2D::new(&ctx, &view, [16, 16], 16, [16, 16], Swizzle::None);
        let map = match map {
            Ok(m) => m,
            Err(e) => {
                println!("PROBE tma_element_lies [{name}] OK refused: {e}");
                continue;
            }
        };
        let k = md.kernel(adv_tma_load_box).unwrap();
        // What the hardware moves: 16 × 16 elements of 8 bytes.
        let hw_bytes = 16 * 16 * 8u32;
        let mut out = ctx.alloc_zeros::<u32>(512).unwrap();
        let s = ctx.default_stream();
        // SAFETY: the map is from the runtime and its box is `hw_bytes` (what the copy engine
        // moves for FLOAT64); nobody writes `all`.
        let r = unsafe {
            s.launch_unchecked(
                &k,
                LaunchConfig::new(1, 512),
                (map.param(), hw_bytes, &mut out),
            )
        }
        .and_then(|()| s.synchronize());
        let got = out.to_host_vec().unwrap_or_default();
        let outside = got.iter().filter(|&&w| w == 0xEEEE_EEEE).count();
        let hole = outside > 0;
        let verdict = if hole { "HOLE" } else { "OK" };
        println!(
            "PROBE tma_element_lies [{name}] {verdict} map.box_bytes() = {} but the copy moved {hw_bytes}; launch {:?}; {outside} of 512 words read from outside the 256-byte view",
            map.box_bytes(),
            r.map_err(|e| e.to_string())
        );
        if hole && std::env::var_os("GPUKERNEL_ADV_STRICT").is_some() {
            panic!("PROBE tma_element_lies [{name}] HOLE");
        }
    }
}
