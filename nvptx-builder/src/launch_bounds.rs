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
/// kernel when no `.entry` of that name exists, or when it already has bounds.
pub(crate) fn apply(ptx: &str, bounds: &[LaunchBounds]) -> Result<String, String> {
    let mut text = ptx.to_owned();
    for b in bounds {
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
        // The parameter list ends at the first `)` that starts a line (llc puts each
        // parameter on its own line and the closing parenthesis alone).
        let after = at + needle.len();
        let close = text[after..]
            .find("\n)")
            .map(|i| after + i + 2)
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
    fn an_unknown_kernel_is_named_with_the_ones_that_exist() {
        let e = apply(PTX, &[bounds("c")]).unwrap_err();
        assert!(e.contains("\"c\"") && e.contains("kernels: a, b"), "{e}");
    }

    #[test]
    fn bounds_given_twice_are_refused() {
        let e = apply(PTX, &[bounds("a"), bounds("a")]).unwrap_err();
        assert!(e.contains("given twice"), "{e}");
    }
}
