//! `cargo xtask stress mutex [--seconds N] [--processes P] [--tasks T]`: many tasks in several
//! processes acquiring one `InterProcessMutex` with timeouts that cancel them at any point.
//!
//! Each worker process (this binary's hidden `stress-worker` command) runs `T` tasks on a
//! session of its own; each task loops `tokio::time::timeout(d, mutex.lock())` with `d` mostly
//! 0–3 ms (cancelled in the middle of anything) and sometimes 20–60 ms (long enough to queue),
//! holding briefly when it gets the lock, and releasing by `release()` or by dropping the
//! guard. The harness samples the lock directory every 10 ms. When the workers are done (but
//! before their sessions close, which would remove their ephemeral nodes anyway) it waits for
//! the directory to drain, then prints the peak size, the locks granted and the nodes left.
//! It fails if nodes are left, no lock was granted, or the peak exceeds twice the live
//! attempts (`P × T`).

use std::error::Error;
use std::io::{BufRead, Write};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use recipe_mutex::InterProcessMutex;
use zk_client::Client;

use crate::worker_process::WorkerProcess;
use crate::zk::ZkServer;

type Result<T> = std::result::Result<T, Box<dyn Error>>;

/// How long the lock directory may take to drain once the workers are done.
const DRAIN_BUDGET: Duration = Duration::from_secs(20);

/// `cargo xtask stress mutex ...`.
pub fn run(cli: &crate::cli::Stress) -> Result<()> {
    if cli.recipe != crate::recipe::Recipe::Mutex {
        return Err(format!(
            "stress covers the mutex only so far, not {}",
            cli.recipe.name()
        )
        .into());
    }
    let (seconds, processes, tasks) = (
        cli.seconds,
        usize::from(cli.processes),
        usize::from(cli.tasks),
    );
    crate::deps::ensure(&[crate::deps::Need::Java, crate::deps::Need::ZooKeeper])?;
    let server = ZkServer::start()?;
    let path = "/stress/mutex";
    let exe = std::env::current_exe()?;
    let mut workers = Vec::new();
    for _ in 0..processes {
        let mut cmd = Command::new(&exe);
        cmd.args([
            "stress-worker",
            &server.connect_string(),
            path,
            &tasks.to_string(),
            &(seconds * 1000).to_string(),
        ]);
        workers.push(WorkerProcess::spawn("stress", cmd)?);
    }
    let budget = Instant::now() + Duration::from_secs(60);
    for w in &mut workers {
        w.expect("READY", budget)?;
    }
    eprintln!("stress mutex: {processes} processes x {tasks} tasks on {path} for {seconds} s...");
    for w in &mut workers {
        w.go()?;
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let observer = runtime.block_on(Client::builder().hosts(server.connect_string()).connect())?;
    let count = |c: &Client| {
        runtime.block_on(async {
            match c.get_children(path).await {
                Ok(kids) => Ok(kids.len()),
                Err(zk_client::Error::NoNode) => Ok(0),
                Err(e) => Err(e),
            }
        })
    };
    let end = Instant::now() + Duration::from_secs(seconds);
    let mut peak = 0;
    while Instant::now() < end {
        peak = peak.max(count(&observer)?);
        std::thread::sleep(Duration::from_millis(10));
    }
    let (mut granted, mut cancelled) = (0u64, 0u64);
    let done_by = Instant::now() + Duration::from_secs(60);
    for w in &mut workers {
        let line = w.expect("DONE ", done_by)?;
        for pair in line.split_whitespace().skip(1) {
            match pair.split_once('=') {
                Some(("granted", n)) => granted += n.parse::<u64>()?,
                Some(("cancelled", n)) => cancelled += n.parse::<u64>()?,
                _ => {}
            }
        }
    }
    // The workers' sessions are still open: whatever is left now is an orphan in the making.
    let drain_by = Instant::now() + DRAIN_BUDGET;
    let mut left = count(&observer)?;
    while left > 0 && Instant::now() < drain_by {
        std::thread::sleep(Duration::from_millis(20));
        left = count(&observer)?;
    }
    for w in &mut workers {
        w.go()?; // EXIT
    }
    for w in &mut workers {
        w.finish(Instant::now() + Duration::from_secs(30))?;
    }
    let live = processes * tasks;
    println!(
        "stress mutex: {granted} locks granted, {cancelled} acquires cancelled, lock directory \
         peak {peak} nodes ({live} live attempts at most), nodes left at the end {left}"
    );
    if left > 0 {
        return Err(format!("{left} nodes left behind").into());
    }
    if granted == 0 {
        return Err("no lock was granted".into());
    }
    if peak > 2 * live {
        return Err(format!("the directory grew to {peak} with {live} live attempts").into());
    }
    Ok(())
}

/// The hidden `stress-worker <connect> <path> <tasks> <run ms>` command: one session, `tasks`
/// tasks; prints `READY`, waits for `GO`, runs, prints `DONE granted=N cancelled=M`, waits for
/// another line (the harness has looked at the directory), then closes its session.
pub fn worker(args: &[String]) -> Result<()> {
    let [connect, path, tasks, run_ms] = args else {
        return Err("usage: stress-worker <connect> <path> <tasks> <run ms>".into());
    };
    let tasks: usize = tasks.parse()?;
    let run_for = Duration::from_millis(run_ms.parse()?);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let client = runtime.block_on(Client::builder().hosts(connect.as_str()).connect())?;
    let mutex = InterProcessMutex::new(client.clone(), path)?;
    let stdin = std::io::stdin();
    let mut line = String::new();
    println!("READY");
    std::io::stdout().flush()?;
    stdin.lock().read_line(&mut line)?;
    let seed = u64::from(std::process::id()) << 16;
    let (granted, cancelled) = runtime.block_on(cancelling_tasks(&mutex, tasks, run_for, seed));
    println!("DONE granted={granted} cancelled={cancelled}");
    std::io::stdout().flush()?;
    line.clear();
    stdin.lock().read_line(&mut line)?;
    runtime.block_on(async {
        let _ = client.close().await;
    });
    Ok(())
}

/// `tasks` tasks on `mutex` (each its own owner) for `run_for`: each loops
/// `tokio::time::timeout(d, mutex.lock())` with `d` mostly 0–3 ms (cancelled in the middle of
/// anything) and one time in eight 20–60 ms (long enough to queue); a lock it gets is released
/// by `release()` or by drop, at random. Returns the locks granted and the acquires cancelled.
/// `cargo xtask stress` and recipe-mutex's stress test both run it.
///
/// # Panics
/// If an acquire fails with an error (it should only ever be cancelled).
pub async fn cancelling_tasks(
    mutex: &InterProcessMutex,
    tasks: usize,
    run_for: Duration,
    seed: u64,
) -> (u64, u64) {
    let granted = Arc::new(AtomicU64::new(0));
    let cancelled = Arc::new(AtomicU64::new(0));
    let end = tokio::time::Instant::now() + run_for;
    let mut handles = Vec::new();
    for t in 0..tasks {
        let (m, granted, cancelled) = (mutex.clone(), granted.clone(), cancelled.clone());
        let mut rng = 0x9e37_79b9_7f4a_7c15_u64 ^ seed ^ (t as u64 + 1);
        handles.push(tokio::spawn(async move {
            while tokio::time::Instant::now() < end {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                let wait = match rng % 8 {
                    0 => Duration::from_millis(20 + rng % 40),
                    _ => Duration::from_micros(rng % 3_000),
                };
                match tokio::time::timeout(wait, m.lock()).await {
                    Ok(Ok(g)) => {
                        granted.fetch_add(1, Ordering::Relaxed);
                        if rng % 2 == 0 {
                            drop(g);
                        } else {
                            let _ = g.release().await;
                        }
                    }
                    Ok(Err(e)) => panic!("an acquire failed: {e}"),
                    Err(_) => {
                        cancelled.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }));
    }
    for h in handles {
        if let Err(e) = h.await {
            std::panic::resume_unwind(e.into_panic());
        }
    }
    (
        granted.load(Ordering::Relaxed),
        cancelled.load(Ordering::Relaxed),
    )
}
