//! Shared helpers of the gpukernel examples.
//!
//! Each example in `examples/` picks the GPU when one is present and the simulator otherwise,
//! links the Rust kernels' PTX with foreign CUDA C code, launches, and checks the result
//! against a host computation (exiting non-zero on a mismatch).

pub mod bench;

/// Compares `got` with `want` element-wise with a relative tolerance; returns a message
/// naming the first mismatching index, and on success prints that the results match the host.
pub fn check_close(what: &str, got: &[f32], want: &[f32], rel_tol: f32) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!(
            "{what}: {} results, expected {}",
            got.len(),
            want.len()
        ));
    }
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let tol = rel_tol * w.abs().max(1.0);
        // Written so that NaN fails the check too.
        let within = (g - w).abs() <= tol;
        if !within {
            return Err(format!(
                "{what}: element {i} is {g}, expected {w} (tolerance {tol})"
            ));
        }
    }
    println!("{what}: {} results match the host", got.len());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_close_finds_the_first_mismatch() {
        assert!(check_close("x", &[1.0, 2.0], &[1.0, 2.0], 1e-6).is_ok());
        let e = check_close("x", &[1.0, 2.5], &[1.0, 2.0], 1e-6).unwrap_err();
        assert!(e.contains("element 1"), "{e}");
        assert!(check_close("x", &[f32::NAN], &[1.0], 1e-6).is_err());
        assert!(check_close("x", &[1.0], &[1.0, 2.0], 1e-6).is_err());
    }
}
