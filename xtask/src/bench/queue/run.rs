//! One case of `bench queue`: a fresh server, the bench's own hold, the worker processes
//! queued behind it, the release, and the drain.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use recipe_mutex::InterProcessMutex;
use zk_client::Client;

use super::drain::{Drain, spread};
use super::lines::{Hold, QueueResult, Queued, parse_holds};
use super::ours::now_ns;
use super::{Case, Lib, Result};
use crate::bench::tap::Tap;
use crate::bench::worker::millis;
use crate::worker_process::WorkerProcess;
use crate::zk::{ZkOptions, ZkServer};

/// The holder's session timeout: long, so that a machine busy forming a queue of 10,000
/// does not end the hold the queue forms behind.
const HOLDER_SESSION_TIMEOUT: Duration = Duration::from_secs(30);
/// What the bench waits for a worker beyond the worker's own budget (it fails by itself
/// first; this is for one that hangs).
const SLACK: Duration = Duration::from_secs(15);

/// The workers' programs.
pub(super) struct Workers {
    /// `zk-worker`, release build.
    pub(super) rust: PathBuf,
    /// The Curator worker's classpath.
    pub(super) java_classpath: String,
}

impl Workers {
    fn command(
        &self,
        lib: Lib,
        connect: &str,
        path: &str,
        waiters: usize,
        budget: Duration,
    ) -> Command {
        let args = [
            "queue".to_owned(),
            connect.to_owned(),
            path.to_owned(),
            waiters.to_string(),
            millis(budget.as_secs_f64()).to_string(),
        ];
        match lib {
            Lib::Ours => {
                let mut cmd = Command::new(&self.rust);
                cmd.args(args);
                cmd
            }
            Lib::OursCohort => {
                let mut cmd = Command::new(&self.rust);
                cmd.args(args).arg("cohort");
                cmd
            }
            Lib::Curator => {
                let mut cmd = Command::new("java");
                cmd.arg("-cp")
                    .arg(&self.java_classpath)
                    .arg(crate::curator::MAIN)
                    .args(args);
                cmd
            }
        }
    }
}

/// The traffic between the workers and the server during the drain (from the bench's
/// release to the last worker's `RESULT`), from the tap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Traffic {
    /// Bytes of requests, replies and notifications, both ways (pings and handshakes left
    /// out).
    pub(super) bytes: u64,
    /// Requests (pings left out).
    pub(super) requests: u64,
    /// Watch notifications the server sent.
    pub(super) notifications: u64,
}

/// What one case measured.
#[derive(Debug, Clone)]
pub(super) struct Outcome {
    /// Each worker's `QUEUED`, in process order.
    pub(super) queued: Vec<Queued>,
    /// Each worker's `RESULT`.
    pub(super) results: Vec<QueueResult>,
    /// The waiters asked of each worker.
    pub(super) asked: Vec<usize>,
    /// Every hold, merged.
    pub(super) drain: Drain,
    /// The lock path's children just before the release, as the bench's session listed them
    /// (its own hold included).
    pub(super) children: usize,
    /// The drain's traffic, counted by the tap.
    pub(super) traffic: Option<Traffic>,
}

impl Outcome {
    /// Waiters that ran (Curator's JVM may have started fewer threads than asked).
    pub(super) fn waiters(&self) -> u64 {
        self.queued.iter().map(|q| q.waiters).sum()
    }
}

/// Runs `case` on a fresh server.
pub(super) fn case(workers: &Workers, case: &Case, force_sync: bool) -> Result<Outcome> {
    let server = ZkServer::start_with(ZkOptions::default().force_sync(force_sync))?;
    let rt = crate::worker_process::side_runtime()?;
    let path = format!(
        "/bench/queue/{}-{}-{}",
        case.lib.name(),
        case.waiters,
        case.processes
    );
    let holder = rt.block_on(
        Client::builder()
            .hosts(server.connect_string())
            .session_timeout(HOLDER_SESSION_TIMEOUT)
            .connect(),
    )?;
    let mutex = InterProcessMutex::new(holder.clone(), &path)?;
    let guard = rt.block_on(mutex.lock())?;

    let budget = case.budget();
    let deadline = std::time::Instant::now() + budget + SLACK;
    // The workers reach the server through a tap (the bench's holder does not).
    let tap = Tap::start(server.addr())?;
    let connect = tap.addr().to_string();
    let asked: Vec<usize> = spread(case.waiters, case.processes)
        .into_iter()
        .filter(|&n| n > 0)
        .collect();
    let mut procs = Vec::new();
    for (p, &n) in asked.iter().enumerate() {
        let cmd = workers.command(case.lib, &connect, &path, n, budget);
        let name = format!("queue {} {}/{}", case.lib.name(), p + 1, asked.len());
        procs.push(WorkerProcess::spawn(name, cmd)?);
    }
    let mut queued = Vec::new();
    for (worker, &n) in procs.iter_mut().zip(&asked) {
        let q = Queued::parse(&worker.expect("QUEUED ", deadline)?)?;
        if q.waiters < n as u64 {
            eprintln!(
                "  {} worker: started {} of {n} waiters",
                case.lib.name(),
                q.waiters
            );
        }
        queued.push(q);
    }
    let children = rt.block_on(holder.get_children(&path))?.len();

    let before = tap.counts();
    let released_ns = now_ns();
    rt.block_on(guard.release())?;
    for worker in &mut procs {
        worker.send(&format!("GO {released_ns}"))?;
    }
    let mut holds: Vec<Hold> = Vec::new();
    let mut results = Vec::new();
    for worker in &mut procs {
        let mut bad = None;
        let line = worker.expect_with("RESULT ", deadline, |line| {
            if !line.starts_with("HOLDS") {
                return false;
            }
            match parse_holds(line) {
                Ok(h) => holds.extend(h),
                Err(e) => bad = Some(e),
            }
            true
        })?;
        if let Some(e) = bad {
            return Err(e.into());
        }
        results.push(QueueResult::parse(&line)?);
    }
    let window = tap.counts().since(&before);
    for worker in &mut procs {
        worker.finish(deadline)?;
    }
    rt.block_on(holder.close())?;
    drop(server);
    Ok(Outcome {
        queued,
        results,
        asked,
        drain: Drain::of(released_ns, holds),
        children,
        traffic: Some(Traffic {
            bytes: window.bytes_sent + window.bytes_received,
            requests: window.requests,
            notifications: window.notifications,
        }),
    })
}
