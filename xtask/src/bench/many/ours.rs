//! Our side of `bench many`: `zk-worker many <connect> <locks|sessions> <n> <path> <budget ms>`.
//!
//! On a current-thread tokio runtime:
//!
//! - `locks`: one session (one `zk_client::Client`), then `READY`; on `GO`, `<n>` tasks, each
//!   with its own `recipe_mutex::InterProcessMutex` on `<path>/lock-<i>` (every lock a
//!   distinct path, so none waits for another), all calling `lock()` at once; the guards are
//!   kept.
//! - `sessions`: `READY` before any session; on `GO`, `<n>` tasks, each connecting its own
//!   `Client` and taking `<path>/lock-<i>` on it; clients and guards are kept.
//!
//! `ACQUIRED` once every lock is held: the time from `GO` to the last lock held; the live
//! heap, resident set and threads once the holds have settled (every hold's watch set: the
//! server, asked directly at `<server>` with `wchs`, counts a watch per lock, or 30 s passed),
//! so that the heap is what held locks keep, not the reads still in flight;
//! on `RELEASE`, every guard's `release()` at once, then `RELEASED`; on `CLOSE`, every
//! session closed, and the worker exits. Lines: [`super::lines`]. It fails (an `ERROR` line)
//! when a step is not over within `<budget ms>`, and exits when its stdin ends.

use std::error::Error;
use std::io::BufRead;
use std::time::Duration;

use recipe_mutex::{InterProcessMutex, MutexGuard};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio::time::Instant;
use zk_client::Client;

use super::Shape;
use super::lines::{Acquired, Ready, Released, Step, parse_threads};
use crate::bench::queue::lines::parse_rss_kib;

type Result<T> = std::result::Result<T, Box<dyn Error + Send + Sync>>;

/// The session timeout (as every bench worker asks for, Curator's included).
const SESSION_TIMEOUT: Duration = Duration::from_secs(10);
/// The most locks (or sessions) one worker takes.
pub const MAX_LOCKS: usize = 100_000;
/// The usage line.
pub const USAGE: &str =
    "zk-worker many <connect> <locks|sessions> <n> <path> <budget ms> <server for wchs>";

/// The longest the worker waits for every hold's watch before it reports the heap anyway.
const SETTLE_BOUND: Duration = Duration::from_secs(30);

/// Runs the worker with its arguments (after `many`), printing its lines.
///
/// # Errors
/// Bad arguments, a session or lock failure, or a step not done within the budget.
pub fn process_main(args: &[String]) -> Result<()> {
    let [connect, shape, n, path, budget, server] = args else {
        return Err(format!("usage: {USAGE}").into());
    };
    let shape = Shape::parse(shape).ok_or_else(|| format!("usage: {USAGE}"))?;
    let n: usize = n
        .parse()
        .ok()
        .filter(|n| (1..=MAX_LOCKS).contains(n))
        .ok_or_else(|| format!("<n> wants 1 to {MAX_LOCKS}, got `{n}`"))?;
    let budget = Duration::from_millis(
        budget
            .parse()
            .map_err(|_| format!("<budget ms> is not a whole number: `{budget}`"))?,
    );
    let server: std::net::SocketAddr = server
        .parse()
        .map_err(|_| format!("<server for wchs> is not an address: `{server}`"))?;
    // A diagnostic: `ZK_WORKER_PLANT=no-node-watch` (a worker built with the feature
    // `plant`) takes the locks keeping no watch per hold, to tell that watch's cost apart.
    if let Ok(name) = std::env::var("ZK_WORKER_PLANT") {
        crate::chaos::ours::ChaosPlant::parse(&name)
            .ok_or_else(|| format!("ZK_WORKER_PLANT: no plant `{name}`"))?
            .switch_on()
            .map_err(|e| e.to_string())?;
    }
    let steps = read_steps_from_stdin();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(run(connect, shape, n, path, budget, server, steps))
}

/// A thread that reads stdin: each step line goes to the receiver; the end of stdin exits
/// the process (the bench went away).
fn read_steps_from_stdin() -> mpsc::UnboundedReceiver<Step> {
    let (tx, rx) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if let Some(step) = Step::parse(&line) {
                let _ = tx.send(step);
            }
        }
        std::process::exit(3);
    });
    rx
}

/// Waits for `want` from the bench by `deadline`.
async fn step(
    steps: &mut mpsc::UnboundedReceiver<Step>,
    want: Step,
    deadline: Instant,
) -> Result<()> {
    match tokio::time::timeout_at(deadline, steps.recv()).await {
        Ok(Some(got)) if got == want => Ok(()),
        Ok(Some(got)) => {
            Err(format!("`{}` from the bench, not `{}`", got.line(), want.line()).into())
        }
        Ok(None) => Err("stdin ended".into()),
        Err(_) => Err(format!("no `{}` from the bench within the budget", want.line()).into()),
    }
}

/// Until the server counts `watches` watches (every hold's own, set by a task started with
/// it, which the acquire does not wait for), or [`SETTLE_BOUND`] passed.
async fn settle(server: std::net::SocketAddr, watches: u64) {
    let until = Instant::now() + SETTLE_BOUND;
    while Instant::now() < until {
        let total = tokio::task::spawn_blocking(move || {
            zk_testkit::four_letter(server, "wchs", Duration::from_secs(5))
                .ok()
                .and_then(|wchs| super::run::total_watches(&wchs))
        })
        .await
        .ok()
        .flatten();
        if total.is_some_and(|t| t >= watches) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn connect(hosts: &str) -> Result<Client> {
    Ok(Client::builder()
        .hosts(hosts)
        .session_timeout(SESSION_TIMEOUT)
        .connect()
        .await?)
}

/// Joins every task of `tasks` by `deadline`, in any order.
async fn join_all<T: 'static>(
    mut tasks: JoinSet<Result<T>>,
    deadline: Instant,
    what: &str,
) -> Result<Vec<T>> {
    let n = tasks.len();
    let mut out = Vec::with_capacity(n);
    while let Some(joined) = tokio::time::timeout_at(deadline, tasks.join_next())
        .await
        .map_err(|_| {
            format!(
                "{what}: {} of {n} not done within the budget",
                n - out.len()
            )
        })?
    {
        out.push(joined??);
    }
    Ok(out)
}

async fn run(
    hosts: &str,
    shape: Shape,
    n: usize,
    path: &str,
    budget: Duration,
    server: std::net::SocketAddr,
    mut steps: mpsc::UnboundedReceiver<Step>,
) -> Result<()> {
    // Each step may take the budget.
    let by = || Instant::now() + budget;
    // The locks shape's one session; the sessions shape has one per lock, made after GO.
    let shared = match shape {
        Shape::Locks => Some(connect(hosts).await?),
        Shape::Sessions => None,
    };
    println!("{}", ready()?);
    step(&mut steps, Step::Go, by()).await?;
    let started = Instant::now();
    let mut tasks: JoinSet<Result<(Option<Client>, MutexGuard)>> = JoinSet::new();
    for i in 0..n {
        let lock_path = format!("{path}/lock-{i}");
        match &shared {
            Some(client) => {
                let mutex = InterProcessMutex::new(client.clone(), &lock_path)?;
                tasks.spawn(async move { Ok((None, mutex.lock().await?)) });
            }
            None => {
                let hosts = hosts.to_owned();
                tasks.spawn(async move {
                    let client = connect(&hosts).await?;
                    let guard = InterProcessMutex::new(client.clone(), &lock_path)?
                        .lock()
                        .await?;
                    Ok((Some(client), guard))
                });
            }
        }
    }
    let held = join_all(tasks, by(), "lock()").await?;
    let ns = elapsed_ns(started);
    let (clients, guards): (Vec<Option<Client>>, Vec<MutexGuard>) = held.into_iter().unzip();
    settle(server, guards.len() as u64).await;
    let now = ready()?;
    println!(
        "{}",
        Acquired {
            ns,
            held: guards.len() as u64,
            rss_kib: now.rss_kib,
            heap_kib: now.heap_kib,
            threads: now.threads,
        }
    );

    step(&mut steps, Step::Release, by()).await?;
    let started = Instant::now();
    let mut tasks = JoinSet::new();
    for guard in guards {
        tasks.spawn(async move { Ok(guard.release().await?) });
    }
    join_all::<()>(tasks, by(), "release()").await?;
    let ns = elapsed_ns(started);
    let now = ready()?;
    println!(
        "{}",
        Released {
            ns,
            rss_kib: now.rss_kib,
            heap_kib: now.heap_kib,
        }
    );

    step(&mut steps, Step::Close, by()).await?;
    let mut tasks = JoinSet::new();
    for client in shared.into_iter().chain(clients.into_iter().flatten()) {
        tasks.spawn(async move { Ok(client.close().await?) });
    }
    join_all::<()>(tasks, by(), "close()").await?;
    Ok(())
}

/// The resident set, the live heap and the threads now (the `READY` line's figures).
fn ready() -> Result<Ready> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    Ok(Ready {
        rss_kib: parse_rss_kib(&status).ok_or("no VmRSS in /proc/self/status")?,
        // Zero without zk-worker's counting allocator.
        heap_kib: u64::try_from(count_alloc::live()).unwrap_or(0) / 1024,
        threads: parse_threads(&status).ok_or("no Threads in /proc/self/status")?,
    })
}

fn elapsed_ns(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_nanos()).unwrap_or(u64::MAX)
}
