//! Machine code embedded at build time: `<name>.fatbin`, SASS for each architecture of
//! [`Builder::sass_archs`](crate::Builder::sass_archs) plus the PTX, so that loading the kernels
//! on a listed GPU JIT-compiles nothing (the driver picks the SASS of the device's architecture,
//! and JIT-compiles the PTX only on a GPU none of them runs on).
//!
//! ```text
//! ptxas -arch=sm_XX -O3 <name>.sass.ptx -o <name>.sm_XX.cubin     (one per architecture)
//! fatbinary --create=<name>.fatbin --image3=kind=elf,sm=XX,file=... --image3=kind=ptx,sm=YY,file=...
//! ```
//!
//! The SASS is whole-program code (`ptxas` without `-c`), which the driver loads as it is. A
//! kernel that calls a foreign function left for the run-time `Linker` (an `.extern .func`
//! other than the JIT's system calls) cannot be compiled so: the fatbin holds the kernels that
//! call none ([`self_contained_entries`]), and those others stay in the PTX, for the Linker.
//! When every kernel is self-contained (no foreign code, or foreign code linked at build time
//! through `Builder::foreign_cuda`), the fatbin holds every kernel.
//!
//! An architecture below the PTX's own target gets its own PTX from the same optimised bitcode
//! (`llc -mcpu=sm_XX`): the NVVM reflection (`__CUDA_ARCH`) was answered for the build
//! architecture, and ptxas checks that no instruction of a newer architecture is left.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::io_err;
use crate::{Error, base_arch, parse_arch};

/// Functions an `.extern .func` may name without a run-time link: the PTX JIT's system calls
/// and the device-runtime function the driver resolves at load (ptxas leaves a relocation).
const NO_LINK_NEEDED: [&str; 5] = [
    "vprintf",
    "malloc",
    "free",
    "__assertfail",
    "cudaGraphSetConditional",
];

/// The architectures that get SASS when the build script names none: the build architecture,
/// and `sm_80` (A100) below it when the build architecture is a plain (not
/// architecture-specific) one newer than `sm_80`.
pub fn default_sass_archs(build_arch: &str) -> Vec<String> {
    let mut archs = Vec::new();
    if !build_arch.ends_with('a') && parse_arch(build_arch).is_some_and(|n| n > 80) {
        archs.push("sm_80".to_string());
    }
    archs.push(build_arch.to_string());
    archs
}

/// Checks the SASS architectures against the build architecture: each of the form `sm_XX`
/// (XX ≥ 70); an architecture-specific build (`sm_90a`) runs only on its own architecture, so
/// it gets SASS for that one only.
pub fn check_sass_archs(build_arch: &str, archs: &[String]) -> Result<(), Error> {
    for arch in archs {
        if parse_arch(arch).is_none() {
            return Err(Error::BadSassArch {
                arch: arch.clone(),
                reason: "not of the form `sm_XX` with XX ≥ 70".into(),
            });
        }
        if build_arch.ends_with('a') && arch != build_arch {
            return Err(Error::BadSassArch {
                arch: arch.clone(),
                reason: format!(
                    "the kernels are built for the architecture-specific {build_arch}, whose PTX \
                     runs on that architecture only: name `{build_arch}` alone"
                ),
            });
        }
        if arch.ends_with('a') && arch != build_arch {
            return Err(Error::BadSassArch {
                arch: arch.clone(),
                reason: format!(
                    "architecture-specific SASS needs a build for it (`Builder::arch(\"{arch}\")`), \
                     not {build_arch}"
                ),
            });
        }
    }
    Ok(())
}

/// One function of a PTX module: whether it is a kernel, and the functions its body names
/// (calls, and addresses taken).
#[derive(Debug, Default)]
struct Function {
    entry: bool,
    names: BTreeSet<String>,
    indirect_call: bool,
}

/// The kernels (`.entry`) of `ptx` and, of those, the ones that reach no foreign function:
/// no `.extern .func` other than the JIT's system calls and no `.extern .global`, through
/// direct calls, function addresses taken, or indirect calls (which may reach any function
/// whose address the module takes anywhere). Both lists keep the PTX's order.
pub fn self_contained_entries(ptx: &str) -> (Vec<String>, Vec<String>) {
    let mut functions: BTreeMap<String, Function> = BTreeMap::new();
    let mut order = Vec::new();
    let mut needs_link: BTreeSet<String> = BTreeSet::new();
    let mut extern_globals: BTreeSet<String> = BTreeSet::new();
    let mut bodies: Vec<(String, Vec<&str>)> = Vec::new();
    let mut outside: Vec<&str> = Vec::new();
    let mut current: Option<(String, Vec<&str>, bool)> = None;
    for line in ptx.lines() {
        if let Some((_, body, opened)) = current.as_mut() {
            if !*opened && line.trim_end().ends_with(';') {
                // A prototype (`.func f(\n .param ..\n)\n;`): the definition comes later.
                current = None;
                continue;
            }
            body.push(line);
            if line.starts_with('{') {
                *opened = true;
            } else if *opened && line.starts_with('}') {
                let (name, body, _) = current.take().expect("inside a function");
                bodies.push((name, body));
            }
            continue;
        }
        let t = line.trim_start();
        let is_extern = t.starts_with(".extern");
        let decl = declared_name(t);
        match decl {
            Some((name, kind)) if is_extern => {
                if kind == Kind::Global {
                    extern_globals.insert(name.clone());
                    needs_link.insert(name);
                } else if !NO_LINK_NEEDED.contains(&name.as_str()) {
                    needs_link.insert(name);
                }
            }
            Some((name, kind @ (Kind::Entry | Kind::Func))) => {
                // A prototype ending with `;` declares a function defined later.
                let defines = !line.trim_end().ends_with(';');
                let f = functions.entry(name.clone()).or_default();
                f.entry |= kind == Kind::Entry;
                if kind == Kind::Entry && !order.contains(&name) {
                    order.push(name.clone());
                }
                if defines {
                    current = Some((name, vec![line], line.contains('{')));
                }
            }
            _ => outside.push(line),
        }
    }
    let known: BTreeSet<String> = functions.keys().chain(needs_link.iter()).cloned().collect();
    // Names a function's body or a global initializer mentions outside a direct call's target.
    let mut address_taken: BTreeSet<String> = BTreeSet::new();
    for line in &outside {
        address_taken.extend(
            identifiers(line)
                .filter(|w| known.contains(*w))
                .map(String::from),
        );
    }
    for (name, body) in &bodies {
        let mut names = BTreeSet::new();
        let mut indirect = false;
        for line in body.iter().skip(1) {
            let t = line.trim_start();
            let call_target = t.starts_with("call").then(|| call_target(t)).flatten();
            match call_target {
                Some(target) if target.starts_with('%') => indirect = true,
                Some(target) => {
                    names.insert(target.to_string());
                }
                None => {}
            }
            for w in identifiers(t).filter(|w| known.contains(*w) && *w != name) {
                if Some(w) != call_target {
                    address_taken.insert(w.to_string());
                }
                names.insert(w.to_string());
            }
        }
        let f = functions.entry(name.clone()).or_default();
        f.names.extend(names);
        f.indirect_call |= indirect;
    }
    // Whether each function reaches a name that needs a link, found by a walk per entry.
    // Only functions are reached through an address: a variable's is a plain reference.
    address_taken.retain(|n| !extern_globals.contains(n));
    let reaches_link = |start: &str| {
        let mut seen: BTreeSet<&str> = BTreeSet::new();
        let mut stack = vec![start];
        while let Some(n) = stack.pop() {
            if needs_link.contains(n) {
                return true;
            }
            if !seen.insert(n) {
                continue;
            }
            if let Some(f) = functions.get(n) {
                stack.extend(f.names.iter().map(String::as_str));
                if f.indirect_call {
                    stack.extend(address_taken.iter().map(String::as_str));
                }
            }
        }
        false
    };
    let contained = order.iter().filter(|e| !reaches_link(e)).cloned().collect();
    (order, contained)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Entry,
    Func,
    Global,
}

/// The name a top-level PTX declaration or definition line introduces (`.entry`, `.func`,
/// `.global`), without its linkage directives.
fn declared_name(t: &str) -> Option<(String, Kind)> {
    let words: Vec<&str> = t.split_whitespace().collect();
    let pos = words
        .iter()
        .position(|w| matches!(*w, ".entry" | ".func" | ".global"))?;
    if !words[..pos]
        .iter()
        .all(|w| matches!(*w, ".visible" | ".extern" | ".weak" | ".common"))
    {
        return None;
    }
    let kind = match words[pos] {
        ".entry" => Kind::Entry,
        ".func" => Kind::Func,
        _ => Kind::Global,
    };
    let rest = t[t.find(words[pos])? + words[pos].len()..].trim_start();
    let rest = match kind {
        // `.func (.param .b32 func_retval0) name(`: skip the return parameter list.
        Kind::Func if rest.starts_with('(') => rest[rest.find(')')? + 1..].trim_start(),
        // `.global .align 4 .b8 name[4] = {...};`: the name follows the directives.
        Kind::Global => rest
            .split_whitespace()
            .find(|w| !w.starts_with('.') && !w.starts_with(|c: char| c.is_ascii_digit()))
            .unwrap_or(""),
        _ => rest,
    };
    let name: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '.'))
        .collect();
    (!name.is_empty()).then_some((name, kind))
}

/// The target of a `call` instruction: the first operand that is not a parenthesised list
/// (`call.uni (retval0), f, (param0);`, `call.uni f, ();`); a register for an indirect call.
fn call_target(t: &str) -> Option<&str> {
    let operands = t.split_once(char::is_whitespace)?.1;
    operands
        .split(',')
        .map(str::trim)
        .find(|o| !o.starts_with('(') && !o.ends_with(')'))
        .map(|o| o.trim_end_matches(';').trim())
}

/// The identifiers of a PTX line (letters, digits, `_`, `$`, `.`-free).
fn identifiers(line: &str) -> impl Iterator<Item = &str> {
    line.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$'))
        .filter(|w| !w.is_empty())
}

/// What the SASS step (`embed`) wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Embedded {
    /// The fatbin (`<name>.fatbin`).
    pub fatbin: PathBuf,
    /// The architectures it holds SASS for.
    pub archs: Vec<String>,
    /// The kernels it holds (all of the PTX's, unless some call foreign functions left for the
    /// run-time Linker).
    pub kernels: Vec<String>,
    /// The kernels left out: they call foreign functions only the run-time Linker resolves.
    pub left_out: Vec<String>,
}

/// The tools [`embed`] runs.
pub(crate) struct SassTools<'a> {
    pub ptxas: &'a Path,
    pub fatbinary: &'a Path,
    pub llc: &'a Path,
    pub opt: &'a Path,
}

/// Writes `<out>/<name>.fatbin`: SASS of the self-contained kernels of `ptx` for each of
/// `archs`, and their PTX; `None` (nothing written) when no kernel is self-contained. `bitcode` is the optimised module the PTX was made from; `exported`
/// the symbols kept public in it; `reflect` the llc arguments of the NVVM reflection.
#[allow(clippy::too_many_arguments)]
pub(crate) fn embed(
    tools: &SassTools<'_>,
    out_dir: &Path,
    name: &str,
    ptx: &Path,
    bitcode: &Path,
    exported: &[String],
    build_arch: &str,
    archs: &[String],
    reflect: &[OsString],
) -> Result<Option<Embedded>, Error> {
    let text = std::fs::read_to_string(ptx).map_err(io_err(ptx))?;
    let (entries, kernels) = self_contained_entries(&text);
    if kernels.is_empty() {
        return Ok(None);
    }
    let left_out: Vec<String> = entries
        .iter()
        .filter(|e| !kernels.contains(e))
        .cloned()
        .collect();
    let work = out_dir.join(format!("{name}-sass"));
    std::fs::create_dir_all(&work).map_err(io_err(&work))?;
    // The bitcode of the self-contained kernels alone, when some are left out.
    let source_bc = if left_out.is_empty() {
        bitcode.to_path_buf()
    } else {
        let keep: Vec<&str> = exported
            .iter()
            .map(String::as_str)
            .filter(|s| !left_out.iter().any(|l| l == s))
            .collect();
        let pruned = work.join("self-contained.bc");
        crate::device::run_tool(
            tools.opt,
            &[
                "-passes=internalize,globaldce".into(),
                format!("--internalize-public-api-list={}", keep.join(",")).into(),
                bitcode.as_os_str().to_owned(),
                "-o".into(),
                pruned.clone().into_os_string(),
            ],
        )?;
        pruned
    };
    let llc = |arch: &str, out: &Path| {
        let mut args: Vec<OsString> = reflect.to_vec();
        args.extend([
            format!("-mcpu={arch}").into(),
            "-O3".into(),
            source_bc.clone().into_os_string(),
            "-o".into(),
            out.as_os_str().to_owned(),
        ]);
        crate::device::run_tool(tools.llc, &args)
    };
    let ptx_for_build = if left_out.is_empty() {
        ptx.to_path_buf()
    } else {
        let p = work.join(format!("{name}.{build_arch}.ptx"));
        llc(build_arch, &p)?;
        p
    };
    let build_sm = parse_arch(build_arch).unwrap_or(0);
    // The PTX of each architecture first (one llc per architecture below the build's), then
    // every ptxas at once: they are independent processes.
    let mut jobs = Vec::new();
    for arch in archs {
        let sm = parse_arch(arch).unwrap_or(0);
        let source = if sm < build_sm {
            let p = work.join(format!("{name}.{arch}.ptx"));
            llc(base_arch(arch), &p)?;
            p
        } else {
            ptx_for_build.clone()
        };
        let cubin = work.join(format!("{name}.{arch}.cubin"));
        jobs.push(spawn_ptxas(tools, arch, source, cubin, false)?);
    }
    let mut images = wait_ptxas(tools, jobs, "")?;
    images.push(
        format!(
            "--image3=kind=ptx,sm={},file={}",
            build_arch.trim_start_matches("sm_"),
            ptx_for_build.display()
        )
        .into(),
    );
    let fatbin = out_dir.join(format!("{name}.fatbin"));
    let mut args: Vec<OsString> = vec![
        format!("--create={}", fatbin.display()).into(),
        "-64".into(),
    ];
    args.extend(images);
    crate::device::run_tool(tools.fatbinary, &args)?;
    Ok(Some(Embedded {
        fatbin,
        archs: archs.to_vec(),
        kernels,
        left_out,
    }))
}

/// One running `ptxas` (`-c`: a relocatable object) and what it makes.
type PtxasJob<'a> = (&'a String, PathBuf, PathBuf, std::process::Child);

/// Starts `ptxas -arch=<arch> -O3 <source> -o <out>` (with `-c` for relocatable code).
fn spawn_ptxas<'a>(
    tools: &SassTools<'_>,
    arch: &'a String,
    source: PathBuf,
    out: PathBuf,
    relocatable: bool,
) -> Result<PtxasJob<'a>, Error> {
    let mut cmd = Command::new(tools.ptxas);
    if relocatable {
        cmd.arg("-c");
    }
    let child = cmd
        .arg(format!("-arch={arch}"))
        .arg("-O3")
        .arg(&source)
        .arg("-o")
        .arg(&out)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(io_err(tools.ptxas))?;
    Ok((arch, source, out, child))
}

/// Waits for every job; the first that failed is `SassFailed` with its log (after `what`),
/// else one `fatbinary` image argument per job.
fn wait_ptxas(
    tools: &SassTools<'_>,
    jobs: Vec<PtxasJob<'_>>,
    what: &str,
) -> Result<Vec<OsString>, Error> {
    let mut images = Vec::new();
    for (arch, source, out, child) in jobs {
        let output = child.wait_with_output().map_err(io_err(tools.ptxas))?;
        if !output.status.success() {
            return Err(Error::SassFailed {
                arch: arch.clone(),
                ptx: source,
                log: format!(
                    "{what}{}{}",
                    String::from_utf8_lossy(&output.stdout),
                    String::from_utf8_lossy(&output.stderr)
                ),
            });
        }
        images.push(
            format!(
                "--image3=kind=elf,sm={},file={}",
                arch.trim_start_matches("sm_"),
                out.display()
            )
            .into(),
        );
    }
    Ok(images)
}

/// The relocatable machine code's file: `<out>/<name>.rdc.fatbin`.
pub(crate) fn relocatable_path(out_dir: &Path, name: &str) -> PathBuf {
    out_dir.join(format!("{name}.rdc.fatbin"))
}

/// Writes `<out>/<name>.rdc.fatbin`: relocatable machine code (`ptxas -c`) of every kernel of
/// the PTX, those calling foreign functions included (their calls stay unresolved), one
/// object per architecture of `archs`, for the run-time Linker to link with foreign machine
/// code instead of JIT-compiling the PTX (`Linker::add_ptx_with_sass`). An architecture
/// below the build's gets its own PTX from the bitcode, as in [`embed`].
#[allow(clippy::too_many_arguments)]
pub(crate) fn relocatable(
    tools: &SassTools<'_>,
    out_dir: &Path,
    name: &str,
    ptx: &Path,
    bitcode: &Path,
    build_arch: &str,
    archs: &[String],
    reflect: &[OsString],
) -> Result<PathBuf, Error> {
    let work = out_dir.join(format!("{name}-rdc"));
    std::fs::create_dir_all(&work).map_err(io_err(&work))?;
    let build_sm = parse_arch(build_arch).unwrap_or(0);
    let mut jobs = Vec::new();
    for arch in archs {
        let source = if parse_arch(arch).unwrap_or(0) < build_sm {
            let p = work.join(format!("{name}.{arch}.ptx"));
            let mut args: Vec<OsString> = reflect.to_vec();
            args.extend([
                format!("-mcpu={}", base_arch(arch)).into(),
                "-O3".into(),
                bitcode.as_os_str().to_owned(),
                "-o".into(),
                p.clone().into_os_string(),
            ]);
            crate::device::run_tool(tools.llc, &args)?;
            p
        } else {
            ptx.to_path_buf()
        };
        let object = work.join(format!("{name}.{arch}.o"));
        jobs.push(spawn_ptxas(tools, arch, source, object, true)?);
    }
    let out = relocatable_path(out_dir, name);
    let mut args: Vec<OsString> = vec![format!("--create={}", out.display()).into(), "-64".into()];
    args.extend(wait_ptxas(tools, jobs, "ptxas -c (relocatable code): ")?);
    crate::device::run_tool(tools.fatbinary, &args)?;
    Ok(out)
}

/// Writes `<out>/<name>.rdc.fatbin` when no machine code can be made: the PTX itself, which
/// the Linker then links as PTX (saying why).
pub(crate) fn write_relocatable_ptx_instead(
    out_dir: &Path,
    name: &str,
    ptx: &Path,
) -> Result<PathBuf, Error> {
    let out = relocatable_path(out_dir, name);
    std::fs::copy(ptx, &out).map_err(io_err(&out))?;
    Ok(out)
}

/// Writes `<out>/<name>.fatbin` when the CUDA tools are missing: the PTX itself, which loads the
/// same way (JIT-compiled by the driver).
pub(crate) fn write_ptx_instead(out_dir: &Path, name: &str, ptx: &Path) -> Result<PathBuf, Error> {
    let fatbin = out_dir.join(format!("{name}.fatbin"));
    std::fs::copy(ptx, &fatbin).map_err(io_err(&fatbin))?;
    Ok(fatbin)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = "\
.version 7.8
.target sm_90
.address_size 64

.extern .func  (.param .b32 func_retval0) mul_f32
(
\t.param .b64 mul_f32_param_0
)
;
.extern .func  (.param .b32 func_retval0) vprintf
(
\t.param .b64 vprintf_param_0,
\t.param .b64 vprintf_param_1
)
;
.extern .global .align 4 .u32 table;
.global .align 8 .u64 vtable[1] = {helper_ptr};
.func  (.param .b32 func_retval0) helper(
\t.param .b32 helper_param_0
)
;
.func helper_ptr()
{
\tret;
}
.func  (.param .b32 func_retval0) helper(
\t.param .b32 helper_param_0
)
{
\t{ // callseq 0, 0
\tcall.uni (retval0), mul_f32, (param0);
\t}
\tret;
}
.visible .entry calls_foreign(
\t.param .u64 p
)
{
\tcall.uni (retval0), helper, (param0);
\tret;
}
.visible .entry prints()
{
\tcall.uni (retval0), vprintf, (param0, param1);
\tret;
}
.visible .entry reads_table()
{
\tmov.u64 \t%rd1, table;
\tret;
}
.visible .entry indirect()
{
\tcall (retval0), %rd4, (param0), prototype_0;
\tret;
}
.visible .entry plain()
{
\tret;
}
";

    #[test]
    fn kernels_reaching_foreign_code_are_left_out() {
        let (all, contained) = self_contained_entries(PTX);
        assert_eq!(
            all,
            [
                "calls_foreign",
                "prints",
                "reads_table",
                "indirect",
                "plain"
            ]
        );
        // `indirect` may reach `helper_ptr` only (the one address taken), which is plain.
        assert_eq!(contained, ["prints", "indirect", "plain"]);
    }

    #[test]
    fn an_indirect_call_reaches_every_address_taken() {
        let ptx = PTX.replace("{helper_ptr}", "{helper}");
        let (_, contained) = self_contained_entries(&ptx);
        assert_eq!(contained, ["prints", "plain"]);
    }

    #[test]
    fn call_targets() {
        assert_eq!(call_target("call.uni (retval0), f, (param0);"), Some("f"));
        assert_eq!(call_target("call.uni f, ();"), Some("f"));
        assert_eq!(call_target("call.uni f;"), Some("f"));
        assert_eq!(
            call_target("call (retval0), %rd4, (param0), prototype_0;"),
            Some("%rd4")
        );
    }

    #[test]
    fn default_and_checked_archs() {
        assert_eq!(default_sass_archs("sm_90"), ["sm_80", "sm_90"]);
        assert_eq!(default_sass_archs("sm_80"), ["sm_80"]);
        assert_eq!(default_sass_archs("sm_75"), ["sm_75"]);
        assert_eq!(default_sass_archs("sm_90a"), ["sm_90a"]);
        let archs = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(check_sass_archs("sm_90", &archs(&["sm_80", "sm_90", "sm_100"])).is_ok());
        let e = check_sass_archs("sm_90a", &archs(&["sm_80"]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("sm_80") && e.contains("sm_90a"), "{e}");
        let e = check_sass_archs("sm_90", &archs(&["sm_100a"]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("Builder::arch(\"sm_100a\")"), "{e}");
        let e = check_sass_archs("sm_90", &archs(&["compute_90"]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("compute_90") && e.contains("sm_XX"), "{e}");
    }

    /// ptxas and fatbinary on a small PTX: one fatbin with SASS for sm_90 and sm_100 and the
    /// PTX; a PTX ptxas rejects is `SassFailed`, naming the architecture. Needs the CUDA tools
    /// (`cargo xtask doctor`), as the builder itself does.
    #[test]
    fn embed_runs_ptxas_per_architecture_and_fatbinary() {
        let (Some(ptxas), Some(fatbinary)) = (
            crate::find_cuda_tool("ptxas"),
            crate::find_cuda_tool("fatbinary"),
        ) else {
            panic!("ptxas and fatbinary are needed: run `cargo xtask doctor`");
        };
        let dir = std::env::temp_dir().join(format!("nvptx-builder-sass-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ptx = dir.join("k.ptx");
        std::fs::write(
            &ptx,
            ".version 7.8\n.target sm_90\n.address_size 64\n.visible .entry plain()\n{\n\tret;\n}\n",
        )
        .unwrap();
        // Never run: every kernel is self-contained and no architecture is below sm_90.
        let missing = Path::new("/nonexistent/llvm-tool");
        let tools = SassTools {
            ptxas: &ptxas,
            fatbinary: &fatbinary,
            llc: missing,
            opt: missing,
        };
        let archs = vec!["sm_90".to_string(), "sm_100".to_string()];
        let e = embed(&tools, &dir, "k", &ptx, missing, &[], "sm_90", &archs, &[])
            .unwrap()
            .expect("one self-contained kernel");
        assert_eq!(e.kernels, ["plain"]);
        assert!(e.left_out.is_empty());
        let bytes = std::fs::read(&e.fatbin).unwrap();
        assert_eq!(&bytes[..4], &0xBA55_ED50u32.to_le_bytes());
        assert!(dir.join("k-sass/k.sm_100.cubin").is_file());

        std::fs::write(
            &ptx,
            ".version 7.8\n.target sm_90\n.address_size 64\n.visible .entry bad()\n{\n\tno.such.instruction;\n}\n",
        )
        .unwrap();
        let err = embed(&tools, &dir, "k", &ptx, missing, &[], "sm_90", &archs, &[])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("to SASS for sm_90") && err.contains("sass_archs"),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// `ptxas -c` and fatbinary on a kernel calling a foreign function: the relocatable
    /// objects keep the call unresolved (where the whole-program SASS must leave the kernel
    /// out), one per architecture, each a relocatable ELF (`e_type` 1).
    #[test]
    fn relocatable_code_keeps_foreign_calls_for_the_linker() {
        let (Some(ptxas), Some(fatbinary)) = (
            crate::find_cuda_tool("ptxas"),
            crate::find_cuda_tool("fatbinary"),
        ) else {
            panic!("ptxas and fatbinary are needed: run `cargo xtask doctor`");
        };
        let dir = std::env::temp_dir().join(format!("nvptx-builder-rdc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ptx = dir.join("k.ptx");
        std::fs::write(
            &ptx,
            ".version 7.8\n.target sm_90\n.address_size 64\n\
             .extern .func (.param .b32 r) foreign_add(.param .b32 a);\n\
             .visible .entry calls(.param .u64 p)\n{\n\t.reg .b32 %r<3>;\n\t.reg .b64 %rd<2>;\n\
             \tld.param.u64 %rd1, [p];\n\tld.global.u32 %r1, [%rd1];\n\
             \t{\n\t.param .b32 a;\n\tst.param.b32 [a], %r1;\n\t.param .b32 r;\n\
             \tcall.uni (r), foreign_add, (a);\n\tld.param.b32 %r2, [r];\n\t}\n\
             \tst.global.u32 [%rd1], %r2;\n\tret;\n}\n",
        )
        .unwrap();
        let missing = Path::new("/nonexistent/llvm-tool");
        let tools = SassTools {
            ptxas: &ptxas,
            fatbinary: &fatbinary,
            llc: missing,
            opt: missing,
        };
        let archs = vec!["sm_90".to_string(), "sm_100".to_string()];
        let out = relocatable(&tools, &dir, "k", &ptx, missing, "sm_90", &archs, &[]).unwrap();
        assert_eq!(out, relocatable_path(&dir, "k"));
        let bytes = std::fs::read(&out).unwrap();
        assert_eq!(&bytes[..4], &0xBA55_ED50u32.to_le_bytes());
        for arch in &archs {
            let object = std::fs::read(dir.join(format!("k-rdc/k.{arch}.o"))).unwrap();
            assert!(object.starts_with(b"\x7fELF"), "{arch}");
            assert_eq!(
                u16::from_le_bytes([object[16], object[17]]),
                1,
                "{arch}: relocatable"
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn declared_names() {
        assert_eq!(
            declared_name(".visible .entry k("),
            Some(("k".into(), Kind::Entry))
        );
        assert_eq!(
            declared_name(".func  (.param .b32 func_retval0) f("),
            Some(("f".into(), Kind::Func))
        );
        assert_eq!(
            declared_name(".extern .global .align 4 .u32 table;"),
            Some(("table".into(), Kind::Global))
        );
        assert_eq!(declared_name("\tld.global.u32 %r1, [%rd1];"), None);
    }
}
