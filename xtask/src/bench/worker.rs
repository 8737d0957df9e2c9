//! Worker processes shared by the benchmarks (and the interop harness): building the
//! release worker binaries, and running one worker to its `RESULT` line.

use std::error::Error;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use super::sample::Sample;
use crate::paths::{target_dir, workspace_root};

type Result<T> = std::result::Result<T, Box<dyn Error>>;

/// Builds xtask's binary `name` in release mode with the Cargo running us, and returns its
/// path.
pub(crate) fn build_release_bin(name: &str) -> Result<PathBuf> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(workspace_root())
        .args([
            "build",
            "--release",
            "--quiet",
            "-p",
            "xtask",
            "--bin",
            name,
        ])
        .status()?;
    if !status.success() {
        return Err(format!("building {name} failed ({status})").into());
    }
    Ok(target_dir().join("release").join(name))
}

/// Whole milliseconds in `seconds`, for worker arguments.
pub(crate) fn millis(seconds: f64) -> u64 {
    Duration::from_secs_f64(seconds)
        .as_millis()
        .try_into()
        .unwrap_or(u64::MAX)
}

/// A worker process; dropping it kills it (if still running) and reaps it.
struct Worker {
    child: Child,
    /// Held open: the worker exits when it closes.
    _stdin: Option<ChildStdin>,
}

impl Drop for Worker {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// Runs one worker to its `RESULT` line within `budget` and waits for it to exit. Every other
/// line goes to `on_line` first; lines it does not take (`false`) are echoed.
pub(crate) fn run_worker(
    mut cmd: Command,
    budget: Duration,
    mut on_line: impl FnMut(&str) -> bool,
) -> Result<Sample> {
    let deadline = Instant::now() + budget;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()?;
    let stdout = child.stdout.take().ok_or("no stdout pipe")?;
    let mut worker = Worker {
        _stdin: child.stdin.take(),
        child,
    };
    let (tx, lines) = mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let sample = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            Ok(line) if line.starts_with("RESULT ") => break Sample::parse(&line)?,
            Ok(line) if line.starts_with("ERROR") => return Err(line.into()),
            Ok(line) => {
                if !on_line(&line) {
                    eprintln!("  worker: {line}");
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                return Err(format!("no result within {budget:?}; killed").into());
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let status = worker.child.wait()?;
                return Err(format!("exited ({status}) without a result").into());
            }
        }
    };
    loop {
        if let Some(status) = worker.child.try_wait()? {
            if !status.success() {
                return Err(format!("exited with {status} after its result").into());
            }
            return Ok(sample);
        }
        if Instant::now() >= deadline {
            return Err("did not exit after its result; killed".into());
        }
        thread::sleep(Duration::from_millis(10));
    }
}
