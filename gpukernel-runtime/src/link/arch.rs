//! The architecture a link compiles for.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};

/// A GPU architecture to compile and link for, e.g. `sm_90`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Arch {
    sm: u32,
    suffix: Option<char>,
}

impl Arch {
    /// The architecture of a device of compute capability `major.minor`.
    pub fn from_compute_capability(major: u32, minor: u32) -> Arch {
        Arch {
            sm: major * 10 + minor,
            suffix: None,
        }
    }

    /// The SM number: 90 for `sm_90`.
    pub fn sm(self) -> u32 {
        self.sm
    }

    /// The compute capability's major number: 9 for `sm_90`.
    pub fn major(self) -> u32 {
        self.sm / 10
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
}
