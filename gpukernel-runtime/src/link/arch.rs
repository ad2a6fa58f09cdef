//! The architecture a link compiles for.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};

/// A GPU architecture to compile and link for, e.g. `sm_90`.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// # use gpukernel_runtime::link::*;
/// let arch: Arch = "sm_90".parse()?;
/// assert_eq!(arch, Arch::from_compute_capability(9, 0));
/// assert_eq!(arch.to_string(), "sm_90");
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Arch {
    sm: u32,
    suffix: Option<char>,
}

impl Arch {
    /// The architecture of a device of compute capability `major.minor`.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// # use gpukernel_runtime::link::*;
    /// let (major, minor) = ctx.compute_capability()?;
    /// let arch = Arch::from_compute_capability(major, minor);
    /// assert_eq!(Arch::from_compute_capability(8, 6).sm(), 86);
    /// # Ok(()) }
    /// ```
    pub fn from_compute_capability(major: u32, minor: u32) -> Arch {
        Arch {
            sm: major * 10 + minor,
            suffix: None,
        }
    }

    /// The SM number: 90 for `sm_90`.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// # use gpukernel_runtime::link::*;
    /// assert_eq!("sm_90".parse::<Arch>()?.sm(), 90);
    /// # Ok(()) }
    /// ```
    pub fn sm(self) -> u32 {
        self.sm
    }

    /// The compute capability's major number: 9 for `sm_90`.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// # use gpukernel_runtime::link::*;
    /// assert_eq!("sm_89".parse::<Arch>()?.major(), 8);
    /// # Ok(()) }
    /// ```
    pub fn major(self) -> u32 {
        self.sm / 10
    }
}

/// How a device's architecture maps onto what the tools can compile for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Portability {
    /// The link's output is a cubin (nvJitLink): only an image of the same major architecture
    /// and a minor no higher than the device's runs on it.
    Cubin,
    /// The driver JIT-compiles PTX for the device (cuLink): PTX of any older architecture runs.
    PtxJit,
}

impl Arch {
    /// The architecture to compile for on a device of architecture `self`, when the tools
    /// support only `supported` (SM numbers): `self` if supported, else the highest supported
    /// one whose code the device can run. `None` when there is none.
    pub(crate) fn compatible_target(self, supported: &[u32], how: Portability) -> Option<Arch> {
        if supported.is_empty() || supported.contains(&self.sm) {
            return Some(self);
        }
        supported
            .iter()
            .copied()
            .filter(|&sm| sm <= self.sm)
            .filter(|&sm| how == Portability::PtxJit || sm / 10 == self.major())
            .max()
            .map(|sm| Arch { sm, suffix: None })
    }
}

impl Arch {
    /// Refuses an architecture-specific target (`sm_90a`, `sm_100f`) that the tools, which
    /// compile for the SM numbers `supported`, do not have: no other architecture may stand in
    /// for it (its instructions exist on exactly that one, or that family). Portable targets,
    /// and an empty list (nothing known), pass.
    pub(crate) fn check_specific(self, supported: &[u32]) -> Result<()> {
        let Some(suffix) = self.suffix else {
            return Ok(());
        };
        // `a` targets exist from sm_90 on, `f` (family) targets from sm_100 on.
        let first = if suffix == 'a' { 90 } else { 100 };
        if supported.is_empty() || (self.sm >= first && supported.contains(&self.sm)) {
            return Ok(());
        }
        Err(Error::ArchitectureSpecificUnavailable {
            arch: self.to_string(),
            suffix,
            sm: self.sm,
            available: supported
                .iter()
                .filter(|&&sm| sm >= first)
                .map(|sm| format!("sm_{sm}{suffix}"))
                .collect(),
        })
    }
}

impl FromStr for Arch {
    type Err = Error;

    /// Parses `sm_90`, `sm_90a`, `compute_90` or `90`.
    fn from_str(s: &str) -> Result<Arch> {
        let invalid = |reason: &str| Error::InvalidLinkOption {
            option: s.to_string(),
            reason: reason.to_string(),
        };
        let body = s.trim();
        let body = body
            .strip_prefix("sm_")
            .or_else(|| body.strip_prefix("compute_"))
            .unwrap_or(body);
        let (digits, suffix) = match body.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
            Some((i, c)) if i + c.len_utf8() == body.len() && matches!(c, 'a' | 'f') => {
                (&body[..i], Some(c))
            }
            Some(_) => {
                return Err(invalid(
                    "expected an architecture such as `sm_90` or `sm_90a`",
                ));
            }
            None => (body, None),
        };
        let sm: u32 = digits
            .parse()
            .map_err(|_| invalid("expected an architecture such as `sm_90` or `sm_90a`"))?;
        if !(50..=199).contains(&sm) {
            return Err(invalid("the SM number must be between 50 and 199"));
        }
        Ok(Arch { sm, suffix })
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sm_{}", self.sm)?;
        if let Some(c) = self.suffix {
            write!(f, "{c}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arch_parsing() {
        assert_eq!("sm_90".parse::<Arch>().unwrap().to_string(), "sm_90");
        assert_eq!("sm_90a".parse::<Arch>().unwrap().to_string(), "sm_90a");
        assert_eq!("compute_80".parse::<Arch>().unwrap().sm(), 80);
        assert_eq!("75".parse::<Arch>().unwrap().major(), 7);
        assert!("sm_9x".parse::<Arch>().is_err());
        assert!("gpu".parse::<Arch>().is_err());
        assert!("sm_5".parse::<Arch>().is_err());
        assert_eq!(Arch::from_compute_capability(9, 0).to_string(), "sm_90");
    }

    #[test]
    fn compatible_targets_for_unsupported_capabilities() {
        // NVRTC 13.0's list.
        let tools = [75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121];
        let cc = |major, minor| Arch::from_compute_capability(major, minor);
        let cubin = |a: Arch| {
            a.compatible_target(&tools, Portability::Cubin)
                .map(|a| a.sm())
        };
        assert_eq!(cubin(cc(9, 0)), Some(90));
        assert_eq!(cubin(cc(7, 7)), Some(75));
        assert_eq!(cubin(cc(8, 5)), Some(80));
        assert_eq!(cubin(cc(9, 1)), Some(90));
        assert_eq!(cubin(cc(13, 0)), None, "no sm_13x code in the tools");
        assert_eq!(
            cubin(cc(7, 0)),
            None,
            "older than anything the tools support"
        );
        let jit = cc(13, 0).compatible_target(&tools, Portability::PtxJit);
        assert_eq!(jit.map(|a| a.sm()), Some(121));
    }

    #[test]
    fn architecture_specific_targets_are_exact() {
        let tools = [75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121];
        let check = |a: &str| a.parse::<Arch>().unwrap().check_specific(&tools);
        assert!(check("sm_90a").is_ok());
        assert!(check("sm_100f").is_ok());
        assert!(check("sm_91").is_ok(), "portable targets may fall back");
        for (arch, first) in [
            ("sm_91a", "sm_90a"),
            ("sm_99a", "sm_90a"),
            ("sm_80a", "sm_90a"),
        ] {
            let e = check(arch).unwrap_err();
            let Error::ArchitectureSpecificUnavailable {
                arch: a, available, ..
            } = &e
            else {
                panic!("{e:?}")
            };
            assert_eq!(a, arch);
            assert_eq!(available[0], first, "{available:?}");
            assert!(!available.iter().any(|x| x == "sm_75a"), "{available:?}");
            assert!(e.to_string().contains(arch), "{e}");
        }
        let e = check("sm_90f").unwrap_err();
        assert!(e.to_string().contains("sm_100f"), "{e}");
    }
}
