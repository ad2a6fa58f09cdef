//! The on-disk cache of linked cubins.
//!
//! One file per link, named by the hash of everything the link's result depends on (see
//! [`CacheKey`]). An entry is written to a temporary file in the cache directory and renamed
//! into place, so concurrent processes never see a partial entry (the last rename wins; all
//! writers of one key write the same bytes). Each entry carries a header with a magic, its
//! key, the payload's length and a checksum: a corrupt or truncated entry is treated as a miss
//! and rebuilt.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

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

/// A 128-bit FNV-1a hasher: stable across processes, Rust versions and platforms (std's
/// `DefaultHasher` is not), which an on-disk key needs.
#[derive(Debug, Clone)]
pub(crate) struct CacheKey {
    state: u128,
}

const FNV128_OFFSET: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
const FNV128_PRIME: u128 = 0x0000_0000_0100_0000_0000_0000_0000_013b;

impl CacheKey {
    /// A key seeded with the format version and this crate's version.
    pub(crate) fn new() -> Self {
        let mut key = CacheKey {
            state: FNV128_OFFSET,
        };
        key.field(
            "gpukernel-link-cache",
            FORMAT_VERSION.to_le_bytes().as_slice(),
        );
        key.field("crate", env!("CARGO_PKG_VERSION").as_bytes());
        key
    }

    fn bytes(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.state ^= b as u128;
            self.state = self.state.wrapping_mul(FNV128_PRIME);
        }
    }

    /// Adds one named, length-prefixed field (so that field boundaries can't shift).
    pub(crate) fn field(&mut self, name: &str, value: &[u8]) {
        self.bytes(&(name.len() as u64).to_le_bytes());
        self.bytes(name.as_bytes());
        self.bytes(&(value.len() as u64).to_le_bytes());
        self.bytes(value);
    }

    /// The key's digest.
    pub(crate) fn finish(&self) -> u128 {
        self.state
    }
}

/// 64-bit FNV-1a, the payload checksum.
fn checksum(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

const MAGIC: &[u8; 8] = b"GKLINK\x00\x01";
const FORMAT_VERSION: u32 = 1;
/// magic(8) + version(4) + reserved(4) + key(16) + cubin len(8) + log len(8) + checksum(8)
const HEADER_LEN: usize = 56;

/// A cache entry: the linked cubin and the info log of the link that produced it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) cubin: Vec<u8>,
    pub(crate) info_log: String,
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
pub(crate) fn entry_path(dir: &Path, key: u128) -> PathBuf {
    dir.join(format!("{key:032x}.cubin-cache"))
}

/// Reads and validates the entry for `key`.
pub(crate) fn load(dir: &Path, key: u128) -> Result<Entry, Miss> {
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
    decode(&bytes, key).map_err(|why| Miss::Invalid(format!("{}: {why}", path.display())))
}

fn decode(bytes: &[u8], key: u128) -> Result<Entry, String> {
    if bytes.len() < HEADER_LEN {
        return Err(format!(
            "truncated ({} bytes, shorter than the header)",
            bytes.len()
        ));
    }
    if &bytes[..8] != MAGIC {
        return Err("bad magic".into());
    }
    let u64_at = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().unwrap_or([0; 8]));
    let version = u32::from_le_bytes(bytes[8..12].try_into().unwrap_or([0; 4]));
    if version != FORMAT_VERSION {
        return Err(format!(
            "format version {version}, expected {FORMAT_VERSION}"
        ));
    }
    let stored_key = u128::from_le_bytes(bytes[16..32].try_into().unwrap_or([0; 16]));
    if stored_key != key {
        return Err("key mismatch".into());
    }
    let cubin_len = u64_at(32);
    let log_len = u64_at(40);
    let sum = u64_at(48);
    let payload = &bytes[HEADER_LEN..];
    if cubin_len.checked_add(log_len) != Some(payload.len() as u64) {
        return Err(format!(
            "length mismatch: header says {} + {} bytes, file has {}",
            cubin_len,
            log_len,
            payload.len()
        ));
    }
    if checksum(payload) != sum {
        return Err("checksum mismatch".into());
    }
    let (cubin, log) = payload.split_at(cubin_len as usize);
    Ok(Entry {
        cubin: cubin.to_vec(),
        info_log: String::from_utf8_lossy(log).into_owned(),
    })
}

fn encode(entry: &Entry, key: u128) -> Vec<u8> {
    let mut payload = Vec::with_capacity(entry.cubin.len() + entry.info_log.len());
    payload.extend_from_slice(&entry.cubin);
    payload.extend_from_slice(entry.info_log.as_bytes());
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&key.to_le_bytes());
    out.extend_from_slice(&(entry.cubin.len() as u64).to_le_bytes());
    out.extend_from_slice(&(entry.info_log.len() as u64).to_le_bytes());
    out.extend_from_slice(&checksum(&payload).to_le_bytes());
    out.extend_from_slice(&payload);
    out
}

/// Writes the entry for `key` atomically (temporary file + rename). Errors are returned for
/// the caller to report; a failed store never fails a link.
pub(crate) fn store(dir: &Path, key: u128, entry: &Entry) -> std::io::Result<PathBuf> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    std::fs::create_dir_all(dir)?;
    let path = entry_path(dir, key);
    let tmp = dir.join(format!(
        ".{key:032x}.{}.{}.tmp",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(&encode(entry, key))?;
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
        let key = 0x1234_u128;
        assert_eq!(load(&dir, key), Err(Miss::Absent));
        let path = store(&dir, key, &entry).unwrap();
        assert_eq!(load(&dir, key).unwrap(), entry);
        // Flip one payload byte: checksum mismatch.
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[HEADER_LEN + 1] ^= 0xff;
        std::fs::write(&path, &bytes).unwrap();
        assert!(matches!(load(&dir, key), Err(Miss::Invalid(why)) if why.contains("checksum")));
        // Truncate.
        std::fs::write(&path, &bytes[..HEADER_LEN + 2]).unwrap();
        assert!(matches!(load(&dir, key), Err(Miss::Invalid(why)) if why.contains("length")));
        std::fs::write(&path, &bytes[..10]).unwrap();
        assert!(matches!(load(&dir, key), Err(Miss::Invalid(why)) if why.contains("truncated")));
        // A different key in the file's header.
        store(&dir, key, &entry).unwrap();
        let other = std::fs::read(&path).unwrap();
        std::fs::write(entry_path(&dir, 7), other).unwrap();
        assert!(matches!(load(&dir, 7), Err(Miss::Invalid(why)) if why.contains("key")));
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
