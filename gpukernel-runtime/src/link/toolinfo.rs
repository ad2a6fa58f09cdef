//! What the cache key and the architecture choice need to know about NVRTC and nvJitLink
//! (versions, NVRTC's supported architectures), without loading them on a cache hit.
//!
//! Loading NVRTC or nvJitLink costs milliseconds, more than a whole cache hit should. The
//! answers are kept in a small file of the cache directory named by the BLAKE3 hash of the
//! library file's identity (canonical path, size, modification time, inode): a replaced or
//! upgraded library has another identity, so another file, and is loaded once to fill it.
//! The identity itself also goes into the cache key, so that two builds of one version never
//! share entries. A library found only by the dynamic loader's own search (no file on disk to
//! read) is loaded, as before.

use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::link::{sys, tools};

/// The library file names of NVRTC, in search order (as `sys` loads it).
pub(crate) const NVRTC_NAMES: &[&str] = &["libnvrtc.so.13", "libnvrtc.so"];
/// The library file names of nvJitLink, in search order (as `sys` loads it).
pub(crate) const NVJITLINK_NAMES: &[&str] = &["libnvJitLink.so.13", "libnvJitLink.so"];

/// What is known about one library.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ToolInfo {
    /// `major.minor` as the library reports it.
    pub(crate) version: String,
    /// The identity of the library file (path, size, mtime, inode), empty when unknown.
    pub(crate) identity: String,
    /// NVRTC's supported SM numbers (empty for nvJitLink).
    pub(crate) archs: Vec<u32>,
}

/// The identity of the file `names` resolve to, if one is on disk.
fn identity(names: &[&str]) -> Option<(PathBuf, String)> {
    let found = tools::find_library(names);
    let path = std::fs::canonicalize(&found.path).ok()?;
    let meta = std::fs::metadata(&path).ok()?;
    let modified = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(&meta);
    #[cfg(not(unix))]
    let inode = 0u64;
    let id = format!(
        "{} size={} mtime={modified} ino={inode}",
        path.display(),
        meta.len()
    );
    Some((path, id))
}

/// NVRTC's version and supported architectures; `cache_dir` keeps them across processes.
pub(crate) fn nvrtc(cache_dir: Option<&Path>) -> Result<ToolInfo> {
    info("nvrtc", NVRTC_NAMES, cache_dir, || {
        let (major, minor) = sys::nvrtc_version()?;
        Ok((format!("{major}.{minor}"), sys::nvrtc_supported_archs()?))
    })
}

/// nvJitLink's version; `cache_dir` keeps it across processes.
pub(crate) fn nvjitlink(cache_dir: Option<&Path>) -> Result<ToolInfo> {
    info("nvjitlink", NVJITLINK_NAMES, cache_dir, || {
        let (major, minor) = sys::nvjitlink_version()?;
        Ok((format!("{major}.{minor}"), Vec::new()))
    })
}

fn info(
    tool: &str,
    names: &[&str],
    cache_dir: Option<&Path>,
    query: impl FnOnce() -> Result<(String, Vec<u32>)>,
) -> Result<ToolInfo> {
    let Some((_, identity)) = identity(names) else {
        let (version, archs) = query()?;
        return Ok(ToolInfo {
            version,
            identity: String::new(),
            archs,
        });
    };
    let file = cache_dir.map(|dir| {
        let hash = blake3::hash(format!("{tool}\n{identity}").as_bytes());
        dir.join(format!("{}.{tool}-info", &hash.to_hex()[..32]))
    });
    if let Some(file) = &file
        && let Ok(text) = std::fs::read_to_string(file)
        && let Some(info) = parse(&text, &identity)
    {
        return Ok(info);
    }
    let (version, archs) = query()?;
    let info = ToolInfo {
        version,
        identity,
        archs,
    };
    if let Some(file) = &file {
        // A failed write only costs the next process a load.
        let _ = super::cache::write_atomically(file, render(&info).as_bytes());
    }
    Ok(info)
}

fn render(info: &ToolInfo) -> String {
    let archs: Vec<String> = info.archs.iter().map(u32::to_string).collect();
    format!(
        "identity {}\nversion {}\narchs {}\n",
        info.identity,
        info.version,
        archs.join(" ")
    )
}

/// Reads a file written by [`render`]; `None` unless complete and for `identity`.
fn parse(text: &str, identity: &str) -> Option<ToolInfo> {
    let mut lines = text.lines();
    let id = lines.next()?.strip_prefix("identity ")?;
    let version = lines.next()?.strip_prefix("version ")?;
    let archs = lines.next()?.strip_prefix("archs")?;
    if id != identity || version.is_empty() {
        return None;
    }
    let archs = archs
        .split_whitespace()
        .map(str::parse)
        .collect::<std::result::Result<Vec<u32>, _>>()
        .ok()?;
    Some(ToolInfo {
        version: version.to_string(),
        identity: identity.to_string(),
        archs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_files_round_trip_and_reject_others() {
        let info = ToolInfo {
            version: "13.0".into(),
            identity: "/x/libnvrtc.so.13 size=1 mtime=2 ino=3".into(),
            archs: vec![75, 80, 90],
        };
        let text = render(&info);
        assert_eq!(parse(&text, &info.identity), Some(info.clone()));
        assert_eq!(parse(&text, "/x/libnvrtc.so.13 size=1 mtime=9 ino=3"), None);
        assert_eq!(parse(&text[..text.len() / 2], &info.identity), None);
        assert_eq!(parse("", &info.identity), None);
    }
}
