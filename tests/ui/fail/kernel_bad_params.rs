use gpukernel_device::prelude::*;

#[kernel]
pub fn everything_wrong(
    pair: (f32, f32),
    lanes: [f32; 4],
    one: &f32,
    name: &str,
    text: String,
    items: Vec<f32>,
    callback: fn(f32) -> f32,
    wide: u128,
    letter: char,
    any: impl Copy,
) {
    let _ = (
        pair, lanes, one, name, text, items, callback, wide, letter, any,
    );
}

fn main() {}
