//! The bytes of one entry of the linker's on-disk cache: a header (magic, format version, the
//! entry's key, the payload's lengths and its BLAKE3 checksum), then the cubin and the info
//! log of the link that produced it. A cache directory is shared by processes and may hold
//! truncated, corrupt or foreign files: [`decode`] checks everything before trusting a byte.

/// A cache key: the BLAKE3 hash of everything a link's result depends on.
pub(crate) type Key = [u8; 32];

/// The entry format's version; entries of other versions are misses.
pub(crate) const FORMAT_VERSION: u32 = 2;

const MAGIC: &[u8; 8] = b"GKLINK\x00\x01";
/// magic(8) + version(4) + reserved(4) + key(32) + cubin len(8) + log len(8) + checksum(32)
pub(crate) const HEADER_LEN: usize = 96;
pub(crate) const KEY_AT: usize = 16;
const CUBIN_LEN_AT: usize = 48;
const LOG_LEN_AT: usize = 56;
const CHECKSUM_AT: usize = 64;

/// A cache entry: the linked cubin and the info log of the link that produced it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    /// The cubin.
    pub(crate) cubin: Vec<u8>,
    /// The linker's info log.
    pub(crate) info_log: String,
}

/// The entry's bytes, for `key`.
pub(crate) fn encode(entry: &Entry, key: &Key) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + entry.cubin.len() + entry.info_log.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(key);
    out.extend_from_slice(&(entry.cubin.len() as u64).to_le_bytes());
    out.extend_from_slice(&(entry.info_log.len() as u64).to_le_bytes());
    let mut checksum = blake3::Hasher::new();
    checksum.update(&entry.cubin);
    checksum.update(entry.info_log.as_bytes());
    out.extend_from_slice(checksum.finalize().as_bytes());
    out.extend_from_slice(&entry.cubin);
    out.extend_from_slice(entry.info_log.as_bytes());
    out
}

fn array_at<const N: usize>(bytes: &[u8], at: usize) -> [u8; N] {
    bytes
        .get(at..at + N)
        .and_then(|s| s.try_into().ok())
        .unwrap_or([0; N])
}

/// Reads the entry for `key` from its bytes; the error says what is wrong with them.
pub(crate) fn decode(bytes: &[u8], key: &Key) -> Result<Entry, String> {
    if bytes.len() < HEADER_LEN {
        return Err(format!(
            "truncated ({} bytes, shorter than the header)",
            bytes.len()
        ));
    }
    if &bytes[..MAGIC.len()] != MAGIC {
        return Err("bad magic".into());
    }
    let version = u32::from_le_bytes(array_at(bytes, 8));
    if version != FORMAT_VERSION {
        return Err(format!(
            "format version {version}, expected {FORMAT_VERSION}"
        ));
    }
    if &array_at::<32>(bytes, KEY_AT) != key {
        return Err("key mismatch".into());
    }
    let cubin_len = u64::from_le_bytes(array_at(bytes, CUBIN_LEN_AT));
    let log_len = u64::from_le_bytes(array_at(bytes, LOG_LEN_AT));
    let payload = &bytes[HEADER_LEN..];
    if cubin_len.checked_add(log_len) != Some(payload.len() as u64) {
        return Err(format!(
            "length mismatch: header says {cubin_len} + {log_len} bytes, file has {}",
            payload.len()
        ));
    }
    if blake3::hash(payload).as_bytes() != &array_at::<32>(bytes, CHECKSUM_AT) {
        return Err("checksum mismatch".into());
    }
    // `cubin_len` is at most `payload.len()`, checked above.
    let (cubin, log) = payload.split_at(cubin_len as usize);
    Ok(Entry {
        cubin: cubin.to_vec(),
        info_log: String::from_utf8_lossy(log).into_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_every_check() {
        let entry = Entry {
            cubin: vec![1, 2, 3, 4, 5],
            info_log: "info".into(),
        };
        let key = [7u8; 32];
        let bytes = encode(&entry, &key);
        assert_eq!(bytes.len(), HEADER_LEN + 9);
        assert_eq!(decode(&bytes, &key), Ok(entry));
        let fails = |bytes: &[u8], key: &Key, why: &str| {
            let e = decode(bytes, key).unwrap_err();
            assert!(e.contains(why), "{e}");
        };
        fails(&bytes, &[8; 32], "key mismatch");
        fails(&bytes[..10], &key, "truncated");
        fails(&bytes[..HEADER_LEN + 2], &key, "length");
        let mut flipped = bytes.clone();
        flipped[HEADER_LEN + 1] ^= 0xff;
        fails(&flipped, &key, "checksum");
        let mut old = bytes.clone();
        old[8..12].copy_from_slice(&1u32.to_le_bytes());
        fails(&old, &key, "format version 1");
        let mut foreign = bytes;
        foreign[0] = b'X';
        fails(&foreign, &key, "magic");
        // Lengths that overflow or exceed the file.
        let mut huge = encode(
            &Entry {
                cubin: vec![],
                info_log: String::new(),
            },
            &key,
        );
        huge[CUBIN_LEN_AT..CUBIN_LEN_AT + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        huge[LOG_LEN_AT..LOG_LEN_AT + 8].copy_from_slice(&1u64.to_le_bytes());
        fails(&huge, &key, "length");
    }
}
