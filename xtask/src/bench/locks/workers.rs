//! The three libraries' worker processes: their command lines, and running one to its
//! `RESULT` line while reading the server's request counter at its window's edges.

use std::sync::mpsc;

use super::*;
use crate::bench::load::{Snapshot, WindowLoad};
use crate::bench::slices::{self, SLICE};

/// What the workers are run with.
pub(super) struct Workers {
    pub(super) rust: PathBuf,
    /// The Rust peer's worker (zookeeper-client 0.11), when built.
    pub(super) peer: Option<PathBuf>,
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
            Lib::Ours | Lib::OursDrop | Lib::OursCohort | Lib::OursCohorts => {
                let mut cmd = Pinning::command(self.pinning.as_ref(), &self.rust);
                cmd.arg("bench");
                let workload = match lib {
                    Lib::OursDrop => format!("{workload}-drop"),
                    Lib::OursCohort => format!("{workload}-cohort"),
                    Lib::OursCohorts => format!("{workload}-cohort/{SPREAD}"),
                    _ => workload.to_string(),
                };
                cmd.arg(connect)
                    .arg(workload)
                    .arg(warmup)
                    .arg(measure)
                    .arg(path)
                    .arg(sessions.to_string());
                cmd
            }
            Lib::ZkClient => {
                // `libs` holds it only when it was built.
                let peer = self.peer.clone().unwrap_or_default();
                let mut cmd = Pinning::command(self.pinning.as_ref(), &peer);
                cmd.arg(connect)
                    .arg(path)
                    .arg(sessions.to_string())
                    .arg(warmup)
                    .arg(measure);
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

/// What one worker run measured, beyond its own sample.
#[derive(Debug, Clone)]
pub(super) struct Measured {
    pub(super) sample: Sample,
    /// Requests the server received in the window.
    pub(super) requests: Option<u64>,
    /// The machine's load in the window.
    pub(super) load: WindowLoad,
    /// The server's request rate (per second) in each [`SLICE`] of the window.
    pub(super) slices: Vec<f64>,
}

/// Runs one worker to its `RESULT` line within `budget`, and waits for it to exit. At its
/// `WINDOW_START` and `WINDOW_END` the server's request counter and the machine's load are
/// read; in between, a thread reads the request counter every [`SLICE`].
pub(super) fn run_worker(
    cmd: Command,
    budget: Duration,
    server: &ZkServer,
    hz: u64,
) -> Result<Measured> {
    let addr = server.addr();
    let server_pid = server.pid();
    let (start_tx, start_rx) = mpsc::channel::<Instant>();
    let (stop_tx, stop_rx) = mpsc::channel::<()>();
    thread::scope(|scope| {
        let poller = scope.spawn(move || poll_requests(addr, &start_rx, &stop_rx));
        let (mut before, mut after) = (None, None);
        let (mut snap_start, mut snap_end) = (Snapshot::default(), Snapshot::default());
        let (mut started, mut ended) = (None, None);
        let sample = worker::run_worker(cmd, budget, |line| match line {
            "WINDOW_START" => {
                snap_start = Snapshot::take(server_pid);
                before = packets_received(server);
                let now = Instant::now();
                started = Some(now);
                let _ = start_tx.send(now);
                true
            }
            "WINDOW_END" => {
                let _ = stop_tx.send(());
                after = packets_received(server);
                ended = Some(Instant::now());
                snap_end = Snapshot::take(server_pid);
                true
            }
            _ => false,
        });
        // Whatever happened, the poller stops now.
        drop((start_tx, stop_tx));
        let polled = poller.join().unwrap_or_default();
        let sample = sample?;
        let requests = match (before, after) {
            (Some(b), Some(a)) => Some(a.saturating_sub(b)),
            _ => None,
        };
        let (window, slices) = match (started, ended, before, after) {
            (Some(s), Some(e), Some(b), Some(a)) => {
                let window = e.saturating_duration_since(s);
                let mut readings = vec![(Duration::ZERO, b)];
                readings.extend(polled.into_iter().filter(|&(t, _)| t < window));
                readings.push((window, a));
                (window, slices::rates(&readings))
            }
            (Some(s), Some(e), ..) => (e.saturating_duration_since(s), Vec::new()),
            _ => (Duration::from_millis(sample.measure_ms), Vec::new()),
        };
        let load = WindowLoad::between(&snap_start, &snap_end, sample.cpu_window_ticks, window, hz);
        Ok(Measured {
            sample,
            requests,
            load,
            slices,
        })
    })
}

/// From the `Instant` received on `start` (the window's start) until `stop` says so or is
/// dropped: the server's `zk_packets_received` every [`SLICE`], with the time since the
/// start. A reading that fails is skipped (the slice then spans two).
fn poll_requests(
    addr: std::net::SocketAddr,
    start: &mpsc::Receiver<Instant>,
    stop: &mpsc::Receiver<()>,
) -> Vec<(Duration, u64)> {
    let Ok(t0) = start.recv() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for k in 1u32.. {
        let due = t0 + SLICE * k;
        match stop.recv_timeout(due.saturating_duration_since(Instant::now())) {
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        let at = Instant::now().saturating_duration_since(t0);
        let packets = zk_testkit::four_letter(addr, "mntr", MNTR_TIMEOUT)
            .ok()
            .map(|text| zk_testkit::zk::parse_mntr(&text))
            .and_then(|m| m.get("zk_packets_received")?.parse().ok());
        if let Some(p) = packets {
            out.push((at, p));
        }
    }
    out
}

/// How long one `mntr` of the poller may take.
const MNTR_TIMEOUT: Duration = Duration::from_secs(2);
