//! `cargo xtask sanitize [TOOL] [STEP...]`: the GPU bundle's steps under NVIDIA's
//! compute-sanitizer, failing on any report.
//!
//! The GPU machines have no Rust, so the work is a mode of the bundle's `run.sh`:
//! `./run.sh sanitize [TOOL] [STEP...]` runs every test binary and example (or the named
//! steps) once per tool — memcheck, racecheck, synccheck and initcheck, or TOOL alone — with
//! `--error-exitcode`, so that a single report fails the run. This command builds that bundle
//! (with STEPs, only their binaries: a small one, quick to build and to carry) and runs it when
//! this machine has a GPU and compute-sanitizer, else prints what to run on one.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{
    GPU_ONLY_EXAMPLES, TWO_GPU_STEPS, bundle_preamble, cargo, copy, copy_dir, json_str, output,
    root, run,
};

/// compute-sanitizer's tools, in the order they run.
pub(crate) const TOOLS: [&str; 4] = ["memcheck", "racecheck", "synccheck", "initcheck"];

/// The test-binary features of the bundle (as `gpu_bundle`), and those of the examples.
const TEST_FEATURES: &str =
    "gpu,gpukernel-tests/cudarc-interop,gpukernel-runtime/nccl,ffi-examples/nccl";
const EXAMPLE_FEATURES: &str = "gpu,nccl";

/// The tools that do not apply to a step: memcheck and initcheck do not see memory that the
/// Vulkan driver allocates (every access to it would be reported).
fn skipped_tools(step: &str) -> &'static str {
    if GPU_ONLY_EXAMPLES.contains(&step) {
        "memcheck,initcheck"
    } else {
        "-"
    }
}

/// `run.sh`'s sanitize mode, for the bundle's test binaries `(name, file)` and examples. It
/// follows the preamble (which defines `gpus`, `fail`, `command_step`) and exits.
pub(crate) fn sanitize_sh(tests: &[(String, String)], examples: &[String]) -> String {
    let mut steps: Vec<(String, String)> = Vec::new();
    for (name, file) in tests {
        steps.push((name.clone(), format!("bin/{file} --test-threads=1")));
    }
    for e in examples {
        steps.push((e.clone(), format!("bin/{e}")));
    }
    let names: Vec<&str> = steps.iter().map(|(n, _)| n.as_str()).collect();
    let mut sh = format!(
        r#"if [ "$only" = sanitize ]; then
  # ./run.sh sanitize [all|{tools}] [STEP...]: each step once per tool; any report fails.
  shift
  tools="{all}"
  case "${{1:-all}}" in
    all) [ $# -gt 0 ] && shift ;;
    memcheck|racecheck|synccheck|initcheck) tools=$1; shift ;;
  esac
  want=" $* "
  known=" {known} "
  for s in $want; do
    case "$known" in *" $s "*) ;; *) echo "FAILED: no step named '$s'; the steps:$known"; exit 1 ;; esac
  done
  command -v compute-sanitizer >/dev/null || {{ echo 'FAILED: compute-sanitizer not found (CUDA toolkit)'; exit 1; }}
  compute-sanitizer --version | tail -1
  runs=0
  # sanitize NAME SKIPPED_TOOLS COMMAND...: COMMAND under each selected tool but the skipped.
  # API errors are not reported: the runtime checks every driver result itself, and probes
  # one parameter past the end with cuFuncGetParamInfo on purpose (drivers before CUDA 13.2
  # have no parameter count).
  sanitize() {{
    local name=$1 skip=$2 t; shift 2
    [ "$want" = "  " ] || [[ "$want" == *" $name "* ]] || return 0
    case " {two_gpu} " in *" $name "*)
      if [ "$gpus" -lt 2 ]; then echo "=== SKIPPED (needs 2 GPUs, found $gpus): $name"; skipped=$((skipped + 1)); return 0; fi ;;
    esac
    for t in $tools; do
      case ",$skip," in *",$t,"*) echo "=== $t does not apply to $name (skipped)"; continue ;; esac
      echo "=== [$t] $name"
      STEP_TIMEOUT="${{SANITIZE_TIMEOUT:-900}}" command_step compute-sanitizer --tool "$t" --report-api-errors no --error-exitcode 99 --print-limit 20 "$@"
      runs=$((runs + 1))
    done
  }}
"#,
        tools = TOOLS.join("|"),
        all = TOOLS.join(" "),
        known = names.join(" "),
        two_gpu = TWO_GPU_STEPS.join(" "),
    );
    for (name, cmd) in &steps {
        sh.push_str(&format!(
            "  sanitize {name} {} {cmd}\n",
            skipped_tools(name)
        ));
    }
    sh.push_str(
        r#"  echo
  if [ $fail -ne 0 ]; then echo "SANITIZER REPORTS OR FAILURES ($tools): see FAILED above"; exit 1; fi
  if [ $runs -eq 0 ]; then echo "FAILED: no step ran"; exit 1; fi
  if [ $skipped -ne 0 ]; then echo "NO REPORT IN $runs RUN(S), BUT $skipped STEP(S) WERE SKIPPED (needs 2 GPUs, found $gpus): NOT A FULL PASS"; exit 3; fi
  echo "NO SANITIZER REPORT: $runs run(s) of $tools"
  exit 0
fi
"#,
    );
    sh
}

/// `sanitize [TOOL] [STEP...] [--dir DIR]`.
pub(crate) fn sanitize(args: &[String]) -> Result<(), String> {
    let mut tool = "all".to_string();
    let mut steps = Vec::new();
    let mut dir = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--dir" => dir = Some(PathBuf::from(it.next().ok_or("--dir needs a folder")?)),
            t if t == "all" || TOOLS.contains(&t) => tool = t.to_string(),
            s if s.starts_with('-') => {
                return Err(format!(
                    "unknown option `{s}`\nusage: cargo xtask sanitize [all|{}] [STEP...] [--dir DIR]",
                    TOOLS.join("|")
                ));
            }
            s => steps.push(s.to_string()),
        }
    }
    let dir = dir.unwrap_or_else(|| {
        root().join(if steps.is_empty() {
            "gpu-bundle"
        } else {
            "gpu-bundle-sanitize"
        })
    });
    if steps.is_empty() {
        crate::gpu_bundle(Some(dir.clone()))?;
    } else {
        partial_bundle(&dir, &steps)?;
    }
    let mut cmd = Command::new(dir.join("run.sh"));
    cmd.arg("sanitize").arg(&tool).args(&steps);
    let gpu = output(Command::new("nvidia-smi").arg("-L")).is_some_and(|s| s.contains("GPU"));
    let sanitizer = output(Command::new("compute-sanitizer").arg("--version")).is_some();
    if gpu && sanitizer {
        return run(&mut cmd);
    }
    eprintln!(
        "sanitize: no GPU{} here: copy {} to a machine with one and run\n  ./run.sh sanitize {tool} {}",
        if gpu { " with compute-sanitizer" } else { "" },
        dir.display(),
        steps.join(" ")
    );
    Ok(())
}

/// A bundle of only the named steps (test binaries or examples of `ffi-examples`) and its
/// `run.sh` (preamble and sanitize mode: `./run.sh` alone runs nothing else).
fn partial_bundle(dir: &Path, steps: &[String]) -> Result<(), String> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir.join("bin")).map_err(|e| e.to_string())?;
    let example_dir = root().join("ffi-examples/examples");
    let (examples, tests): (Vec<&String>, Vec<&String>) = steps
        .iter()
        .partition(|s| example_dir.join(format!("{s}.rs")).is_file());
    let mut test_files = Vec::new();
    if !tests.is_empty() {
        let mut cmd = cargo();
        cmd.args([
            "test",
            "--release",
            "--no-run",
            "--message-format=json",
            "--features",
            TEST_FEATURES,
            "-p",
            "gpukernel-runtime",
            "-p",
            "gpukernel-tests",
            "-p",
            "ffi-examples",
        ]);
        for t in &tests {
            cmd.args(["--test", t]);
        }
        let out = cmd.output().map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(format!(
                "building the test binaries {tests:?} failed (a step is a test file's name, e.g. \
                 `gpu_launch`, or an example of ffi-examples):\n{}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            if !line.contains("\"reason\":\"compiler-artifact\"") || !line.contains("\"test\":true")
            {
                continue;
            }
            if let (Some(exe), Some(name)) = (json_str(line, "executable"), json_str(line, "name"))
            {
                let file = Path::new(&exe)
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                copy(Path::new(&exe), &dir.join("bin").join(&file))?;
                test_files.push((name, file));
            }
        }
    }
    let mut example_names = Vec::new();
    if !examples.is_empty() {
        let mut cmd = cargo();
        cmd.args([
            "build",
            "--release",
            "--features",
            EXAMPLE_FEATURES,
            "-p",
            "ffi-examples",
        ]);
        for e in &examples {
            cmd.args(["--example", e]);
        }
        run(&mut cmd)?;
        for e in &examples {
            copy(
                &root().join("target/release/examples").join(e),
                &dir.join("bin").join(e),
            )?;
            example_names.push(e.to_string());
        }
    }
    for f in std::fs::read_dir(dir.join("bin"))
        .map_err(|e| e.to_string())?
        .flatten()
    {
        let _ = Command::new("strip").arg(f.path()).status();
    }
    copy_dir(
        &root().join("ffi-examples/kernels/cuda"),
        &dir.join("data/cuda"),
    )?;
    let mut sh = bundle_preamble();
    sh.push_str("[ \"${1:-}\" = sanitize ] || set -- sanitize \"$@\"\nonly=sanitize\n");
    sh.push_str(&sanitize_sh(&test_files, &example_names));
    let run_sh = dir.join("run.sh");
    std::fs::write(&run_sh, sh).map_err(|e| e.to_string())?;
    let _ = Command::new("chmod").arg("+x").arg(&run_sh).status();
    eprintln!(
        "sanitize: a bundle of {} test binar(ies) and {} example(s) in {}",
        test_files.len(),
        example_names.len(),
        dir.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The generated mode, run by bash with a stand-in `compute-sanitizer` and step binaries:
    /// each step under each tool, a report (exit 99) fails the run, a tool or step can be
    /// chosen, and an unknown step is refused.
    #[test]
    fn the_sanitize_mode_runs_each_step_under_each_tool_and_fails_on_a_report() {
        let dir = std::env::temp_dir().join(format!("gpukernel-sanitize-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("bin")).unwrap();
        std::fs::create_dir_all(dir.join("fake")).unwrap();
        // The stand-in sanitizer logs its tool and command, and reports (exit 99) when run
        // with racecheck on `bad`.
        std::fs::write(
            dir.join("fake/compute-sanitizer"),
            "#!/bin/sh\n[ \"$1\" = --version ] && { echo 'fake sanitizer'; exit 0; }\necho \"$2 $*\" >> \"$LOG\"\ncase \"$2:$*\" in racecheck:*bin/bad*) exit 99 ;; esac\nexit 0\n",
        )
        .unwrap();
        Command::new("chmod")
            .arg("+x")
            .arg(dir.join("fake/compute-sanitizer"))
            .status()
            .unwrap();
        let tests = vec![("good".to_string(), "good-1234".to_string())];
        let examples = vec!["bad".to_string(), "vulkan_interop".to_string()];
        let mut sh = String::from(
            "#!/usr/bin/env bash\nset -u\ncd \"$(dirname \"$0\")\"\nonly=\"${1:-all}\"\nfail=0\nskipped=0\ngpus=1\ncommand_step() { echo \"=== $*\"; \"$@\" || { echo \"FAILED ($?): $*\"; fail=1; }; }\n",
        );
        sh.push_str(&sanitize_sh(&tests, &examples));
        sh.push_str("echo NOT-SANITIZE-MODE\n");
        std::fs::write(dir.join("run.sh"), sh).unwrap();
        let log = dir.join("log");
        let run = |args: &[&str]| {
            let _ = std::fs::remove_file(&log);
            let out = Command::new("bash")
                .arg(dir.join("run.sh"))
                .args(args)
                .env("LOG", &log)
                .env(
                    "PATH",
                    format!(
                        "{}:{}",
                        dir.join("fake").display(),
                        std::env::var("PATH").unwrap()
                    ),
                )
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            let calls = std::fs::read_to_string(&log).unwrap_or_default();
            (out.status.code(), text, calls)
        };
        // Every step, every tool: racecheck's report on `bad` fails the run.
        let (code, text, calls) = run(&["sanitize"]);
        assert_eq!(code, Some(1), "{text}");
        assert!(text.contains("SANITIZER REPORTS"), "{text}");
        for t in TOOLS {
            assert!(calls.contains(&format!("{t} --tool {t} ")), "{calls}");
        }
        assert!(calls.contains("bin/good-1234 --test-threads=1"), "{calls}");
        // vulkan_interop: racecheck and synccheck only.
        let vk: Vec<&str> = calls
            .lines()
            .filter(|l| l.contains("vulkan_interop"))
            .collect();
        assert_eq!(vk.len(), 2, "{calls}");
        assert!(!text.contains("NOT-SANITIZE-MODE"));
        // One tool, one step: clean.
        let (code, text, calls) = run(&["sanitize", "memcheck", "bad"]);
        assert_eq!(code, Some(0), "{text}");
        assert_eq!(calls.lines().count(), 1, "{calls}");
        assert!(
            text.contains("NO SANITIZER REPORT: 1 run(s) of memcheck"),
            "{text}"
        );
        // An unknown step is refused, naming the steps there are.
        let (code, text, _) = run(&["sanitize", "all", "nosuch"]);
        assert_eq!(code, Some(1), "{text}");
        assert!(
            text.contains("no step named 'nosuch'") && text.contains(" good "),
            "{text}"
        );
        // Not the sanitize mode: the script goes on to its normal steps.
        let (_, text, calls) = run(&[]);
        assert!(
            text.contains("NOT-SANITIZE-MODE") && calls.is_empty(),
            "{text}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
