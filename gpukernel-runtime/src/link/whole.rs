//! The whole-program load: when a link's inputs amount to one self-contained PTX module (no
//! function or variable it declares is defined elsewhere, nothing else to link), there is
//! nothing to link, and [`Linker::link_and_load`] hands that PTX to the driver's JIT at module
//! load (`cuModuleLoadDataEx`, with the link's code generation options) instead of compiling
//! it as relocatable code for cuLink. Whole-program code is what `ctx.load_module(PTX)` and a
//! CUDA C kernel compiled without `-rdc` get: ptxas may inline the division and square-root
//! slow paths and allocate registers across the whole kernel (Black-Scholes on sm_90: 376
//! instructions and 27 registers, against 392 and 30 relocatable).
//!
//! [`decide`] is the decision, a pure function of the link's shape; [`Linker::load_path`]
//! reports it. A load that fails falls back to the link, so every error is the link's (the
//! same names, logs and variants as without this path).

use crate::backend::JitOptions;
use crate::context::Context;
use crate::error::Result;
use crate::format::{InputKind, ptx};
use crate::link::input::Input;
use crate::link::linker::Target;
use crate::link::{Arch, LinkOptions, Linker};
use crate::module::Module;

/// How [`Linker::link_and_load`] turns the inputs into a module, as
/// [`Linker::load_path`] reports it.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// use gpukernel_runtime::link::{LoadPath, Linker};
/// let mut linker = Linker::new(&ctx)?;
/// linker.add_ptx(&kernels_ptx(), "kernels.ptx");
/// match linker.load_path()? {
///     LoadPath::WholeProgram { input } => println!("{input}: JIT-compiled whole at load"),
///     LoadPath::Linked { reason } => println!("linked first: {reason}"),
///     LoadPath::Simulator => println!("the simulator runs the kernels' host code"),
///     _ => {}
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LoadPath {
    /// The one PTX input is loaded as it is and JIT-compiled as a whole program by the driver
    /// (`cuModuleLoadDataEx` with the link's options); nothing is linked.
    WholeProgram {
        /// The input's name.
        input: String,
    },
    /// The one input is a fatbin holding machine code for the device's architecture (an
    /// executable ELF, as nvptx-builder embeds in a kernels crate's `FATBIN`): the driver loads
    /// it as it is and compiles nothing (the link's code generation options do not apply to
    /// machine code).
    MachineCode {
        /// The input's name.
        input: String,
        /// The architecture whose machine code is loaded.
        arch: Arch,
    },
    /// The inputs are linked (cuLink, or nvJitLink), then the cubin is loaded.
    Linked {
        /// Why the inputs are not loaded as a whole program.
        reason: String,
    },
    /// A simulator link: nothing is compiled.
    Simulator,
    /// The inputs are linked (cuLink, or nvJitLink) and nothing is compiled: a kernels crate's
    /// PTX given with its relocatable machine code
    /// ([`Linker::add_ptx_with_sass`](crate::link::Linker::add_ptx_with_sass)) is linked as
    /// that code, and every other input holds machine code for `arch` (a cubin, or a fatbin,
    /// object or archive with an image for it). When some input is compiled after all,
    /// [`LoadPath::Linked`]'s reason says which and why.
    LinkedMachineCode {
        /// The architecture linked.
        arch: Arch,
    },
}

/// What the decision needs to know of a link's target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TargetShape {
    Simulator,
    /// No device: the link must produce a cubin.
    Offline,
    /// A CUDA device of architecture `device`, compiled for `arch`.
    Device {
        arch: Arch,
        device: Arch,
    },
}

/// Whether inputs (read, deduplicated and checked) can be loaded as one whole program. The
/// inputs are judged first, so that an offline link says whether they would load whole on a
/// device.
/// `linked_because` is a reason of the linker's options to link anyway (`lto`, raw options).
pub(super) fn decide(
    enabled: bool,
    target: TargetShape,
    linked_because: Option<&str>,
    inputs: &[Input],
) -> LoadPath {
    let linked = |reason: String| LoadPath::Linked { reason };
    if target == TargetShape::Simulator {
        return LoadPath::Simulator;
    }
    if let (TargetShape::Device { arch, device }, [input], true, None) =
        (target, inputs, enabled, linked_because)
        && arch == device
        && input.kind == InputKind::Fatbin
        && crate::format::fatbin::Fatbin::read(&input.bytes)
            .is_ok_and(|f| !f.has_ltoir() && f.has_executable_elf_for(device.sm()))
    {
        return LoadPath::MachineCode {
            input: input.name.clone(),
            arch: device,
        };
    }
    if let Some(reason) = needs_a_link(inputs) {
        return linked(reason);
    }
    if let Some(reason) = linked_because {
        return linked(reason.into());
    }
    if !enabled {
        return linked("turned off with `Linker::whole_program(false)`".into());
    }
    match target {
        TargetShape::Device { arch, device } if arch != device => linked(format!(
            "compiled for {arch} (`assume_compute_capability`), not for the device's {device}"
        )),
        TargetShape::Device { .. } => LoadPath::WholeProgram {
            input: inputs[0].name.clone(),
        },
        _ => linked(
            "a linker without a context produces a cubin (on a device, this one PTX would \
             load whole)"
                .into(),
        ),
    }
}

/// Why the inputs need a link, if they do.
fn needs_a_link(inputs: &[Input]) -> Option<String> {
    let [input] = inputs else {
        return Some(format!("{} inputs to link together", inputs.len()));
    };
    if input.kind != InputKind::Ptx {
        return Some(format!(
            "`{}` is {} (only one PTX input loads whole)",
            input.name,
            input.kind.extension()
        ));
    }
    let text = String::from_utf8_lossy(&input.bytes);
    let module = ptx::Ptx::parse(&text);
    // System calls are the JIT's own; a device-runtime function the driver resolves
    // (`DRIVER_PROVIDED`) keeps the linker's path, where it is known to resolve.
    let external: Vec<String> = module
        .extern_functions()
        .into_iter()
        .filter(|f| !ptx::SYSTEM_CALLS.contains(&f.as_str()))
        .chain(module.extern_globals())
        .collect();
    if !external.is_empty() {
        return Some(format!(
            "`{}` declares {} defined elsewhere (`.extern`)",
            input.name,
            external
                .iter()
                .map(|s| format!("`{s}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    None
}

/// The JIT options that match a link's options (as cuLink gets them).
fn jit_options(options: LinkOptions) -> JitOptions {
    JitOptions {
        max_registers: options.max_registers,
        optimization_level: options.optimization_level,
        line_info: options.line_info,
        debug: options.debug,
    }
}

impl Linker {
    /// Whether [`link_and_load`](Self::link_and_load) may load one self-contained PTX input
    /// as a whole program (the default) rather than link it. With `false` every load links
    /// (cuLink compiles PTX as relocatable code, as for several inputs), e.g. to compare the
    /// two. [`link`](Self::link) always links: it returns a cubin.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// use gpukernel_runtime::link::{LoadPath, Linker};
    /// let mut linker = Linker::new(&ctx)?;
    /// linker.add_ptx(&kernels_ptx(), "kernels.ptx").whole_program(false);
    /// let relocatable = linker.link_and_load()?; // linked by cuLink, as relocatable code
    /// assert!(!matches!(linker.load_path()?, LoadPath::WholeProgram { .. }));
    /// # Ok(()) }
    /// ```
    pub fn whole_program(&mut self, enabled: bool) -> &mut Self {
        self.whole_program = enabled;
        self
    }

    /// How [`link_and_load`](Self::link_and_load) will make the module: the inputs are read
    /// and checked as a link checks them (the same errors), and the answer says whether the
    /// one PTX input loads as a whole program or why the inputs are linked.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// use gpukernel_runtime::link::{LoadPath, Linker};
    /// let mut linker = Linker::for_arch("sm_90")?;
    /// linker.add_ptx(&kernels_ptx(), "kernels.ptx");
    /// // No context: the link produces a cubin.
    /// assert!(matches!(linker.load_path()?, LoadPath::Linked { .. }));
    /// assert!(Linker::for_arch("sm_90")?.load_path().is_err()); // no inputs: `EmptyLink`
    /// # Ok(()) }
    /// ```
    pub fn load_path(&self) -> Result<LoadPath> {
        let checked = self.checked_inputs()?;
        self.path_of(&checked.inputs)
    }

    /// [`decide`], then what the inputs given with machine code change: a link that compiles
    /// nothing is [`LoadPath::LinkedMachineCode`]; otherwise the reason of a link says which
    /// inputs are machine code and why the others are compiled.
    fn path_of(&self, inputs: &[Input]) -> Result<LoadPath> {
        let path = decide(
            self.whole_program,
            self.target_shape()?,
            self.linked_because(),
            inputs,
        );
        let (Target::Cuda { arch, .. } | Target::Offline(arch)) = &self.target else {
            return Ok(path);
        };
        let arch = self.target_arch(*arch, inputs)?;
        let lto = self.lto || self.uses_ltoir(inputs);
        Ok(
            match (
                super::machine::summary(inputs, arch, lto, self.options),
                path,
            ) {
                (Some(Ok(())), _) => LoadPath::LinkedMachineCode { arch },
                (Some(Err(notes)), LoadPath::Linked { reason }) => LoadPath::Linked {
                    reason: format!("{reason}; {notes}"),
                },
                (_, path) => path,
            },
        )
    }

    /// Why the linker's own options ask for a link, if they do.
    fn linked_because(&self) -> Option<&'static str> {
        if !self.raw_linker_options.is_empty() {
            Some("raw linker options (`Linker::linker_option`) go to nvJitLink")
        } else if self.lto {
            Some("link-time optimisation was asked (`Linker::lto`)")
        } else {
            None
        }
    }

    fn target_shape(&self) -> Result<TargetShape> {
        Ok(match &self.target {
            Target::Simulator { .. } => TargetShape::Simulator,
            Target::Offline(_) => TargetShape::Offline,
            Target::Cuda { ctx, arch } => {
                let (major, minor) = ctx.compute_capability()?;
                TargetShape::Device {
                    arch: *arch,
                    device: Arch::from_compute_capability(major, minor),
                }
            }
        })
    }

    /// The module of a whole-program load (one self-contained PTX, or one fatbin with this
    /// device's machine code), or `None` when the inputs are to be linked. A
    /// failed load is `None` too: the link that follows reports the error as it always has.
    pub(super) fn load_whole_program(&self, ctx: &Context) -> Result<Option<Module>> {
        // Several inputs added (even if two turn out to be one): link, without reading them
        // twice.
        if !self.whole_program
            || self.input_count() != 1
            || !matches!(self.target, Target::Cuda { .. })
        {
            return Ok(None);
        }
        let checked = self.checked_inputs()?;
        let (LoadPath::WholeProgram { input } | LoadPath::MachineCode { input, .. }) =
            self.path_of(&checked.inputs)?
        else {
            return Ok(None);
        };
        let bytes = &checked.inputs[0].bytes;
        Ok(Module::load_with(
            ctx.inner.clone(),
            bytes,
            Some(input),
            jit_options(self.options),
        )
        .ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(kind: InputKind, name: &str, text: &str) -> Input {
        Input {
            kind,
            name: name.into(),
            path: None,
            bytes: text.as_bytes().into(),
            unchecked: false,
            machine: None,
        }
    }

    const HEADER: &str = ".version 8.0\n.target sm_90\n.address_size 64\n";

    fn ptx(body: &str) -> Input {
        input(InputKind::Ptx, "kernels.ptx", &format!("{HEADER}{body}"))
    }

    const KERNEL: &str = ".visible .entry k()\n{\n\tret;\n}\n";

    fn device() -> TargetShape {
        let sm90 = Arch::from_compute_capability(9, 0);
        TargetShape::Device {
            arch: sm90,
            device: sm90,
        }
    }

    fn reason(path: LoadPath) -> String {
        match path {
            LoadPath::Linked { reason } => reason,
            other => panic!("expected a link, got {other:?}"),
        }
    }

    #[test]
    fn one_self_contained_ptx_loads_whole() {
        let whole = LoadPath::WholeProgram {
            input: "kernels.ptx".into(),
        };
        assert_eq!(decide(true, device(), None, &[ptx(KERNEL)]), whole);
        // System calls are the JIT's own, dynamic shared memory the launch's: still whole.
        let printf = ".extern .func (.param .b32 r) vprintf(.param .b64 a, .param .b64 b);\n";
        let shared = ".extern .shared .align 16 .b8 gpu_launch_sized_workgroup_mem[];\n";
        assert_eq!(
            decide(
                true,
                device(),
                None,
                &[ptx(&format!("{printf}{shared}{KERNEL}"))]
            ),
            whole
        );
    }

    #[test]
    fn anything_to_link_keeps_the_linker() {
        let foreign = ptx(&format!(
            ".extern .func (.param .b32 r) mul_f32_f32(.param .b32 a);\n{KERNEL}"
        ));
        assert!(reason(decide(true, device(), None, &[foreign])).contains("`mul_f32_f32`"));
        let global = ptx(&format!(".extern .global .align 4 .u32 table;\n{KERNEL}"));
        assert!(reason(decide(true, device(), None, &[global])).contains("`table`"));
        let conditional = ptx(&format!(
            ".extern .func cudaGraphSetConditional(.param .b64 h, .param .b32 v);\n{KERNEL}"
        ));
        assert!(
            reason(decide(true, device(), None, &[conditional]))
                .contains("cudaGraphSetConditional")
        );
        let cu = input(InputKind::Cuda, "f.cu", "__device__ int f() { return 1; }");
        assert!(reason(decide(true, device(), None, std::slice::from_ref(&cu))).contains("`f.cu`"));
        assert!(reason(decide(true, device(), None, &[ptx(KERNEL), cu])).contains("2 inputs"));
        assert!(reason(decide(true, device(), None, &[])).contains("0 inputs"));
    }

    #[test]
    fn a_fatbin_with_the_device_s_machine_code_loads_as_it_is() {
        use crate::format::fatbin::{build_for_tests, elf_for_tests};
        let fatbin = |e_type: u16, sm: u32| Input {
            kind: InputKind::Fatbin,
            name: "kernels.fatbin".into(),
            path: None,
            bytes: build_for_tests(&[(2, sm, elf_for_tests(e_type)), (1, 80, KERNEL.into())])
                .into(),
            unchecked: false,
            machine: None,
        };
        let sm90 = Arch::from_compute_capability(9, 0);
        assert_eq!(
            decide(true, device(), None, &[fatbin(2, 90)]),
            LoadPath::MachineCode {
                input: "kernels.fatbin".into(),
                arch: sm90
            }
        );
        // Relocatable code, another architecture's, or more to link: the link, as before.
        assert!(reason(decide(true, device(), None, &[fatbin(1, 90)])).contains("fatbin"));
        assert!(reason(decide(true, device(), None, &[fatbin(2, 80)])).contains("fatbin"));
        assert!(
            reason(decide(true, device(), None, &[fatbin(2, 90), ptx(KERNEL)]))
                .contains("2 inputs")
        );
        assert!(matches!(
            decide(true, device(), Some("lto"), &[fatbin(2, 90)]),
            LoadPath::Linked { .. }
        ));
        assert!(reason(decide(false, device(), None, &[fatbin(2, 90)])).contains("fatbin"));
    }

    #[test]
    fn the_linker_s_settings_keep_the_linker() {
        let one = [ptx(KERNEL)];
        assert!(reason(decide(false, device(), None, &one)).contains("whole_program(false)"));
        assert!(reason(decide(true, device(), Some("lto"), &one)).contains("lto"));
        let assumed = TargetShape::Device {
            arch: Arch::from_compute_capability(8, 0),
            device: Arch::from_compute_capability(9, 0),
        };
        assert!(reason(decide(true, assumed, None, &one)).contains("assume_compute_capability"));
        assert!(reason(decide(true, TargetShape::Offline, None, &one)).contains("cubin"));
        // Offline, the inputs' own reason comes first.
        assert!(reason(decide(true, TargetShape::Offline, None, &[])).contains("0 inputs"));
        assert_eq!(
            decide(true, TargetShape::Simulator, None, &one),
            LoadPath::Simulator
        );
    }

    #[test]
    fn jit_options_follow_the_link_options() {
        let options = LinkOptions {
            max_registers: Some(32),
            optimization_level: Some(2),
            line_info: true,
            debug: false,
        };
        assert_eq!(
            jit_options(options),
            JitOptions {
                max_registers: Some(32),
                optimization_level: Some(2),
                line_info: true,
                debug: false,
            }
        );
    }
}
