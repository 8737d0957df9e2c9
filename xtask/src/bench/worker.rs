//! Worker processes shared by the benchmarks (and the interop, stress and chaos harnesses):
//! building the release worker binaries in sight, and running one worker to its `RESULT` line.

use std::error::Error;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::sample::Sample;
use crate::paths::{target_dir, workspace_root};
use crate::worker_process::WorkerProcess;

type Result<T> = std::result::Result<T, Box<dyn Error>>;

/// Builds `zk-worker`, the process our side runs in, for `who` (`bench mutex`, `interop
/// rwlock`, ...), and returns its path. One line first says what is built and why; cargo's own
/// progress follows (see [`build_release_bin`]).
pub(crate) fn build_worker(who: &str) -> Result<PathBuf> {
    eprintln!(
        "{who}: building zk-worker, the process our side runs in, in release mode (cargo build \
         --release -p xtask --bin zk-worker --no-default-features): minutes the first time, \
         seconds after that"
    );
    build_release_bin("zk-worker")
}

/// Builds the Rust peer's worker, zookeeper-client 0.11 (`xtask/peers/zkc-worker`, a package
/// of its own that no workspace crate depends on), into `target/peers`, and returns its path.
/// Its dependencies come from crates.io the first time.
pub(crate) fn build_peer_worker(who: &str) -> Result<PathBuf> {
    eprintln!(
        "{who}: building zkc-worker, zookeeper-client 0.11's side, in release mode (cargo build \
         --release --manifest-path xtask/peers/zkc-worker/Cargo.toml)"
    );
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let manifest = workspace_root().join("xtask/peers/zkc-worker/Cargo.toml");
    let target = target_dir().join("peers");
    let status = Command::new(cargo)
        .current_dir(workspace_root())
        .args(["build", "--release", "--locked", "--manifest-path"])
        .arg(&manifest)
        .arg("--target-dir")
        .arg(&target)
        .stdout(Stdio::null())
        .status()?;
    if !status.success() {
        return Err(format!("building {} failed ({status})", manifest.display()).into());
    }
    Ok(target.join("release").join("zkc-worker"))
}

/// Builds xtask's binary `name` in release mode with the Cargo running us, and returns its
/// path. Cargo's progress (its `Compiling` lines, or its bar on a terminal) goes to our
/// stderr, so a long first build is seen to move. Without xtask's default features: the
/// workers measured are the recipes as a user builds them, without `tracing` (the demo's
/// `--log`) compiled in.
pub(crate) fn build_release_bin(name: &str) -> Result<PathBuf> {
    build_release_bin_with(name, &[], &target_dir())
}

/// [`build_release_bin`] with xtask's `features` on, into `target` (a planted worker goes to
/// a target directory of its own, so that the benchmarks' worker never carries a plant).
pub(crate) fn build_release_bin_with(
    name: &str,
    features: &[&str],
    target: &std::path::Path,
) -> Result<PathBuf> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(workspace_root()).args([
        "build",
        "--release",
        "-p",
        "xtask",
        "--bin",
        name,
        "--no-default-features",
    ]);
    if !features.is_empty() {
        cmd.arg("--features").arg(features.join(","));
    }
    let status = cmd
        .arg("--target-dir")
        .arg(target)
        .stdin(Stdio::null())
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit())
        .status()?;
    if !status.success() {
        return Err(format!("building {name} failed ({status})").into());
    }
    Ok(target.join("release").join(name))
}

/// Whole milliseconds in `seconds`, for worker arguments.
pub(crate) fn millis(seconds: f64) -> u64 {
    Duration::from_secs_f64(seconds)
        .as_millis()
        .try_into()
        .unwrap_or(u64::MAX)
}

/// Runs one worker to its `RESULT` line within `budget` and waits for it to exit. Every other
/// line goes to `on_line` first; lines it does not take (`false`) are echoed.
pub(crate) fn run_worker(
    cmd: Command,
    budget: Duration,
    on_line: impl FnMut(&str) -> bool,
) -> Result<Sample> {
    let deadline = Instant::now() + budget;
    let mut worker = WorkerProcess::spawn("bench", cmd)?;
    let line = worker.expect_with("RESULT ", deadline, on_line)?;
    let sample = Sample::parse(&line)?;
    worker.finish(deadline)?;
    Ok(sample)
}
