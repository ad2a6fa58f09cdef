//! One link, every device: [`Linker::link_and_load_on`] links once per architecture (the
//! on-disk cache shared by every link) and loads the image on each context;
//! [`LinkedImage::load`] loads one image on any context of its kind.

use crate::context::Context;
use crate::error::{Error, Result};
use crate::link::{Arch, LinkedImage, Linker};
use crate::module::Module;

use super::linker::Target;

impl LinkedImage {
    /// Loads the image as a module of `ctx`: a cubin on any CUDA device that runs its
    /// architecture (several devices load one link), a simulator image on any simulated
    /// device. A cubin on the simulator, or a simulator image on a GPU, is
    /// [`Error::Unsupported`]; a cubin for another architecture is the driver's
    /// [`Error::ModuleLoad`].
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// use gpukernel_runtime::link::Linker;
    /// let image = Linker::new(&ctx)?.add_ptx(&kernels_ptx(), "kernels.ptx").link()?;
    /// let module = image.load(&ctx)?; // the same image on every device of its kind
    /// assert!(module.kernel_names().contains(&"saxpy".to_owned()));
    /// # Ok(()) }
    /// ```
    pub fn load(&self, ctx: &Context) -> Result<Module> {
        match (self.is_simulator(), ctx.is_simulator()) {
            (true, true) => Module::from_simulator_image(ctx.inner.clone(), &self.simulator_image),
            (false, false) => ctx.load_module(&self.cubin),
            (true, false) => Err(Error::Unsupported {
                operation: "LinkedImage::load (a simulator link)",
                backend: "CUDA device",
                hint: Some(
                    "link for the device: `Linker::new(&ctx)` or `Linker::link_and_load_on`",
                ),
            }),
            (false, true) => Err(Error::Unsupported {
                operation: "LinkedImage::load (a cubin)",
                backend: "simulator",
                hint: Some(
                    "link for the simulator: `Linker::new(&sim_ctx)` or `Linker::link_and_load_on`",
                ),
            }),
        }
    }
}

impl Linker {
    /// Links the inputs once per architecture among `contexts` and loads the image on every
    /// context, returning one module per context, in order: for several GPUs of one kind, one
    /// link (one NVRTC compile, one cache entry) and a load per device. The on-disk cache is
    /// shared, so a later call (or process) for the same inputs loads without linking. One
    /// self-contained PTX loads on each device as a whole program, as in
    /// [`link_and_load`](Self::link_and_load).
    ///
    /// Each context links for its device's own architecture (an architecture assumed with
    /// [`assume_compute_capability`](Self::assume_compute_capability) is not applied); the
    /// simulator's contexts share one simulator link. An empty list is
    /// [`Error::Unsupported`] naming the call.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// use gpukernel_runtime::link::Linker;
    /// let contexts: Vec<_> = Device::all()?.iter().map(|d| d.primary_context()).collect::<Result<_, _>>()?;
    /// let modules = Linker::new(&contexts[0])?
    ///     .add_ptx(&kernels_ptx(), "kernels.ptx")
    ///     .link_and_load_on(&contexts)?; // one link, one module per device
    /// assert_eq!(modules.len(), contexts.len());
    /// # Ok(()) }
    /// ```
    pub fn link_and_load_on(&self, contexts: &[Context]) -> Result<Vec<Module>> {
        let _range = crate::profile::nvtx_range!("Linker::link_and_load_on");
        if contexts.is_empty() {
            return Err(Error::Unsupported {
                operation: "Linker::link_and_load_on with no context",
                backend: "empty device list",
                hint: Some("pass the contexts to load on, e.g. from `Device::all()`"),
            });
        }
        let mut images: Vec<(Option<Arch>, LinkedImage)> = Vec::new();
        let mut modules = Vec::with_capacity(contexts.len());
        for ctx in contexts {
            let linker = self.retargeted(ctx)?;
            if let Some(module) = linker.load_whole_program(ctx)? {
                modules.push(module);
                continue;
            }
            let arch = linker.arch();
            let at = match images.iter().position(|(a, _)| *a == arch) {
                Some(i) => i,
                None => {
                    images.push((arch, linker.link()?));
                    images.len() - 1
                }
            };
            modules.push(images[at].1.load(ctx)?);
        }
        Ok(modules)
    }

    /// This linker (inputs and options) for `ctx`'s device.
    fn retargeted(&self, ctx: &Context) -> Result<Linker> {
        let mut l = self.clone();
        l.target = if ctx.is_simulator() {
            Target::Simulator {
                ctx: Some(ctx.clone()),
            }
        } else {
            let (major, minor) = ctx.compute_capability()?;
            Target::Cuda {
                ctx: ctx.clone(),
                arch: Arch::from_compute_capability(major, minor),
            }
        };
        Ok(l)
    }
}
