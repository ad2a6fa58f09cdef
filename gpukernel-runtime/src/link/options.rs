//! Code generation options of a link, and how each tool spells them.

use crate::error::{Error, Result};
use crate::link::sys::JitOption;

/// Code generation options of a link ([`Linker::max_registers`](crate::link::Linker::max_registers)
/// and its neighbours), as [`LinkedImage::options`](crate::link::LinkedImage::options) reports
/// them.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// # use gpukernel_runtime::link::*;
/// let image = Linker::for_arch("sm_90")?
///     .add_ptx(&kernels_ptx(), "kernels.ptx")
///     .max_registers(32)
///     .line_info(true)
///     .link()?;
/// let o: LinkOptions = image.options();
/// assert_eq!((o.max_registers, o.line_info, o.debug), (Some(32), true, false));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct LinkOptions {
    /// The most registers a thread may use (the linker spills beyond it).
    pub max_registers: Option<u32>,
    /// The optimisation level of the final code generation, 0 to 3 (the linker's default: 3;
    /// through nvJitLink, whose own `-O` takes 0 or 3, levels 1 and 2 go to ptxas).
    pub optimization_level: Option<u32>,
    /// Line information for profilers and `compute-sanitizer` (`-lineinfo`).
    pub line_info: bool,
    /// Device debug information, no optimisation (`-G` / `-g`).
    pub debug: bool,
}

impl LinkOptions {
    /// Rejects values no linker accepts, naming the option.
    pub(crate) fn check(&self) -> Result<()> {
        if let Some(n) = self.max_registers
            && !(16..=255).contains(&n)
        {
            return Err(Error::InvalidLinkOption {
                option: format!("max_registers({n})"),
                reason: "the register limit must be between 16 and 255".into(),
            });
        }
        if let Some(n) = self.optimization_level
            && n > 3
        {
            return Err(Error::InvalidLinkOption {
                option: format!("optimization_level({n})"),
                reason: "the optimisation level must be between 0 and 3".into(),
            });
        }
        Ok(())
    }

    /// NVRTC's spelling (for `.cu` inputs).
    pub(crate) fn nvrtc(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(n) = self.max_registers {
            out.push(format!("--maxrregcount={n}"));
        }
        if self.line_info {
            out.push("-lineinfo".into());
        }
        if self.debug {
            out.push("-G".into());
        }
        out
    }

    /// nvJitLink's spelling.
    pub(crate) fn nvjitlink(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(n) = self.max_registers {
            out.push(format!("-maxrregcount={n}"));
        }
        match self.optimization_level {
            // nvJitLink's own `-O` takes only 0 and 3; the levels between go to ptxas.
            Some(n @ (0 | 3)) => out.push(format!("-O{n}")),
            Some(n) => out.push(format!("-Xptxas=-O{n}")),
            None => {}
        }
        if self.line_info {
            out.push("-lineinfo".into());
        }
        if self.debug {
            out.push("-g".into());
        }
        out
    }

    /// The driver linker's options.
    pub(crate) fn culink(&self) -> Vec<JitOption> {
        let mut out = Vec::new();
        if let Some(n) = self.max_registers {
            out.push(JitOption::MaxRegisters(n));
        }
        if let Some(n) = self.optimization_level {
            out.push(JitOption::OptimizationLevel(n));
        }
        if self.line_info {
            out.push(JitOption::LineInfo);
        }
        if self.debug {
            out.push(JitOption::DebugInfo);
        }
        out
    }

    /// How the driver linker's options read in a report.
    pub(crate) fn culink_names(&self) -> Vec<String> {
        self.culink()
            .into_iter()
            .map(|o| match o {
                JitOption::MaxRegisters(n) => format!("CU_JIT_MAX_REGISTERS={n}"),
                JitOption::OptimizationLevel(n) => format!("CU_JIT_OPTIMIZATION_LEVEL={n}"),
                JitOption::LineInfo => "CU_JIT_GENERATE_LINE_INFO=1".into(),
                JitOption::DebugInfo => "CU_JIT_GENERATE_DEBUG_INFO=1".into(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_and_checks() {
        let options = LinkOptions {
            max_registers: Some(32),
            optimization_level: Some(2),
            line_info: true,
            debug: false,
        };
        assert!(options.check().is_ok());
        assert_eq!(options.nvrtc(), ["--maxrregcount=32", "-lineinfo"]);
        assert_eq!(
            options.nvjitlink(),
            ["-maxrregcount=32", "-Xptxas=-O2", "-lineinfo"]
        );
        assert_eq!(
            options.culink_names(),
            [
                "CU_JIT_MAX_REGISTERS=32",
                "CU_JIT_OPTIMIZATION_LEVEL=2",
                "CU_JIT_GENERATE_LINE_INFO=1"
            ]
        );
        let bad = LinkOptions {
            max_registers: Some(8),
            ..LinkOptions::default()
        };
        assert!(
            matches!(bad.check(), Err(Error::InvalidLinkOption { option, .. }) if option == "max_registers(8)")
        );
        let bad = LinkOptions {
            optimization_level: Some(4),
            ..LinkOptions::default()
        };
        assert!(
            matches!(bad.check(), Err(Error::InvalidLinkOption { option, .. }) if option == "optimization_level(4)")
        );
    }
}
