//! [`WorkerProcess`]: a worker process driven by lines, the one discipline every harness uses
//! (the benchmarks, the interop runs, the stress run): its stdout read line by line with a
//! deadline, its stdin held open (workers halt when it closes) and written to, its stderr
//! passed through, and the process killed and reaped when dropped.
//!
//! The lines themselves: a worker prints `READY` once connected, waits for `GO`, and ends with
//! one result line (`RESULT ...` from a benchmark worker, `COUNTS ...` from an interop or
//! stress worker); `ERROR <message>` at any point is a failure.

use std::error::Error;
use std::io::Write;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

type Result<T> = std::result::Result<T, Box<dyn Error>>;

/// The runtime our side of a harness runs on, in a worker process or in the harness's own
/// thread: multi-thread with two worker threads (CI machines have two cores).
///
/// # Errors
/// The runtime cannot be built.
pub fn side_runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
}

/// A worker process. Dropping it kills the process if it still runs, and reaps it.
pub struct WorkerProcess {
    name: String,
    child: Child,
    /// Held open: the worker halts when it closes.
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
}

impl WorkerProcess {
    /// Starts `cmd` with piped stdin and stdout; `name` labels its lines and errors.
    ///
    /// # Errors
    /// When the process cannot be started.
    pub fn spawn(name: impl Into<String>, mut cmd: Command) -> Result<WorkerProcess> {
        let name = name.into();
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("starting the {name} worker: {e}"))?;
        let stdin = child.stdin.take();
        let Some(stdout) = child.stdout.take() else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("the {name} worker has no stdout pipe").into());
        };
        Ok(WorkerProcess {
            name,
            child,
            stdin,
            lines: zk_testkit::lines::lines(stdout),
        })
    }

    /// The next line starting with `prefix`, by `by`; other lines are echoed to stderr.
    ///
    /// # Errors
    /// An `ERROR` line, the deadline (the process is then killed when dropped), or the
    /// process ending first.
    pub fn expect(&mut self, prefix: &str, by: Instant) -> Result<String> {
        self.expect_with(prefix, by, |_| false)
    }

    /// As [`WorkerProcess::expect`], other lines going to `on_line` first; those it does not
    /// take (`false`) are echoed.
    ///
    /// # Errors
    /// As for [`WorkerProcess::expect`].
    pub fn expect_with(
        &mut self,
        prefix: &str,
        by: Instant,
        mut on_line: impl FnMut(&str) -> bool,
    ) -> Result<String> {
        let name = &self.name;
        loop {
            let left = by.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.starts_with(prefix) => return Ok(line),
                Ok(line) if line.starts_with("ERROR") => {
                    return Err(format!("{name} worker: {line}").into());
                }
                Ok(line) => {
                    if !on_line(&line) {
                        eprintln!("  {name}: {line}");
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    return Err(
                        format!("{name} worker: no `{}` in time; killed", prefix.trim()).into(),
                    );
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let status = self.child.wait()?;
                    return Err(format!(
                        "{name} worker exited ({status}) without `{}`",
                        prefix.trim()
                    )
                    .into());
                }
            }
        }
    }

    /// Sends `GO`: the run starts.
    ///
    /// # Errors
    /// When the worker's stdin is closed.
    pub fn go(&mut self) -> Result<()> {
        self.send("GO")
    }

    /// Writes `line` (and a newline) to the worker's stdin.
    ///
    /// # Errors
    /// When the worker's stdin is closed.
    pub fn send(&mut self, line: &str) -> Result<()> {
        let stdin = self.stdin.as_mut().ok_or("no stdin pipe")?;
        stdin.write_all(line.as_bytes())?;
        stdin.write_all(b"\n")?;
        stdin.flush()?;
        Ok(())
    }

    /// The worker's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends the worker the signal `name` (`STOP`, `CONT`) with `kill`.
    ///
    /// # Errors
    /// `kill` failing (the process is gone, say).
    pub fn signal(&self, name: &str) -> Result<()> {
        let output = Command::new("kill")
            .arg(format!("-{name}"))
            .arg(self.child.id().to_string())
            .stdin(Stdio::null())
            .output()?;
        if output.status.success() {
            Ok(())
        } else {
            Err(format!(
                "kill -{name} {} ({} worker): {}",
                self.child.id(),
                self.name,
                String::from_utf8_lossy(&output.stderr).trim()
            )
            .into())
        }
    }

    /// Waits for the process to exit successfully by `by`.
    ///
    /// # Errors
    /// A failed exit, or none by `by` (the process is then killed when dropped).
    pub fn finish(&mut self, by: Instant) -> Result<()> {
        loop {
            if let Some(status) = self.child.try_wait()? {
                if !status.success() {
                    return Err(format!("{} worker exited with {status}", self.name).into());
                }
                return Ok(());
            }
            if Instant::now() >= by {
                return Err(format!("{} worker did not exit in time; killed", self.name).into());
            }
            thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

/// For a worker process: exits (code 3) when its stdin ends, that is when the harness that
/// started it went away, so that no worker outlives its harness.
pub fn exit_at_end_of_stdin() {
    std::thread::spawn(|| {
        use std::io::Read;
        let mut sink = [0u8; 64];
        let mut stdin = std::io::stdin();
        while matches!(stdin.read(&mut sink), Ok(n) if n > 0) {}
        std::process::exit(3);
    });
}
