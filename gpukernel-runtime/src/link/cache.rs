//! The on-disk cache of linked cubins.
//!
//! One file per link, named by the BLAKE3 hash of everything the link's result depends on (see
//! [`CacheKey`]). An entry is written to a temporary file in the cache directory and renamed
//! into place, so concurrent processes never see a partial entry (the last rename wins; all
//! writers of one key write the same bytes). Each entry carries a header with a magic, its
//! key, the payload's length and a checksum (`format::cache_entry`): a corrupt or truncated
//! entry is treated as a miss and rebuilt.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::format::cache_entry;
pub(crate) use crate::format::cache_entry::{Entry, Key};

/// Where and whether linked images are cached.
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
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Miss::Absent),
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

/// Writes the entry for `key` atomically (temporary file + rename). Errors are returned for
/// the caller to report; a failed store never fails a link.
pub(crate) fn store(dir: &Path, key: &Key, entry: &Entry) -> std::io::Result<PathBuf> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    std::fs::create_dir_all(dir)?;
    let path = entry_path(dir, key);
    let tmp = dir.join(format!(
        ".{}.{}.{}.tmp",
        hex(key),
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(&cache_entry::encode(entry, key))?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&tmp, &path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map(|()| path)
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
        let path = store(&dir, &key, &entry).unwrap();
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
        store(&dir, &key, &entry).unwrap();
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
}
