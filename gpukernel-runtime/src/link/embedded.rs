//! CUDA C++ sources embedded in the program at compile time ([`include_cuda!`]), so that a
//! link does not depend on the directory the program runs from.

/// A CUDA C++ source embedded with [`include_cuda!`](crate::include_cuda): its text, the name
/// it was included by (relative to the including crate, as written), and where it was on the
/// build machine (used only to find its `#include`s while that folder exists).
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// use gpukernel_runtime::{include_cuda, link::CudaSource};
/// let src: CudaSource = include_cuda!("../ffi-examples/kernels/cuda/functions.cu");
/// assert_eq!(src.name, "../ffi-examples/kernels/cuda/functions.cu"); // NVRTC's errors name it so
/// assert!(src.text.contains("__device__"));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CudaSource {
    /// The source text.
    pub text: &'static str,
    /// The path as written in `include_cuda!`, relative to the including crate's directory;
    /// NVRTC's errors name the file by it (`../kernels/cuda/functions.cu(12): error ...`).
    pub name: &'static str,
    /// The absolute path at compile time.
    pub build_path: &'static str,
}

impl CudaSource {
    /// The folder of [`build_path`](CudaSource::build_path), if it still exists: the source's
    /// own `#include "..."`s are searched there (after headers given to
    /// [`Linker::header`](crate::link::Linker::header)).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let src = gpukernel_runtime::include_cuda!("../ffi-examples/kernels/cuda/functions.cu");
    /// if let Some(dir) = src.build_dir() {
    ///     println!("its #includes are searched in {}", dir.display()); // while the folder exists
    /// }
    /// # Ok(()) }
    /// ```
    pub fn build_dir(&self) -> Option<std::path::PathBuf> {
        std::path::Path::new(self.build_path)
            .parent()
            .filter(|d| d.is_dir())
            .map(std::path::Path::to_path_buf)
    }
}

/// Embeds a CUDA C++ source file at compile time, as a
/// [`CudaSource`](crate::link::CudaSource) for [`Linker::add_cuda`](crate::link::Linker::add_cuda).
///
/// The path is relative to the directory of the crate that uses the macro (its
/// `CARGO_MANIFEST_DIR`), never to the directory the program runs from; a missing file is a
/// compile error naming the full path.
///
/// ```no_run
/// use gpukernel_runtime::{Context, include_cuda, link::Linker};
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # const PTX: &str = "";
/// let ctx = Context::default_context()?;
/// let module = Linker::new(&ctx)?
///     .add_ptx(PTX, "kernels.ptx")
///     .add_cuda(include_cuda!("../ffi-examples/kernels/cuda/functions.cu"))
///     .link_and_load()?;
/// # Ok(()) }
/// ```
#[macro_export]
macro_rules! include_cuda {
    ($path:literal) => {
        $crate::link::CudaSource {
            text: ::core::include_str!(::core::concat!(
                ::core::env!("CARGO_MANIFEST_DIR"),
                "/",
                $path
            )),
            name: $path,
            build_path: ::core::concat!(::core::env!("CARGO_MANIFEST_DIR"), "/", $path),
        }
    };
}

#[cfg(test)]
mod tests {
    #[test]
    fn embeds_the_file_relative_to_the_crate() {
        let src = crate::include_cuda!("../ffi-examples/kernels/cuda/functions.cu");
        assert!(src.text.contains("mul_f32_f32"));
        assert_eq!(src.name, "../ffi-examples/kernels/cuda/functions.cu");
        assert!(
            src.build_dir()
                .is_some_and(|d| d.join("gpukernel_abi.h").is_file())
        );
    }
}
