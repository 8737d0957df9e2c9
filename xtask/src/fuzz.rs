//! `cargo xtask fuzz`: runs the fuzz targets with cargo-fuzz (libFuzzer, AddressSanitizer) and
//! counts what they did: executions, coverage, corpus, crashes, each target's numbers from
//! libFuzzer's own final statistics.
//!
//! The targets: zk-proto's `server_frames`, `request_frames` and `txn_log` (decoding is total,
//! what decodes re-encodes; `zk-proto/fuzz/README.md`) and zk-client's `session_bytes` (the
//! sans-IO session under arbitrary server bytes and driver inputs; `zk-client/fuzz/README.md`).
//! Each starts from its committed seeds and a corpus directory of its own (gitignored), which
//! later runs carry on from. CI runs a short run of each; a long run is the same command with a
//! larger budget. cargo-fuzz is installed with `cargo install` when missing; its nightly flags
//! run on the stable toolchain with `RUSTC_BOOTSTRAP=1`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// One fuzz target: the crate directory holding its `fuzz/` workspace, and its name.
#[derive(Debug, Clone, Copy)]
pub struct Target {
    /// The crate whose `fuzz/` directory holds the target, from the workspace root.
    pub krate: &'static str,
    /// The target's name.
    pub name: &'static str,
}

/// Every fuzz target of the workspace.
pub const TARGETS: [Target; 4] = [
    Target {
        krate: "zk-proto",
        name: "server_frames",
    },
    Target {
        krate: "zk-proto",
        name: "request_frames",
    },
    Target {
        krate: "zk-proto",
        name: "txn_log",
    },
    Target {
        krate: "zk-client",
        name: "session_bytes",
    },
];

/// How long, or how many executions, each target runs.
#[derive(Debug, Clone, Copy)]
pub enum Budget {
    /// Seconds of fuzzing per target (libFuzzer's `-max_total_time`).
    Seconds(u64),
    /// Executions per target (libFuzzer's `-runs`).
    Runs(u64),
}

/// How the targets are instrumented.
#[derive(Debug, Clone, Copy)]
pub struct Instrumentation {
    /// AddressSanitizer (cargo-fuzz's default). Every crate here forbids unsafe code, so it
    /// watches only our dependencies' unsafe code; off, a target runs about twice as fast.
    pub address_sanitizer: bool,
    /// LLVM's `sanitizer-coverage-trace-compares` (cargo-fuzz's default): libFuzzer sees the
    /// operands of comparisons and steers inputs towards them. Off, `session_bytes` runs about
    /// five times as fast (its scripts compare a lot per byte); a long run started from a
    /// corpus grown with it keeps that corpus and spends its budget on executions.
    pub trace_compares: bool,
}

impl Instrumentation {
    /// cargo-fuzz's defaults: AddressSanitizer and comparison tracing.
    pub const FULL: Self = Self {
        address_sanitizer: true,
        trace_compares: true,
    };

    /// The flags `cargo fuzz build` and `cargo fuzz run` take for it.
    fn cargo_fuzz_args(self) -> Vec<&'static str> {
        let mut args = vec![
            "--sanitizer",
            if self.address_sanitizer {
                "address"
            } else {
                "none"
            },
        ];
        if !self.trace_compares {
            args.push("--no-trace-compares");
        }
        args
    }

    fn describe(self) -> String {
        format!(
            "sanitizer: {}, comparison tracing: {}",
            if self.address_sanitizer {
                "address"
            } else {
                "none"
            },
            if self.trace_compares { "on" } else { "off" }
        )
    }
}

/// What libFuzzer reported at the end of one target's run.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Report {
    /// Inputs executed (`stat::number_of_executed_units`).
    pub executions: u64,
    /// Executions per second (`stat::average_exec_per_sec`).
    pub per_second: u64,
    /// Coverage counters hit (`cov:` of the last status line).
    pub coverage: u64,
    /// Features (`ft:`).
    pub features: u64,
    /// Corpus entries (`corp:`).
    pub corpus: u64,
    /// Peak RSS in MB (`stat::peak_rss_mb`).
    pub peak_rss_mb: u64,
}

/// Reads libFuzzer's output: the `stat::` lines `-print_final_stats=1` prints and the last
/// `#N ... cov: C ft: F corp: K/...` status line.
pub fn parse(output: &str) -> Report {
    let mut report = Report::default();
    let number = |s: &str| -> u64 {
        s.trim()
            .split(|c: char| !c.is_ascii_digit())
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    for line in output.lines() {
        if let Some(v) = line.strip_prefix("stat::number_of_executed_units:") {
            report.executions = number(v);
        } else if let Some(v) = line.strip_prefix("stat::average_exec_per_sec:") {
            report.per_second = number(v);
        } else if let Some(v) = line.strip_prefix("stat::peak_rss_mb:") {
            report.peak_rss_mb = number(v);
        } else if line.starts_with('#') && line.contains(" cov: ") {
            let mut words = line.split_whitespace();
            while let Some(word) = words.next() {
                let value = || words.clone().next().map(number).unwrap_or(0);
                match word {
                    "cov:" => report.coverage = value(),
                    "ft:" => report.features = value(),
                    "corp:" => report.corpus = value(),
                    _ => {}
                }
            }
        }
    }
    report
}

/// Makes sure `cargo fuzz` runs, installing cargo-fuzz when it is missing.
fn ensure_cargo_fuzz(cargo: &str) -> Result<(), Box<dyn std::error::Error>> {
    let installed = Command::new(cargo)
        .args(["fuzz", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if installed {
        return Ok(());
    }
    eprintln!("xtask: installing cargo-fuzz (cargo install cargo-fuzz --locked)");
    let status = Command::new(cargo)
        .args(["install", "cargo-fuzz", "--locked"])
        .status()?;
    if !status.success() {
        return Err(format!("cargo install cargo-fuzz failed ({status})").into());
    }
    Ok(())
}

/// Runs `targets` (all when empty) for `budget` each, from the workspace root `root`; prints
/// one line per target and a total, and writes `target/fuzz/report.md`. Fails on a crash (the
/// input is in the target's `fuzz/artifacts/`) or a target that did not run.
pub fn run(
    root: &Path,
    names: &[String],
    budget: Budget,
    instrumentation: Instrumentation,
) -> Result<Vec<(Target, Report)>, Box<dyn std::error::Error>> {
    let flags = instrumentation.cargo_fuzz_args();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    ensure_cargo_fuzz(&cargo)?;
    let targets: Vec<Target> = TARGETS
        .into_iter()
        .filter(|t| names.is_empty() || names.iter().any(|n| n == t.name))
        .collect();
    if targets.is_empty() {
        let known: Vec<&str> = TARGETS.iter().map(|t| t.name).collect();
        return Err(format!("no such fuzz target; the targets: {}", known.join(", ")).into());
    }
    let mut reports = Vec::new();
    let mut failed = Vec::new();
    for target in targets {
        let dir = root.join(target.krate);
        let corpus = PathBuf::from(format!("fuzz/corpus/{}", target.name));
        std::fs::create_dir_all(dir.join(&corpus))?;
        let seeds = format!("fuzz/seeds/{}", target.name);
        let limit = match budget {
            Budget::Seconds(s) => format!("-max_total_time={s}"),
            Budget::Runs(n) => format!("-runs={n}"),
        };
        // Built first, so the time counted is the fuzzing's.
        let built = Command::new(&cargo)
            .current_dir(&dir)
            .env("RUSTC_BOOTSTRAP", "1")
            .args(["fuzz", "build"])
            .args(&flags)
            .arg(target.name)
            .status()?;
        if !built.success() {
            return Err(format!("cargo fuzz build {} failed ({built})", target.name).into());
        }
        let started = Instant::now();
        let output = Command::new(&cargo)
            .current_dir(&dir)
            .env("RUSTC_BOOTSTRAP", "1")
            .args(["fuzz", "run"])
            .args(&flags)
            .arg(target.name)
            .arg(&corpus)
            .arg(&seeds)
            .args([
                "--",
                &limit,
                "-rss_limit_mb=2048",
                "-malloc_limit_mb=64",
                "-timeout=10",
                "-print_final_stats=1",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output()?;
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        let report = parse(&text);
        let seconds = started.elapsed().as_secs();
        if !output.status.success() || report.executions == 0 {
            let tail: Vec<&str> = text.lines().rev().take(30).collect();
            eprintln!("{}", tail.into_iter().rev().collect::<Vec<_>>().join("\n"));
            println!(
                "fuzz {}: FAILED ({}; see {}/fuzz/artifacts/{})",
                target.name, output.status, target.krate, target.name
            );
            failed.push(target.name);
            continue;
        }
        println!(
            "fuzz {}: {} executions in {} s ({}/s), cov {}, ft {}, corpus {}, peak RSS {} MB, 0 crashes",
            target.name,
            report.executions,
            seconds,
            report.per_second,
            report.coverage,
            report.features,
            report.corpus,
            report.peak_rss_mb,
        );
        reports.push((target, report));
    }
    let total: u64 = reports.iter().map(|(_, r)| r.executions).sum();
    println!(
        "fuzz: {} targets, {total} executions, {} failed",
        reports.len() + failed.len(),
        failed.len()
    );
    write_report(&reports, budget, instrumentation)?;
    if failed.is_empty() {
        Ok(reports)
    } else {
        Err(format!("fuzz targets failed: {}", failed.join(", ")).into())
    }
}

fn write_report(
    reports: &[(Target, Report)],
    budget: Budget,
    instrumentation: Instrumentation,
) -> Result<(), Box<dyn std::error::Error>> {
    let mut page = String::from("# Fuzzing\n\n");
    let budget = match budget {
        Budget::Seconds(s) => format!("{s} s per target"),
        Budget::Runs(n) => format!("{n} executions per target"),
    };
    writeln!(
        page,
        "`cargo xtask fuzz`, {budget}, cargo-fuzz (libFuzzer, {}), corpus carried over.\n",
        instrumentation.describe()
    )?;
    writeln!(
        page,
        "| target | executions | exec/s | cov | ft | corpus | peak RSS MB | crashes |"
    )?;
    writeln!(page, "| --- | --- | --- | --- | --- | --- | --- | --- |")?;
    for (t, r) in reports {
        writeln!(
            page,
            "| `{}` | {} | {} | {} | {} | {} | {} | 0 |",
            t.name, r.executions, r.per_second, r.coverage, r.features, r.corpus, r.peak_rss_mb
        )?;
    }
    let dir = crate::paths::target_dir().join("fuzz");
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join("report.md"), page)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_libfuzzers_final_stats_and_last_status_line() {
        let out = "\
INFO: Seed: 1234
#2\tINITED cov: 100 ft: 120 corp: 8/1024b exec/s: 0 rss: 40Mb
#4096\tpulse  cov: 150 ft: 300 corp: 20/2Kb lim: 48 exec/s: 2048 rss: 45Mb
#91234\tDONE   cov: 1563 ft: 7876 corp: 1037/575Kb lim: 4096 exec/s: 7100 rss: 362Mb
Done 91234 runs in 13 second(s)
stat::number_of_executed_units: 91234
stat::average_exec_per_sec:     7018
stat::new_units_added:          12
stat::slowest_unit_time_sec:    0
stat::peak_rss_mb:              362
";
        assert_eq!(
            parse(out),
            Report {
                executions: 91234,
                per_second: 7018,
                coverage: 1563,
                features: 7876,
                corpus: 1037,
                peak_rss_mb: 362,
            }
        );
        assert_eq!(parse("nothing"), Report::default());
    }
}
