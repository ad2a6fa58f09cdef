//! Launch bounds of named kernels ([`Builder::launch_bounds`](crate::Builder::launch_bounds)):
//! the PTX performance directives `.maxntid` and `.minnctapersm` written into each named
//! entry's header, which CUDA C gets from `__launch_bounds__(threads, blocks)`. They give ptxas
//! a register cap at the entry (65536 / (threads × blocks), rounded down to its allocation
//! granule), which `setmaxnreg` needs to take effect, and make a launch with more threads
//! per block fail instead of running with too few registers.

/// The bounds of one kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LaunchBounds {
    /// The entry's name (the kernel's function name).
    pub kernel: String,
    /// Most threads per block a launch may use.
    pub max_threads: u32,
    /// Fewest blocks per multiprocessor the register budget must allow.
    pub min_blocks: u32,
}

/// `ptx` with each bound's directives after its entry's parameter list. Fails naming the
/// kernel when no `.entry` of that name exists, when it already has bounds, or when the
/// values are outside what ptxas honours (1 to 1024 threads, 1 to 32 blocks).
/// The most threads a block has on every architecture (`.maxntid`'s useful range: ptxas
/// ignores a larger bound with a warning, and crashes on the largest values).
const MAX_BLOCK_THREADS: u32 = 1024;
/// The most blocks a multiprocessor holds on any architecture (ptxas ignores a larger
/// `.minnctapersm` with a warning).
const MAX_BLOCKS_PER_SM: u32 = 32;

/// Why a bound's values are not directives ptxas honours, if they are not.
fn check_values(b: &LaunchBounds) -> Result<(), String> {
    let name = &b.kernel;
    if !(1..=MAX_BLOCK_THREADS).contains(&b.max_threads) {
        return Err(format!(
            "`launch_bounds(\"{name}\", {}, {})`: max_threads must be 1 to {MAX_BLOCK_THREADS} \
             (the threads of a block); ptxas refuses 0 and ignores larger bounds",
            b.max_threads, b.min_blocks
        ));
    }
    if !(1..=MAX_BLOCKS_PER_SM).contains(&b.min_blocks) {
        return Err(format!(
            "`launch_bounds(\"{name}\", {}, {})`: min_blocks must be 1 to {MAX_BLOCKS_PER_SM} \
             (the blocks a multiprocessor holds); ptxas refuses 0 and ignores larger values",
            b.max_threads, b.min_blocks
        ));
    }
    Ok(())
}

pub(crate) fn apply(ptx: &str, bounds: &[LaunchBounds]) -> Result<String, String> {
    let mut text = ptx.to_owned();
    for b in bounds {
        check_values(b)?;
        let needle = format!(".entry {}(", b.kernel);
        let Some(at) = text.find(&needle) else {
            let entries: Vec<&str> = text
                .match_indices(".entry ")
                .filter_map(|(i, _)| text[i + 7..].split('(').next())
                .collect();
            return Err(format!(
                "`launch_bounds(\"{}\", ..)`: the PTX has no kernel of that name (kernels: {})",
                b.kernel,
                entries.join(", ")
            ));
        };
        // The parameter list ends at its first `)` (no parameter holds one): alone on its
        // line after llc's parameters, or right after the `(` of a kernel without any.
        let after = at + needle.len();
        let close = text[after..]
            .find(')')
            .map(|i| after + i + 1)
            .ok_or_else(|| format!("the entry `{}` has no parameter list's end", b.kernel))?;
        let body = text[close..]
            .find('{')
            .map(|i| close + i)
            .ok_or_else(|| format!("the entry `{}` has no body", b.kernel))?;
        if text[close..body].contains(".maxntid") {
            return Err(format!(
                "`launch_bounds(\"{}\", ..)` is given twice",
                b.kernel
            ));
        }
        let directives = format!(
            "\n.maxntid {}, 1, 1\n.minnctapersm {}\n",
            b.max_threads, b.min_blocks
        );
        text.insert_str(body, &directives);
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = ".visible .entry a(\n\t.param .u64 a_param_0\n)\n{\n\tret;\n}\n\
                       .visible .entry b(\n\t.param .u32 b_param_0\n)                // @b\n{\n\tret;\n}\n";

    fn bounds(kernel: &str) -> LaunchBounds {
        LaunchBounds {
            kernel: kernel.into(),
            max_threads: 384,
            min_blocks: 1,
        }
    }

    #[test]
    fn directives_go_between_the_parameters_and_the_body_of_the_named_entry() {
        let out = apply(PTX, &[bounds("b")]).unwrap();
        assert!(
            out.contains("// @b\n\n.maxntid 384, 1, 1\n.minnctapersm 1\n{"),
            "{out}"
        );
        assert_eq!(
            out.matches(".maxntid").count(),
            1,
            "entry a untouched: {out}"
        );
    }

    #[test]
    fn a_kernel_without_parameters_gets_its_own_bounds() {
        // llc writes `()` on the entry's line; the next `\n)` is another entry's.
        let ptx = ".visible .entry e()          // @e\n{\n\tret;\n}\n\
                   .visible .entry f(\n\t.param .u32 f_param_0\n)\n{\n\tret;\n}\n";
        let out = apply(ptx, &[bounds("e")]).unwrap();
        assert!(
            out.starts_with(
                ".visible .entry e()          // @e\n\n.maxntid 384, 1, 1\n.minnctapersm 1\n{"
            ),
            "{out}"
        );
        assert!(
            out.ends_with(".visible .entry f(\n\t.param .u32 f_param_0\n)\n{\n\tret;\n}\n"),
            "entry f untouched: {out}"
        );
        // Then bounds for `f` too: each its own.
        let both = apply(ptx, &[bounds("e"), bounds("f")]).unwrap();
        assert_eq!(both.matches(".maxntid").count(), 2, "{both}");
    }

    #[test]
    fn an_unknown_kernel_is_named_with_the_ones_that_exist() {
        let e = apply(PTX, &[bounds("c")]).unwrap_err();
        assert!(e.contains("\"c\"") && e.contains("kernels: a, b"), "{e}");
    }

    #[test]
    fn values_ptxas_refuses_or_ignores_are_refused_naming_the_kernel() {
        // ptxas: 0 is an error naming a PTX line, 4294967295 threads a crash (SIGFPE), more
        // than 1024 threads or 32 blocks a warning and no bounds at all.
        for (threads, blocks, what) in [
            (0, 1, "max_threads"),
            (1025, 1, "max_threads"),
            (u32::MAX, 1, "max_threads"),
            (256, 0, "min_blocks"),
            (256, 33, "min_blocks"),
            (32, u32::MAX, "min_blocks"),
        ] {
            let b = LaunchBounds {
                kernel: "a".into(),
                max_threads: threads,
                min_blocks: blocks,
            };
            let e = apply(PTX, &[b]).unwrap_err();
            assert!(
                e.contains("launch_bounds(\"a\"") && e.contains(what),
                "{threads}, {blocks}: {e}"
            );
        }
        for (threads, blocks) in [(1, 1), (1024, 1), (32, 32)] {
            let b = LaunchBounds {
                kernel: "a".into(),
                max_threads: threads,
                min_blocks: blocks,
            };
            assert!(apply(PTX, &[b]).is_ok(), "{threads}, {blocks}");
        }
    }

    #[test]
    fn bounds_given_twice_are_refused() {
        let e = apply(PTX, &[bounds("a"), bounds("a")]).unwrap_err();
        assert!(e.contains("given twice"), "{e}");
    }
}
