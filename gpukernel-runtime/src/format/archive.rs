//! Static libraries: `ar` archives of objects (`nvcc -lib`), read through the `object` crate.
//!
//! Only the common `!<arch>` format is accepted (thin archives and AIX big archives are not
//! what CUDA writes, and the driver cannot read them).

use object::read::archive::ArchiveFile;

/// The magic of an `ar` archive.
pub(crate) const MAGIC: &[u8; 8] = b"!<arch>\n";

/// Checks that every member of an archive lies inside it, and that it has at least one member
/// besides its symbol and name tables. Returns the number of members. The error says what
/// is wrong, in a sentence that starts with `it is`.
pub(crate) fn check(bytes: &[u8]) -> Result<usize, String> {
    if !bytes.starts_with(MAGIC) {
        return Err("it does not start with the archive magic `!<arch>\\n`".into());
    }
    let corrupt = |e: object::read::Error| format!("it is truncated or corrupt: {e}");
    let archive = ArchiveFile::parse(bytes).map_err(corrupt)?;
    // The symbol table (`/` or `/SYM64/`) is not among the members: check it lies inside.
    archive.symbols().map_err(corrupt)?;
    let mut members = 0usize;
    for member in archive.members() {
        let member = member.map_err(corrupt)?;
        member.data(bytes).map_err(|_| {
            let (start, _) = member.file_range();
            format!(
                "it is truncated: the member `{}` at byte {} runs past the end of the file",
                String::from_utf8_lossy(member.name()),
                start.saturating_sub(60)
            )
        })?;
        members += 1;
    }
    if members == 0 {
        return Err("it is an archive with no members".into());
    }
    Ok(members)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(name: &str, size: usize, data: &[u8]) -> Vec<u8> {
        let header = format!(
            "{:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n",
            name, 0, 0, 0, 644, size
        );
        assert_eq!(header.len(), 60);
        let mut m = header.into_bytes();
        m.extend_from_slice(data);
        m
    }

    #[test]
    fn members_are_walked() {
        let mut ar = MAGIC.to_vec();
        ar.extend(member("a.o/", 4, b"abcd"));
        assert_eq!(check(&ar), Ok(1));
        ar.extend(member("b.o/", 3, b"xyz\n"));
        ar.extend(member("c.o/", 1, b"z"));
        assert_eq!(check(&ar), Ok(3));
    }

    #[test]
    fn truncation_and_corruption_are_named() {
        let mut ar = MAGIC.to_vec();
        ar.extend(member("a.o/", 4, b"abcd"));
        ar.extend(member("b.o/", 400, b""));
        let e = check(&ar).unwrap_err();
        assert!(e.contains("runs past the end") && e.contains("b.o"), "{e}");
        let e = check(MAGIC).unwrap_err();
        assert!(e.contains("no members"), "{e}");
        let mut cut = MAGIC.to_vec();
        cut.extend(&member("a.o/", 4, b"abcd")[..30]);
        let e = check(&cut).unwrap_err();
        assert!(e.contains("truncated"), "{e}");
        let mut bad = MAGIC.to_vec();
        bad.extend(member("a.o/", 4, b"abcd"));
        bad[8 + 58] = b'x';
        let e = check(&bad).unwrap_err();
        assert!(e.contains("corrupt"), "{e}");
        assert!(check(b"!<thin>\n").is_err());
    }

    #[test]
    fn symbol_table_out_of_bounds() {
        let mut ar = MAGIC.to_vec();
        ar.extend(member("/", 5000, b"\0\0\0\0"));
        let e = check(&ar).unwrap_err();
        assert!(e.contains("truncated"), "{e}");
    }
}
