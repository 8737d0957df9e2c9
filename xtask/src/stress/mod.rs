//! `cargo xtask stress RECIPE [--seconds N] [--processes P] [--tasks T]`: many tasks in
//! several processes taking one recipe's lock with timeouts that cancel them at any point.
//!
//! Each worker process (`zk-worker stress`, built in release mode) runs `T` tasks on a
//! session of its own; each task loops `tokio::time::timeout(d, take)` with `d` mostly 0–3 ms
//! (cancelled in the middle of anything) and sometimes 20–100 ms (long enough to queue),
//! holding briefly when it gets the lock, and releasing by `release()` or by dropping what it
//! holds. What is taken is the recipe's ([`Target`]): the mutex; the read or the write lock;
//! a multi-lock over a random subset of `<path>/0..2`; one or two leases of a semaphore of 3;
//! the semaphore mutex. The harness samples the recipe's node directories every 10 ms
//! ([`directories`]). Each hold (up to 1 ms) is recorded as the interop runs record them
//! ([`crate::interop::holds`]) and the recipe's checker reads them all at the end: never two
//! holders (or readers beside a writer, or more leases than there are), however the acquires
//! around them were cancelled. When the workers are done (but before their sessions close,
//! which would remove their ephemeral nodes anyway) it waits for the directories to drain,
//! then prints the peak, the acquisitions, the nodes left and the check. It fails on a
//! violation, if nodes are left, nothing was acquired, or the peak exceeds twice the nodes the
//! live attempts may own.

mod target;

pub use target::{Held, Target};

use std::error::Error;
use std::io::{BufRead, Write};
use std::process::Command;
use std::time::{Duration, Instant};

use zk_client::Client;

use crate::interop::TempDir;
use crate::interop::check::{Rule, check};
use crate::interop::holds::{Clock, Hold, read_holds, write_holds};
use crate::recipe::{LEASES, MEMBERS, Recipe};
use crate::worker_process::WorkerProcess;
use crate::zk::ZkServer;

type Result<T> = std::result::Result<T, Box<dyn Error>>;

/// How long the lock directories may take to drain once the workers are done.
const DRAIN_BUDGET: Duration = Duration::from_secs(20);

/// The directories holding `recipe`'s lock nodes under `path`.
pub fn directories(recipe: Recipe, path: &str) -> Vec<String> {
    match recipe {
        Recipe::Mutex | Recipe::Rwlock => vec![path.to_owned()],
        Recipe::Semaphore | Recipe::SemaphoreMutex => {
            vec![format!("{path}/locks"), format!("{path}/leases")]
        }
        Recipe::Multilock => (0..MEMBERS).map(|k| format!("{path}/{k}")).collect(),
    }
}

/// The most nodes one live attempt of `recipe` may own at once: a node per member, two
/// leases and the inner lock's node.
pub fn nodes_per_attempt(recipe: Recipe) -> usize {
    match recipe {
        Recipe::Mutex | Recipe::Rwlock | Recipe::SemaphoreMutex => 2,
        Recipe::Semaphore => 3,
        Recipe::Multilock => MEMBERS,
    }
}

/// The nodes in `dirs` now.
///
/// # Errors
/// A failed listing (a directory not there yet counts 0).
pub async fn count_nodes(
    client: &Client,
    dirs: &[String],
) -> std::result::Result<usize, zk_client::Error> {
    let mut n = 0;
    for dir in dirs {
        match client.get_children(dir).await {
            Ok(kids) => n += kids.len(),
            Err(zk_client::Error::NoNode) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// `cargo xtask stress RECIPE ...`.
pub fn run(cli: &crate::cli::Stress) -> Result<()> {
    let recipe = cli.recipe;
    let (seconds, processes, tasks) = (
        cli.seconds,
        usize::from(cli.processes),
        usize::from(cli.tasks),
    );
    crate::deps::ensure(&[crate::deps::Need::Java, crate::deps::Need::ZooKeeper])?;
    let exe = crate::bench::worker::build_worker(&format!("stress {}", recipe.name()))?;
    let server = ZkServer::start()?;
    let path = format!("/stress/{}", recipe.name());
    let dirs = directories(recipe, &path);
    let mut holds_dir = TempDir::new(&format!("stress-{}", recipe.name()))?;
    let mut workers = Vec::new();
    for _ in 0..processes {
        let mut cmd = Command::new(&exe);
        cmd.args([
            "stress",
            recipe.name(),
            &server.connect_string(),
            &path,
            &tasks.to_string(),
            &(seconds * 1000).to_string(),
        ]);
        cmd.arg(&holds_dir.path);
        workers.push(WorkerProcess::spawn("stress", cmd)?);
    }
    let budget = Instant::now() + Duration::from_secs(60);
    for w in &mut workers {
        w.expect("READY", budget)?;
    }
    eprintln!(
        "stress {}: {processes} processes x {tasks} tasks on {path} for {seconds} s...",
        recipe.name()
    );
    for w in &mut workers {
        w.go()?;
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let observer = runtime.block_on(Client::builder().hosts(server.connect_string()).connect())?;
    let count = |c: &Client| runtime.block_on(count_nodes(c, &dirs));
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
    let bound = 2 * live * nodes_per_attempt(recipe);
    let holds = read_holds(&holds_dir.path)?;
    let verdict = check(Rule::of(recipe, LEASES), &holds)?;
    println!(
        "stress {}: {granted} acquisitions, {cancelled} acquires cancelled, lock directories' \
         peak {peak} nodes ({live} live attempts at most, bound {bound}), nodes left at the end \
         {left}; {:?} over {} holds: {} violations",
        recipe.name(),
        Rule::of(recipe, LEASES),
        verdict.holds,
        verdict.violations
    );
    for c in &verdict.conflicts {
        println!("  >> {}\n     {} ({} held)", c.later, c.earlier, c.held);
    }
    if verdict.violations > 0 {
        holds_dir.keep = true;
        return Err(format!(
            "{} holds broke the rule (holds kept in {})",
            verdict.violations,
            holds_dir.path.display()
        )
        .into());
    }
    if left > 0 {
        return Err(format!("{left} nodes left behind").into());
    }
    if granted == 0 {
        return Err("nothing was acquired".into());
    }
    if peak > bound {
        return Err(format!("the directories grew to {peak} with {live} live attempts").into());
    }
    Ok(())
}

/// `zk-worker stress <recipe> <connect> <path> <tasks> <run ms> <holds dir>`: one session,
/// `tasks` tasks on the recipe's lock; prints `READY`, waits for `GO`, runs, writes its holds
/// to `<holds dir>/holds-rust-<pid>`, prints `DONE granted=N cancelled=M`, waits for another
/// line (the harness has looked at the directories), then closes its session.
///
/// # Errors
/// Bad arguments, or a session that cannot start.
pub fn worker(args: &[String]) -> Result<()> {
    let [recipe, connect, path, tasks, run_ms, dir] = args else {
        return Err(
            "usage: zk-worker stress <recipe> <connect> <path> <tasks> <run ms> <holds dir>".into(),
        );
    };
    let recipe = Recipe::parse(recipe)?;
    let tasks: usize = tasks.parse()?;
    let run_for = Duration::from_millis(run_ms.parse()?);
    let runtime = crate::worker_process::side_runtime()?;
    let client = runtime.block_on(Client::builder().hosts(connect.as_str()).connect())?;
    let target = Target::new(recipe, client.clone(), path)?;
    let stdin = std::io::stdin();
    let mut line = String::new();
    println!("READY");
    std::io::stdout().flush()?;
    stdin.lock().read_line(&mut line)?;
    let seed = u64::from(std::process::id()) << 16;
    let who = format!("rust-{}", std::process::id());
    let outcome = runtime.block_on(cancelling_tasks(
        &target,
        tasks,
        run_for,
        seed,
        (&who, Clock::start()),
    ));
    write_holds(std::path::Path::new(dir), &who, &outcome.holds)?;
    println!(
        "DONE granted={} cancelled={}",
        outcome.granted, outcome.cancelled
    );
    std::io::stdout().flush()?;
    line.clear();
    stdin.lock().read_line(&mut line)?;
    runtime.block_on(async {
        let _ = client.close().await;
    });
    Ok(())
}

/// What [`cancelling_tasks`] did.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Acquisitions.
    pub granted: u64,
    /// Acquires cancelled by their timeout.
    pub cancelled: u64,
    /// Every hold, for the recipe's checker ([`crate::interop::check`]).
    pub holds: Vec<Hold>,
}

/// `tasks` tasks on `target` (each its own owner) for `run_for`: each loops
/// `tokio::time::timeout(d, target.take(..))` with `d` mostly 0–3 ms (cancelled in the middle
/// of anything) and one time in eight 20–100 ms (long enough to queue); what it gets it holds
/// for up to 1 ms, recording the hold (`who` is `<who>.<task>`, on `clock`), and releases by
/// `release()` or by drop, at random. `cargo xtask stress` and xtask's stress test both run
/// it, and check the holds against the recipe's rule: never two holders, cancellations or not.
///
/// # Panics
/// If an acquire fails with an error (it should only ever be cancelled).
pub async fn cancelling_tasks(
    target: &Target,
    tasks: usize,
    run_for: Duration,
    seed: u64,
    (who, clock): (&str, Clock),
) -> Outcome {
    let end = tokio::time::Instant::now() + run_for;
    let mut handles = Vec::new();
    for t in 0..tasks {
        let target = target.clone();
        let who = format!("{who}.{t}");
        let mut rng = 0x9e37_79b9_7f4a_7c15_u64 ^ seed ^ (t as u64 + 1);
        handles.push(tokio::spawn(async move {
            let mut outcome = Outcome::default();
            while tokio::time::Instant::now() < end {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                let wait = match rng % 8 {
                    0 => Duration::from_millis(20 + rng % 80),
                    _ => Duration::from_micros(rng % 3_000),
                };
                match tokio::time::timeout(wait, target.take(rng >> 8)).await {
                    Ok(Ok(taken)) => {
                        outcome.granted += 1;
                        let from = clock.now();
                        tokio::time::sleep(Duration::from_micros(rng >> 20 & 0x3ff)).await;
                        let to = clock.now();
                        for (on, mode) in taken.things {
                            outcome.holds.push(Hold {
                                who: who.clone(),
                                n: outcome.granted,
                                on,
                                mode,
                                from,
                                to,
                                node: None,
                                token: None,
                            });
                        }
                        if rng & 1 << 40 == 0 {
                            drop(taken.held);
                        } else {
                            taken.held.release().await;
                        }
                    }
                    Ok(Err(e)) => panic!("an acquire failed: {e}"),
                    Err(_) => outcome.cancelled += 1,
                }
            }
            outcome
        }));
    }
    let mut total = Outcome::default();
    for h in handles {
        match h.await {
            Ok(o) => {
                total.granted += o.granted;
                total.cancelled += o.cancelled;
                total.holds.extend(o.holds);
            }
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        }
    }
    total
}
