//! Build script of the examples: builds the precompiled foreign code (cubin, fatbin, static
//! library, object) with nvcc; see `foreign.rs`.
mod foreign;

fn main() {
    foreign::build_foreign();
}
