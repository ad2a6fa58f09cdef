//! The on-disk cache of linked cubins.
//!
//! One file per link, named by the BLAKE3 hash of everything the link's result depends on (see
//! [`CacheKey`]). An entry is written to a temporary file in the cache directory (`tempfile`)
//! and persisted by rename, so concurrent processes never see a partial entry (the last
//! rename wins; all writers of one key write the same bytes). Each entry carries a header
//! with a magic, its key, the payload's length and a checksum (`format::cache_entry`): a
//! corrupt or truncated entry is treated as a miss and rebuilt.
//!
//! The directory is created private (mode 0700): entries are code that will run. Its size is
//! bounded by `GPUKERNEL_CACHE_MAX` (bytes, or with a `K`/`M`/`G` suffix): after a store, the
//! least recently used entries (a hit touches its entry's modification time) are removed
//! until the entries fit. A process that reads an entry another one removes still reads it
//! whole (or misses).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::error::{Error, Result};

use crate::format::cache_entry;
pub(crate) use crate::format::cache_entry::{Entry, Key};

/// Where and whether linked images are cached.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// # use gpukernel_runtime::link::*;
/// let image = Linker::for_arch("sm_90")?
///     .add_ptx(&kernels_ptx(), "kernels.ptx")
///     .cache(CachePolicy::Dir(std::env::temp_dir().join("my-app-cubins")))
///     .link()?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum CachePolicy {
    /// Cache in `GPUKERNEL_CACHE_DIR`, else `$XDG_CACHE_HOME/gpukernel`, else
    /// `~/.cache/gpukernel` (the default).
    #[default]
    Default,
    /// Cache in this directory.
    Dir(PathBuf),
    /// Never read or write the cache.
    Disabled,
}

impl CachePolicy {
    /// The directory this policy caches in, if any.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// # use gpukernel_runtime::link::*;
    /// assert_eq!(CachePolicy::Disabled.dir(), None);
    /// println!("links are cached in {:?}", CachePolicy::Default.dir()); // ~/.cache/gpukernel
    /// # Ok(()) }
    /// ```
    pub fn dir(&self) -> Option<PathBuf> {
        match self {
            CachePolicy::Dir(dir) => Some(dir.clone()),
            CachePolicy::Disabled => None,
            CachePolicy::Default => default_dir(),
        }
    }
}

/// The default cache directory.
fn default_dir() -> Option<PathBuf> {
    let non_empty = |var: &str| {
        std::env::var_os(var)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(dir) = non_empty("GPUKERNEL_CACHE_DIR") {
        return Some(dir);
    }
    if let Some(dir) = non_empty("XDG_CACHE_HOME") {
        return Some(dir.join("gpukernel"));
    }
    non_empty("HOME").map(|home| home.join(".cache").join("gpukernel"))
}

/// A cache key under construction: BLAKE3 over named, length-prefixed fields. Stable across
/// processes, Rust versions and platforms (std's `DefaultHasher` is not), which an on-disk key
/// needs.
#[derive(Debug, Clone)]
pub(crate) struct CacheKey {
    hasher: blake3::Hasher,
}

impl CacheKey {
    /// A key seeded with the entry format's version and this crate's version.
    pub(crate) fn new() -> Self {
        let mut key = CacheKey {
            hasher: blake3::Hasher::new(),
        };
        key.field(
            "gpukernel-link-cache",
            cache_entry::FORMAT_VERSION.to_le_bytes().as_slice(),
        );
        key.field("crate", env!("CARGO_PKG_VERSION").as_bytes());
        key
    }

    /// Adds one named, length-prefixed field (so that field boundaries can't shift).
    pub(crate) fn field(&mut self, name: &str, value: &[u8]) {
        self.hasher.update(&(name.len() as u64).to_le_bytes());
        self.hasher.update(name.as_bytes());
        self.hasher.update(&(value.len() as u64).to_le_bytes());
        self.hasher.update(value);
    }

    /// The key's digest.
    pub(crate) fn finish(&self) -> Key {
        *self.hasher.finalize().as_bytes()
    }
}

/// Why a lookup missed (reported in `LinkedImage::cache_status`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Miss {
    /// No entry for this key.
    Absent,
    /// An entry existed but was unreadable, corrupt or truncated; it will be rebuilt.
    Invalid(String),
}

/// The file that holds `key`'s entry.
pub(crate) fn entry_path(dir: &Path, key: &Key) -> PathBuf {
    dir.join(format!("{}.cubin-cache", hex(key)))
}

fn hex(key: &Key) -> String {
    key.iter().map(|b| format!("{b:02x}")).collect()
}

/// Reads and validates the entry for `key`.
pub(crate) fn load(dir: &Path, key: &Key) -> Result<Entry, Miss> {
    let path = entry_path(dir, key);
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        // No entry, or no folder to hold one (a file where the folder should be: the store
        // that follows says so).
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            return Err(Miss::Absent);
        }
        Err(e) => {
            return Err(Miss::Invalid(format!(
                "cannot read {}: {e}",
                path.display()
            )));
        }
    };
    cache_entry::decode(&bytes, key)
        .map_err(|why| Miss::Invalid(format!("{}: {why}", path.display())))
}

/// Marks a hit entry as recently used (its modification time), for the eviction order.
pub(crate) fn touch(path: &Path) {
    if let Ok(file) = std::fs::File::options().write(true).open(path) {
        let _ = file.set_modified(SystemTime::now());
    }
}

/// Creates `dir` (and missing parents) private to the user (0700). An existing folder keeps
/// the mode it has.
pub(crate) fn create_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// Writes `bytes` to `path` atomically: a temporary file beside it (`.*.tmp`, removed on
/// failure), synced, then persisted by rename.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    create_dir(dir)?;
    let mut file = tempfile::Builder::new()
        .prefix(".")
        .suffix(".tmp")
        .tempfile_in(dir)?;
    file.write_all(bytes)?;
    file.as_file().sync_all()?;
    file.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Writes the entry for `key` atomically, then evicts the least recently used entries beyond
/// `max` bytes. Errors are returned for the caller to report; a failed store never fails a
/// link.
pub(crate) fn store(
    dir: &Path,
    key: &Key,
    entry: &Entry,
    max: Option<u64>,
) -> std::io::Result<PathBuf> {
    let path = entry_path(dir, key);
    write_atomically(&path, &cache_entry::encode(entry, key))?;
    if let Some(max) = max {
        evict(dir, max, &path)?;
    }
    Ok(path)
}

/// Removes the least recently used entries of `dir` until their sizes add up to at most
/// `max`, never `keep` (the entry just stored, even when it alone exceeds `max`).
pub(crate) fn evict(dir: &Path, max: u64, keep: &Path) -> std::io::Result<()> {
    let mut entries: Vec<(SystemTime, u64, PathBuf)> = Vec::new();
    for dirent in std::fs::read_dir(dir)? {
        let Ok(dirent) = dirent else { continue };
        let path = dirent.path();
        if path.extension().is_none_or(|e| e != "cubin-cache") {
            continue;
        }
        let Ok(meta) = dirent.metadata() else {
            continue;
        };
        let used = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
        entries.push((used, meta.len(), path));
    }
    let mut total: u64 = entries.iter().map(|(_, len, _)| len).sum();
    // Oldest first.
    entries.sort_by_key(|e| e.0);
    for (_, len, path) in entries {
        if total <= max {
            break;
        }
        if path == keep {
            continue;
        }
        match std::fs::remove_file(&path) {
            // Another process may have removed it first: it no longer counts either way.
            Ok(()) => total -= len,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => total -= len,
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The environment variable that bounds the cache's size.
pub(crate) const MAX_VAR: &str = "GPUKERNEL_CACHE_MAX";

/// The size bound from `GPUKERNEL_CACHE_MAX` (unset or empty: none).
pub(crate) fn max_from_env() -> Result<Option<u64>> {
    match std::env::var(MAX_VAR) {
        Ok(value) if value.trim().is_empty() => Ok(None),
        Ok(value) => parse_max(&value).map(Some),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(value)) => Err(Error::InvalidCacheMax {
            value: value.to_string_lossy().into_owned(),
            reason: "not UTF-8".into(),
        }),
    }
}

/// Parses a size: bytes (`1048576`), or a number with a binary suffix `K`, `M`, `G`, `T`
/// (also `KB`, `KiB`, …; any case): `512M` is 512 MiB.
pub(crate) fn parse_max(value: &str) -> Result<u64> {
    let invalid = |reason: &str| Error::InvalidCacheMax {
        value: value.to_string(),
        reason: reason.to_string(),
    };
    let text = value.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, suffix) = text.split_at(split);
    if digits.is_empty() {
        return Err(invalid(
            "expected a number of bytes, optionally with K, M, G or T (e.g. `512M`)",
        ));
    }
    let shift = match suffix.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return Err(invalid("unknown unit (expected K, M, G or T)")),
    };
    let number: u64 = digits
        .parse()
        .map_err(|_| invalid("the number does not fit in 64 bits"))?;
    number
        .checked_mul(1u64 << shift)
        .ok_or_else(|| invalid("the size does not fit in 64 bits"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_corruption() {
        let dir = std::env::temp_dir().join(format!("gk-cache-unit-{}", std::process::id()));
        let entry = Entry {
            cubin: vec![1, 2, 3, 4, 5],
            info_log: "info".into(),
        };
        let key = [0x12; 32];
        assert_eq!(load(&dir, &key), Err(Miss::Absent));
        let path = store(&dir, &key, &entry, None).unwrap();
        assert_eq!(load(&dir, &key).unwrap(), entry);
        // Flip one payload byte: checksum mismatch.
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[cache_entry::HEADER_LEN + 1] ^= 0xff;
        std::fs::write(&path, &bytes).unwrap();
        assert!(matches!(load(&dir, &key), Err(Miss::Invalid(why)) if why.contains("checksum")));
        // Truncate.
        std::fs::write(&path, &bytes[..cache_entry::HEADER_LEN + 2]).unwrap();
        assert!(matches!(load(&dir, &key), Err(Miss::Invalid(why)) if why.contains("length")));
        std::fs::write(&path, &bytes[..10]).unwrap();
        assert!(matches!(load(&dir, &key), Err(Miss::Invalid(why)) if why.contains("truncated")));
        // A different key in the file's header.
        store(&dir, &key, &entry, None).unwrap();
        let other = std::fs::read(&path).unwrap();
        std::fs::write(entry_path(&dir, &[7; 32]), other).unwrap();
        assert!(matches!(load(&dir, &[7; 32]), Err(Miss::Invalid(why)) if why.contains("key")));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn key_depends_on_field_boundaries() {
        let mut a = CacheKey::new();
        a.field("x", b"ab");
        a.field("y", b"c");
        let mut b = CacheKey::new();
        b.field("x", b"a");
        b.field("y", b"bc");
        assert_ne!(a.finish(), b.finish());
    }

    #[cfg(unix)]
    #[test]
    fn created_directories_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("a").join("cache");
        let entry = Entry {
            cubin: vec![1],
            info_log: String::new(),
        };
        store(&dir, &[1; 32], &entry, None).unwrap();
        for d in [root.path().join("a"), dir.clone()] {
            let mode = std::fs::metadata(&d).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o700, "{}", d.display());
        }
        let file = std::fs::metadata(entry_path(&dir, &[1; 32])).unwrap();
        assert_eq!(
            file.permissions().mode() & 0o077,
            0,
            "entries are private too"
        );
    }

    #[test]
    fn least_recently_used_entries_are_evicted() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path();
        let entry = |n: u8| Entry {
            cubin: vec![n; 1000],
            info_log: String::new(),
        };
        let size = cache_entry::encode(&entry(0), &[0; 32]).len() as u64;
        let at = |secs: u64| SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(secs);
        for n in 1..=3u8 {
            let path = store(dir, &[n; 32], &entry(n), None).unwrap();
            std::fs::File::options()
                .write(true)
                .open(&path)
                .unwrap()
                .set_modified(at(1_000 + u64::from(n)))
                .unwrap();
        }
        // A hit on the oldest makes it the most recently used.
        touch(&entry_path(dir, &[1; 32]));
        // A fourth entry with room for three: entry 2, now the least recently used, goes.
        store(dir, &[4; 32], &entry(4), Some(3 * size)).unwrap();
        let present = |n: u8| entry_path(dir, &[n; 32]).exists();
        assert!(!present(2));
        assert!(present(1) && present(3) && present(4));
        // Room for none: everything but the entry just stored goes.
        store(dir, &[5; 32], &entry(5), Some(1)).unwrap();
        assert!((1..=4).all(|n| !present(n)));
        assert!(
            present(5),
            "the new entry stays even when it alone is too large"
        );
        // Other files are left alone.
        std::fs::write(dir.join("x.nvrtc-info"), vec![0; 10_000]).unwrap();
        store(dir, &[6; 32], &entry(6), Some(2 * size)).unwrap();
        assert!(dir.join("x.nvrtc-info").exists() && present(5) && present(6));
    }

    #[test]
    fn cache_max_sizes_parse_and_errors_name_the_value() {
        assert_eq!(parse_max("1048576").unwrap(), 1 << 20);
        assert_eq!(parse_max("512M").unwrap(), 512 << 20);
        assert_eq!(parse_max(" 2g ").unwrap(), 2 << 30);
        assert_eq!(parse_max("64KiB").unwrap(), 64 << 10);
        assert_eq!(parse_max("1T").unwrap(), 1 << 40);
        for (bad, why) in [
            ("", "expected a number"),
            ("M", "expected a number"),
            ("-5", "expected a number"),
            ("1.5G", "unknown unit"),
            ("12X", "unknown unit"),
            ("99999999999999999999", "does not fit"),
            ("20000000T", "does not fit"),
        ] {
            match parse_max(bad) {
                Err(Error::InvalidCacheMax { value, reason }) => {
                    assert_eq!(value, bad);
                    assert!(reason.contains(why), "{bad:?}: {reason}");
                }
                other => panic!("{bad:?}: {other:?}"),
            }
        }
        let message = parse_max("12X").unwrap_err().to_string();
        assert!(
            message.contains("GPUKERNEL_CACHE_MAX") && message.contains("12X"),
            "{message}"
        );
    }
}
