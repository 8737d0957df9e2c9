//! One case of `bench many`: a fresh server, the worker through the tap, its three steps
//! (take every lock, release them all, close), and the tap's counts of each.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use super::lines::{Acquired, Ready, Released, Step};
use super::{CURATOR_POOL, Case, Lib, Result};
use crate::bench::tap::{Tap, TapCounts, op_name};
use crate::bench::worker::millis;
use crate::java;
use crate::worker_process::WorkerProcess;
use crate::zk::{ZkOptions, ZkServer};

/// The Curator worker's main class (`java/CuratorMany.java`), compiled on its own with
/// `BenchSupport.java`.
const CURATOR_MAIN: &str = "CuratorMany";

/// What the bench waits for a worker's line beyond the worker's own budget (it fails by
/// itself first; this is for one that hangs).
const SLACK: Duration = Duration::from_secs(15);

/// The workers' programs.
pub(super) struct Workers {
    /// `zk-worker`, release build.
    pub(super) rust: PathBuf,
    /// The Curator worker's classpath.
    pub(super) java_classpath: String,
}

/// Compiles `java/CuratorMany.java` (with `BenchSupport.java`) against Curator's jars and
/// returns its classpath.
///
/// # Errors
/// A failed compile.
pub(super) fn curator_classpath() -> Result<String> {
    let jars = java::jars(&crate::curator::CURATOR_JARS);
    let sources =
        [CURATOR_MAIN, "BenchSupport"].map(|name| java::java_dir().join(format!("{name}.java")));
    let classes = java::compile(CURATOR_MAIN, &sources, &jars)?;
    Ok(format!("{}:{jars}", classes.display()))
}

impl Workers {
    /// `server`: the server's own address, which our worker asks for its watches (`wchs`)
    /// before it reports the heap of its held locks.
    fn command(&self, case: &Case, connect: &str, path: &str, server: SocketAddr) -> Command {
        let args = [
            connect.to_owned(),
            case.shape.name().to_owned(),
            case.n.to_string(),
            path.to_owned(),
            millis(case.budget().as_secs_f64()).to_string(),
        ];
        match case.lib {
            Lib::Ours => {
                let mut cmd = Command::new(&self.rust);
                cmd.arg("many").args(args).arg(server.to_string());
                cmd
            }
            Lib::Curator => {
                let mut cmd = Command::new("java");
                cmd.arg("-cp")
                    .arg(&self.java_classpath)
                    .arg(CURATOR_MAIN)
                    .args(args)
                    .arg(CURATOR_POOL.to_string());
                cmd
            }
        }
    }
}

/// The tap's counts of one phase, pings and handshakes left out.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(super) struct Traffic {
    /// Requests.
    pub(super) requests: u64,
    /// Bytes both ways.
    pub(super) bytes: u64,
    /// Awaited round trips (a request pipelined behind an outstanding one rides on its trip).
    pub(super) round_trips: u64,
    /// Connect handshakes.
    pub(super) handshakes: u64,
    /// Requests by opcode name (`create`, `getChildren`, ...), in opcode order.
    pub(super) by_op: Vec<(String, u64)>,
}

impl Traffic {
    fn of(window: &TapCounts) -> Traffic {
        Traffic {
            requests: window.requests,
            bytes: window.bytes_sent + window.bytes_received,
            round_trips: window.round_trips,
            handshakes: window.handshakes,
            by_op: window
                .by_op
                .iter()
                .map(|(&code, &count)| (op_name(code), count))
                .collect(),
        }
    }
}

/// What one case measured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Outcome {
    /// The worker before its first lock.
    pub(super) ready: Ready,
    /// Every lock held.
    pub(super) acquired: Acquired,
    /// Every lock released.
    pub(super) released: Released,
    /// The tap's counts from `GO` to `ACQUIRED`.
    pub(super) acquire: Traffic,
    /// The tap's counts from `RELEASE` to `RELEASED`.
    pub(super) release: Traffic,
    /// The server's watches with every lock held (`wchs`' total), if it said.
    pub(super) watches: Option<u64>,
}

/// Runs `case` on a fresh server.
pub(super) fn case(workers: &Workers, case: &Case, force_sync: bool) -> Result<Outcome> {
    // The test kit's servers allow any number of connections per address already
    // (`maxClientCnxns=0`); nothing here needs a bigger `jute.maxbuffer`.
    let server = ZkServer::start_with(ZkOptions::default().force_sync(force_sync))?;
    let tap = Tap::start(server.addr())?;
    let path = format!("/many/{}-{}-{}", case.lib.name(), case.shape.name(), case.n);
    let budget = case.budget() + SLACK;
    let mut worker = WorkerProcess::spawn(
        format!("many {} {}", case.lib.name(), case.shape.name()),
        workers.command(case, &tap.addr().to_string(), &path, server.addr()),
    )?;
    let ready = Ready::parse(&worker.expect("READY ", Instant::now() + budget)?)?;

    let before = tap.counts();
    worker.send(Step::Go.line())?;
    let acquired = Acquired::parse(&worker.expect("ACQUIRED ", Instant::now() + budget)?)?;
    let between = tap.counts();
    if acquired.held != case.n as u64 {
        return Err(format!("{} of {} locks held", acquired.held, case.n).into());
    }
    // What every held lock keeps watched at the server (ours: one data watch on its own
    // node, which our worker waited for before it reported; Curator's: none).
    let watches = server
        .four_letter("wchs")
        .ok()
        .and_then(|wchs| total_watches(&wchs));

    worker.send(Step::Release.line())?;
    let released = Released::parse(&worker.expect("RELEASED ", Instant::now() + budget)?)?;
    let after = tap.counts();

    worker.send(Step::Close.line())?;
    worker.finish(Instant::now() + budget)?;
    drop(tap);
    drop(server);
    Ok(Outcome {
        ready,
        acquired,
        released,
        acquire: Traffic::of(&between.since(&before)),
        release: Traffic::of(&after.since(&between)),
        watches,
    })
}

/// The total from `wchs`' answer (`Total watches:N`).
pub(super) fn total_watches(wchs: &str) -> Option<u64> {
    wchs.lines()
        .find_map(|l| l.trim().strip_prefix("Total watches:"))
        .and_then(|n| n.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_watch_total_is_read_from_wchs() {
        let wchs = "1 connections watching 100000 paths\nTotal watches:100000\n";
        assert_eq!(super::total_watches(wchs), Some(100_000));
        assert_eq!(super::total_watches("no such line"), None);
    }
}
