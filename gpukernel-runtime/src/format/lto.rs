//! The records nvptx-builder leaves in a kernels crate's PTX for each foreign CUDA source it
//! linked in at build time (`Builder::foreign_cuda`): a global `__gpukernel_lto_<hash>` whose
//! bytes are UTF-8 lines `gpukernel-lto-v1`, `source=<path as the build script named it>`,
//! `hash=<FNV-1a 64 of the source's bytes, 16 hex digits>`, and one `defines=<function>` per
//! function with external linkage the source defines. The Linker reads them to recognise that
//! source, or its functions, added again at run time.

/// The prefix of the record globals.
pub(crate) const RECORD_PREFIX: &str = "__gpukernel_lto_";

/// One source linked in at build time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LtoRecord {
    /// The source, as the build script named it.
    pub(crate) source: String,
    /// FNV-1a (64 bits) of its bytes.
    pub(crate) hash: u64,
    /// The functions it defines.
    pub(crate) defines: Vec<String>,
}

impl LtoRecord {
    /// Parses one record's text; `None` for another version or a malformed record.
    pub(crate) fn parse(text: &str) -> Option<LtoRecord> {
        let mut lines = text.lines();
        if lines.next()? != "gpukernel-lto-v1" {
            return None;
        }
        let (mut source, mut hash) = (None, None);
        let mut defines = Vec::new();
        for line in lines {
            let (key, value) = line.split_once('=')?;
            match key {
                "source" => source = Some(value.to_owned()),
                "hash" => hash = u64::from_str_radix(value, 16).ok(),
                "defines" => defines.push(value.to_owned()),
                _ => {}
            }
        }
        Some(LtoRecord {
            source: source?,
            hash: hash?,
            defines,
        })
    }

    /// Whether `bytes` are this source's bytes.
    pub(crate) fn is_source(&self, bytes: &[u8]) -> bool {
        fnv1a(bytes) == self.hash
    }
}

/// FNV-1a, 64 bits (the hash nvptx-builder records).
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_parse_and_recognise_their_source() {
        let src = b"extern \"C\" __device__ int f(float* r) { return 0; }\n";
        let text = format!(
            "gpukernel-lto-v1\nsource=cuda/f.cu\nhash={:016x}\ndefines=f\ndefines=g\n",
            fnv1a(src)
        );
        let r = LtoRecord::parse(&text).unwrap();
        assert_eq!(r.source, "cuda/f.cu");
        assert_eq!(r.defines, ["f", "g"]);
        assert!(r.is_source(src));
        assert!(!r.is_source(b"something else"));
        assert_eq!(
            LtoRecord::parse("gpukernel-lto-v2\nsource=a\nhash=1\n"),
            None
        );
        assert_eq!(LtoRecord::parse("gpukernel-lto-v1\nsource=a\n"), None);
        assert_eq!(
            LtoRecord::parse("gpukernel-lto-v1\nsource=a\nhash=zz\n"),
            None
        );
        // The same values as nvptx-builder's FNV-1a (its test vectors: "" and "a").
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
