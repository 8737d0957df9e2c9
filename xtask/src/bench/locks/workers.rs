//! The three libraries' worker processes: their command lines, and running one to its
//! `RESULT` line while reading the server's request counter at its window's edges.

use super::*;

/// What the workers are run with.
pub(super) struct Workers {
    pub(super) rust: PathBuf,
    pub(super) java_classpath: String,
    pub(super) kazoo_script: PathBuf,
    pub(super) pinning: Option<Pinning>,
}

impl Workers {
    /// The command line of `lib`'s worker with `sessions` contenders on `path`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn command(
        &self,
        lib: Lib,
        workload: Workload,
        connect: &str,
        path: &str,
        sessions: usize,
        warmup: f64,
        seconds: f64,
    ) -> Command {
        let (warmup, measure) = (millis(warmup).to_string(), millis(seconds).to_string());
        match lib {
            Lib::Ours | Lib::OursDrop => {
                let mut cmd = Pinning::command(self.pinning.as_ref(), &self.rust);
                cmd.arg("bench");
                let workload = if lib == Lib::OursDrop {
                    format!("{workload}-drop")
                } else {
                    workload.to_string()
                };
                cmd.arg(connect)
                    .arg(workload)
                    .arg(warmup)
                    .arg(measure)
                    .arg(path)
                    .arg(sessions.to_string());
                cmd
            }
            Lib::Curator => {
                let mut cmd = Pinning::command(self.pinning.as_ref(), "java");
                cmd.arg("-cp")
                    .arg(&self.java_classpath)
                    .arg(crate::curator::MAIN)
                    .arg("bench");
                cmd.arg(connect)
                    .arg(path)
                    .arg(sessions.to_string())
                    .arg(warmup)
                    .arg(measure)
                    .arg(workload.to_string());
                cmd
            }
            Lib::Kazoo => {
                let mut cmd = Pinning::command(self.pinning.as_ref(), PYTHON);
                cmd.arg(&self.kazoo_script)
                    .arg(connect)
                    .arg(path)
                    .arg(sessions.to_string())
                    .arg(warmup)
                    .arg(measure)
                    .arg(workload.to_string());
                cmd
            }
        }
    }
}

/// The server's `zk_packets_received`, or `None` (with a warning) if `mntr` does not say.
pub(super) fn packets_received(server: &ZkServer) -> Option<u64> {
    match server.mntr() {
        Ok(mntr) => {
            let value = mntr.get("zk_packets_received").and_then(|v| v.parse().ok());
            if value.is_none() {
                eprintln!("  warning: no zk_packets_received in mntr");
            }
            value
        }
        Err(e) => {
            eprintln!("  warning: mntr failed: {e}");
            None
        }
    }
}

/// Runs one worker to its `RESULT` line within `budget`, reading the server's request counter
/// at its `WINDOW_START` and `WINDOW_END`, and waits for it to exit. Returns its sample and the
/// requests the server received in its window.
pub(super) fn run_worker(
    cmd: Command,
    budget: Duration,
    server: &ZkServer,
) -> Result<(Sample, Option<u64>)> {
    let (mut before, mut after) = (None, None);
    let sample = worker::run_worker(cmd, budget, |line| match line {
        "WINDOW_START" => {
            before = packets_received(server);
            true
        }
        "WINDOW_END" => {
            after = packets_received(server);
            true
        }
        _ => false,
    })?;
    let requests = match (before, after) {
        (Some(b), Some(a)) => Some(a.saturating_sub(b)),
        _ => None,
    };
    Ok((sample, requests))
}
