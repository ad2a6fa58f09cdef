//! `cargo xtask fuzz [--seconds N] [TARGET...]`: runs the fuzz targets of `fuzz/` with
//! cargo-fuzz (libFuzzer) on the nightly toolchain, installing cargo-fuzz when it is missing.
//!
//! Each target starts from its committed seeds (`fuzz/corpus/<target>/`, read only) and keeps
//! what it finds in `target/fuzz-corpus/<target>/`; a crashing input lands in
//! `fuzz/artifacts/<target>/`. The libFuzzer log of each run is `target/fuzz-logs/<target>.log`.

use std::process::{Command, Stdio};
use std::time::Instant;

use crate::{nightly, output, root, run, show};

/// Seconds per target when `--seconds` is not given.
const DEFAULT_SECONDS: u64 = 60;

/// What one run of a target did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Summary {
    /// Inputs executed.
    pub(crate) runs: u64,
    /// Seconds libFuzzer reports.
    pub(crate) seconds: u64,
}

pub(crate) fn fuzz(args: &[String]) -> Result<(), String> {
    let mut seconds = DEFAULT_SECONDS;
    let mut targets = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--seconds" => {
                seconds = args
                    .next()
                    .and_then(|s| s.parse().ok())
                    .ok_or("--seconds needs a number of seconds")?;
            }
            other if other.starts_with('-') => return Err(format!("unknown option `{other}`")),
            target => targets.push(target.to_string()),
        }
    }
    let all = list_targets()?;
    if targets.is_empty() {
        targets = all.clone();
    }
    if let Some(unknown) = targets.iter().find(|t| !all.contains(t)) {
        return Err(format!(
            "no fuzz target `{unknown}` (targets: {})",
            all.join(", ")
        ));
    }
    ensure_cargo_fuzz()?;
    let mut report = Vec::new();
    for target in &targets {
        let summary = run_target(target, seconds)?;
        eprintln!(
            "fuzz: {target}: {} runs in {} s, no crash",
            summary.runs, summary.seconds
        );
        report.push((target, summary));
    }
    for (target, s) in report {
        eprintln!("fuzz: {target:<12} {:>12} runs {:>6} s", s.runs, s.seconds);
    }
    Ok(())
}

/// The fuzz targets: the files of `fuzz/fuzz_targets/`.
fn list_targets() -> Result<Vec<String>, String> {
    let dir = root().join("fuzz/fuzz_targets");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .flatten()
        .filter_map(|e| {
            let p = e.path();
            (p.extension().is_some_and(|x| x == "rs"))
                .then(|| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
                .flatten()
        })
        .collect();
    names.sort();
    Ok(names)
}

/// A command on the nightly toolchain, without the stable cargo's environment.
pub(crate) fn nightly_cargo() -> Command {
    let mut cmd = Command::new("rustup");
    cmd.args(["run", &nightly(), "cargo"]);
    for var in [
        "CARGO",
        "RUSTC",
        "RUSTDOC",
        "RUSTC_WRAPPER",
        "CARGO_TARGET_DIR",
    ] {
        cmd.env_remove(var);
    }
    cmd
}

/// Installs cargo-fuzz with cargo (`cargo install cargo-fuzz --locked`) when missing.
fn ensure_cargo_fuzz() -> Result<(), String> {
    let version = || output(nightly_cargo().args(["fuzz", "--version"]));
    if let Some(v) = version() {
        eprintln!("fuzz: {}", v.trim());
        return Ok(());
    }
    let start = Instant::now();
    run(
        Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())).args([
            "install",
            "cargo-fuzz",
            "--locked",
        ]),
    )?;
    let v = version().ok_or("cargo-fuzz was installed but `cargo fuzz --version` fails")?;
    eprintln!(
        "fuzz: installed {} in {:.0} s",
        v.trim(),
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

fn run_target(target: &str, seconds: u64) -> Result<Summary, String> {
    let fuzz_dir = root().join("fuzz");
    let seeds = fuzz_dir.join("corpus").join(target);
    let work = root().join("target/fuzz-corpus").join(target);
    let logs = root().join("target/fuzz-logs");
    for dir in [&work, &logs] {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let log_path = logs.join(format!("{target}.log"));
    let log =
        std::fs::File::create(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
    let mut cmd = nightly_cargo();
    cmd.current_dir(&fuzz_dir)
        .args(["fuzz", "run", target])
        .arg(&work)
        .arg(&seeds)
        .arg("--")
        .arg(format!("-max_total_time={seconds}"))
        // A parser that takes seconds over one input hangs.
        .arg("-timeout=10")
        .arg("-print_final_stats=1")
        .stdout(Stdio::inherit())
        .stderr(log);
    eprintln!("$ {}  (log: {})", show(&cmd), log_path.display());
    let status = cmd
        .status()
        .map_err(|e| format!("could not start `{}`: {e}", show(&cmd)))?;
    let text = std::fs::read_to_string(&log_path).unwrap_or_default();
    if !status.success() {
        let tail: Vec<&str> = text.lines().rev().take(60).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(format!(
            "fuzz target `{target}` failed ({status}); crashing inputs are under {}:\n{}",
            fuzz_dir.join("artifacts").join(target).display(),
            tail.join("\n")
        ));
    }
    summary(&text).ok_or_else(|| {
        format!(
            "fuzz target `{target}`: no final statistics in {}",
            log_path.display()
        )
    })
}

/// Reads libFuzzer's final statistics (`-print_final_stats=1`) and its `Done … runs in … second(s)`.
pub(crate) fn summary(log: &str) -> Option<Summary> {
    let runs = log
        .lines()
        .find_map(|l| l.strip_prefix("stat::number_of_executed_units:"))
        .and_then(|n| n.trim().parse().ok());
    let done = log.lines().find_map(|l| {
        let rest = l.strip_prefix("Done ")?;
        let (runs, rest) = rest.split_once(" runs in ")?;
        let (secs, _) = rest.split_once(' ')?;
        Some((runs.parse().ok()?, secs.parse().ok()?))
    });
    match (runs, done) {
        (Some(runs), Some((_, seconds))) => Some(Summary { runs, seconds }),
        (None, Some((runs, seconds))) => Some(Summary { runs, seconds }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libfuzzer_statistics_are_read() {
        let log = "#2\tINITED cov: 10\n\
                   Done 123456 runs in 61 second(s)\n\
                   stat::number_of_executed_units: 123457\n\
                   stat::average_exec_per_sec:     2023\n";
        assert_eq!(
            summary(log),
            Some(Summary {
                runs: 123457,
                seconds: 61
            })
        );
        assert_eq!(summary("nothing"), None);
    }

    #[test]
    fn every_target_has_a_corpus() {
        let targets = list_targets().unwrap();
        assert!(targets.len() >= 4, "{targets:?}");
        for t in targets {
            let dir = root().join("fuzz/corpus").join(&t);
            let seeds = std::fs::read_dir(&dir).map(|d| d.count()).unwrap_or(0);
            assert!(seeds > 0, "{} has no seeds", dir.display());
        }
    }
}
