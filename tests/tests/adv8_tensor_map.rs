//! Tensor maps (`TensorMapNd`) at the limits of their checks: a box whose bytes exceed what
//! `box_bytes` (a `u32`) can say, or what a block's shared memory can ever hold.

use gpukernel_runtime::{Device, Error, Swizzle, TensorMapNd};

/// 256⁴ · 4 f32 = 2³⁶ bytes in one box: every side within 1 to 256, the rows whole 16-byte
/// chunks, the tensor (4 elements) inside the memory. `box_bytes` overflowed its `u32` (a
/// panic in debug builds, a wrong count in release) and no block can hold such a box; the map
/// is refused, naming the box.
#[test]
fn a_box_larger_than_any_shared_memory_is_refused() {
    let ctx = Device::simulator().primary_context().unwrap();
    let m = ctx.alloc_zeros::<f32>(4).unwrap();
    let r = TensorMapNd::contiguous(
        &ctx,
        &m,
        [1, 1, 1, 1, 4],
        [256, 256, 256, 256, 4],
        Swizzle::None,
    );
    let e = match r {
        Err(e) => e,
        Ok(map) => panic!(
            "a box of 2^36 bytes was accepted (box_bytes says {})",
            map.box_bytes()
        ),
    };
    assert!(matches!(e, Error::TensorMapInvalid { .. }), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("shared memory") && msg.contains("box"),
        "{msg}"
    );
}

/// 256 × 256 f32 (256 KiB): larger than the 227 KiB a block may have, so no load can land it.
#[test]
fn a_box_beyond_the_block_shared_memory_limit_is_refused() {
    let ctx = Device::simulator().primary_context().unwrap();
    let m = ctx.alloc_zeros::<f32>(256 * 256).unwrap();
    let e = TensorMapNd::contiguous(&ctx, &m, [256, 256], [256, 256], Swizzle::None).unwrap_err();
    assert!(e.to_string().contains("262144 bytes"), "{e}");
    // The largest square box that fits is accepted, and says its bytes.
    let map = TensorMapNd::contiguous(&ctx, &m, [256, 256], [128, 256], Swizzle::None).unwrap();
    assert_eq!(map.box_bytes(), 128 * 256 * 4);
}
