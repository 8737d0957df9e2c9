//! Our side of `bench queue`: `zk-worker queue <connect> <lock path> <waiters> <budget ms>`.
//!
//! One session (one `zk_client::Client`) on a current-thread tokio runtime, and `<waiters>`
//! tasks on it, each with its own `recipe_mutex::InterProcessMutex` on `<lock path>` (with
//! `cohort`: all sharing one `CohortMutex`, so the process has one node), each
//! calling `lock()` once, and releasing (`guard.release().await`) as soon as it holds. The
//! bench holds the lock first with a session of its own, so every waiter queues behind it.
//!
//! 1. Connected, the worker reads its resident set (`VmRSS`), then starts the waiters.
//! 2. It asks the server for this session's ephemeral nodes under the lock path
//!    (`get_ephemerals`) until there are `<waiters>` of them: the server answers a session's
//!    requests in order, so each answer counts every create sent before it. It prints
//!    `QUEUED` with the count and the resident set then ([`Queued`]).
//! 3. The bench releases its hold and sends `GO <release ns>`; the queue drains one waiter
//!    at a time. Each waiter notes when its `lock()` returned and when it called release.
//! 4. Once every waiter has released, it prints its holds (`HOLDS` lines) and returns the
//!    `RESULT` line ([`QueueResult`]) for `zk-worker` to print.
//!
//! It fails (an `ERROR` line) if the drain is not over within `<budget ms>`, and exits when
//! its stdin ends (the bench went away).

use std::error::Error;
use std::io::BufRead;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use recipe_mutex::{CohortBound, CohortGuard, InterProcessMutex};
use tokio::task::JoinSet;
use tokio::time::Instant;
use zk_client::Client;

use super::drain::Drain;
use super::lines::{Hold, QueueResult, Queued, holds_lines, parse_go, parse_rss_kib};

type Result<T> = std::result::Result<T, Box<dyn Error + Send + Sync>>;

/// The session timeout (as every bench worker asks for, Curator's included).
const SESSION_TIMEOUT: Duration = Duration::from_secs(10);
/// The most waiters one worker takes.
pub const MAX_WAITERS: usize = 100_000;
/// The usage line.
pub const USAGE: &str = "zk-worker queue <connect> <lock path> <waiters> <budget ms> [cohort]";

/// Runs the worker with its arguments (after `queue`); prints `QUEUED` and `HOLDS` lines and
/// returns the `RESULT` line.
///
/// # Errors
/// Bad arguments, a session or lock failure, or the budget spent before the drain ended.
pub fn process_main(args: &[String]) -> Result<String> {
    let (connect, path, waiters, budget, cohort) = match args {
        [connect, path, waiters, budget] => (connect, path, waiters, budget, false),
        [connect, path, waiters, budget, cohort] if cohort == "cohort" => {
            (connect, path, waiters, budget, true)
        }
        _ => return Err(format!("usage: {USAGE}").into()),
    };
    let waiters: usize = waiters
        .parse()
        .ok()
        .filter(|n| (1..=MAX_WAITERS).contains(n))
        .ok_or_else(|| format!("<waiters> wants 1 to {MAX_WAITERS}, got `{waiters}`"))?;
    let budget = Duration::from_millis(
        budget
            .parse()
            .map_err(|_| format!("<budget ms> is not a whole number: `{budget}`"))?,
    );
    let go = read_go_from_stdin();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(run(connect, path, waiters, budget, go, cohort))
}

/// A thread that reads stdin: the time in the first `GO` line goes to the receiver; the end
/// of stdin exits the process (the bench went away).
fn read_go_from_stdin() -> tokio::sync::oneshot::Receiver<u64> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let mut tx = Some(tx);
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if let Ok(ns) = parse_go(&line) {
                if let Some(tx) = tx.take() {
                    let _ = tx.send(ns);
                }
            }
        }
        std::process::exit(3);
    });
    rx
}

async fn run(
    connect: &str,
    path: &str,
    waiters: usize,
    budget: Duration,
    go: tokio::sync::oneshot::Receiver<u64>,
    cohort: bool,
) -> Result<String> {
    let deadline = Instant::now() + budget;
    let client = Client::builder()
        .hosts(connect)
        .session_timeout(SESSION_TIMEOUT)
        .connect()
        .await?;
    let rss_before_kib = rss_kib()?;
    let mut tasks = JoinSet::new();
    let shared = match cohort {
        true => Some(InterProcessMutex::new(client.clone(), path)?.cohort(CohortBound::default())),
        false => None,
    };
    for _ in 0..waiters {
        match &shared {
            Some(cohort) => {
                let cohort = cohort.clone();
                tasks.spawn(async move { held(cohort.lock().await?, CohortGuard::release).await });
            }
            None => {
                let mutex = InterProcessMutex::new(client.clone(), path)?;
                tasks.spawn(async move {
                    held(mutex.lock().await?, recipe_mutex::MutexGuard::release).await
                });
            }
        }
    }
    let nodes = match &shared {
        // One node for the process, and every waiter in the cohort behind it.
        Some(cohort) => {
            let nodes = queued(&client, path, 1, deadline).await?;
            while cohort.waiting() < waiters {
                if Instant::now() >= deadline {
                    return Err("the cohort's waiters did not all arrive within the budget".into());
                }
                tokio::task::yield_now().await;
            }
            nodes
        }
        None => queued(&client, path, waiters, deadline).await?,
    };
    let queued = Queued {
        waiters: waiters as u64,
        nodes: nodes as u64,
        rss_before_kib,
        rss_kib: rss_kib()?,
    };
    println!("{queued}");

    let mut holds = Vec::with_capacity(waiters);
    while let Some(joined) = tokio::time::timeout_at(deadline, tasks.join_next())
        .await
        .map_err(|_| {
            format!(
                "{} of {waiters} waiters still waiting when the budget ({budget:?}) ran out",
                waiters - holds.len()
            )
        })?
    {
        holds.push(joined??);
    }
    let released_ns = tokio::time::timeout_at(deadline, go)
        .await
        .map_err(|_| "no GO line from the bench within the budget")?
        .map_err(|_| "stdin ended before a GO line")?;
    for line in holds_lines(&holds) {
        println!("{line}");
    }
    let drain = Drain::of(released_ns, holds);
    let h = drain.histogram();
    client.close().await?;
    Ok(QueueResult {
        drained: h.count(),
        drain_ns: drain.drain_ns,
        p50_ns: h.percentile(50),
        p99_ns: h.percentile(99),
        rss_before_kib,
        rss_queued_kib: queued.rss_kib,
    }
    .to_string())
}

/// A waiter's hold: noted as taken and let go at once, then released with `release`.
async fn held<G, F, Fut>(guard: G, release: F) -> std::result::Result<Hold, recipe_mutex::Error>
where
    F: FnOnce(G) -> Fut,
    Fut: std::future::Future<Output = std::result::Result<(), recipe_mutex::Error>>,
{
    let acquired_ns = now_ns();
    let released_ns = now_ns();
    release(guard).await?;
    Ok(Hold {
        acquired_ns,
        released_ns,
    })
}

/// Waits until the session has `waiters` ephemeral nodes under `path` (one per waiter in the
/// queue), asking the server again after each answer; returns the count. An answer that
/// shows no progress waits a little before the next question; a question lost with the
/// connection (a server busy sending N listings of N names can miss the client's pings) is
/// asked again.
async fn queued(client: &Client, path: &str, waiters: usize, deadline: Instant) -> Result<usize> {
    let mut seen = 0;
    let mut pause = Duration::from_millis(1);
    loop {
        let asked = tokio::time::timeout_at(deadline, client.get_ephemerals(path))
            .await
            .map_err(|_| format!("only {seen} of {waiters} waiters queued within the budget"))?;
        let nodes = match asked {
            Ok(nodes) => nodes.len(),
            Err(zk_client::Error::ConnectionLoss) => {
                tokio::time::sleep(pause).await;
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        if nodes >= waiters {
            return Ok(nodes);
        }
        if nodes == seen {
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(50));
        } else {
            pause = Duration::from_millis(1);
        }
        seen = nodes;
    }
}

/// This process's resident set now, in KiB.
fn rss_kib() -> Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    Ok(parse_rss_kib(&status).ok_or("no VmRSS in /proc/self/status")?)
}

/// `CLOCK_REALTIME` in ns since the Unix epoch: the clock of the queue's lines, which
/// Curator's worker reads too (0 before 1970).
pub fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}
