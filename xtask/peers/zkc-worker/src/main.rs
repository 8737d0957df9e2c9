//! `zkc-worker <connect> <lock path> <sessions> <warmup ms> <measure ms>`: zookeeper-client
//! 0.11's `Client::lock` as a side of `cargo xtask bench mutex`, speaking the other workers'
//! protocol (`xtask/python/kazoo_lock_bench.py` says it in full).
//!
//! `zkc-worker count <connect> mutex <path> <warm-up cycles> <cycles>`: as `zk-worker count`
//! (`cargo xtask bench footprint`): one session, its uncontended lock → drop cycles back to
//! back, the counted ones' allocations from a counting global allocator (xtask's
//! `count-alloc`), printed as `COUNT cycles=N allocations=A bytes=B`; instructions are counted
//! from outside, by callgrind.
//!
//! `<sessions>` contenders, each with its own `Client` (its own session, 10 s session timeout)
//! on one current-thread tokio runtime (as ours), each looping `lock()` on a Curator-named
//! prefix (`{path}/_c_{uuid}-lock-`, as Curator's `InterProcessMutex`) → drop: its lock is
//! released by dropping the `LockClient` (the delete goes out in the background; it has no
//! awaited release), so it is compared with ours dropped. A cycle's latency runs from before
//! `lock()` to after the drop; cycles that complete in the window are counted. Prints
//! `WINDOW_START`, `WINDOW_END`, then `RESULT ops=… measure_ms=… p50_ns=… p99_ns=…
//! cpu_window_ticks=… cpu_total_ticks=… hwm_kib=…`, or `ERROR <message>`; exits when its stdin
//! ends.

use std::cell::RefCell;
use std::io::Read;
use std::rc::Rc;
use std::time::{Duration, Instant};

use zookeeper_client as zk;

/// xtask's histogram, the same file (the same buckets, so the percentiles compare).
#[allow(dead_code)]
#[path = "../../../src/bench/histogram.rs"]
mod histogram;
/// xtask's `/proc` readers, the same file.
#[allow(dead_code)]
#[path = "../../../src/bench/procfs.rs"]
mod procfs;

use histogram::Histogram;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

#[global_allocator]
static ALLOCATOR: count_alloc::Counting = count_alloc::Counting;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().is_some_and(|a| a == "count") {
        // Bounded by its cycle count: no watch on stdin (callgrind runs it with none).
        match count(args.get(1..).unwrap_or_default()) {
            Ok(line) => println!("{line}"),
            Err(e) => {
                println!("ERROR {e}");
                std::process::exit(1);
            }
        }
        return;
    }
    std::thread::spawn(|| {
        let mut buf = [0u8; 64];
        while matches!(std::io::stdin().read(&mut buf), Ok(n) if n > 0) {}
        std::process::exit(3);
    });
    if let Err(e) = run(args) {
        println!("ERROR {e}");
        std::process::exit(1);
    }
}

fn run(args: Vec<String>) -> Result<()> {
    let [connect, path, sessions, warmup, measure] = args.as_slice() else {
        return Err(
            "usage: zkc-worker <connect> <lock path> <sessions> <warmup ms> <measure ms>".into(),
        );
    };
    let sessions: usize = sessions.parse()?;
    let warmup = Duration::from_millis(warmup.parse()?);
    let measure_ms: u64 = measure.parse()?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let mut clients = Vec::with_capacity(sessions);
        for _ in 0..sessions {
            let client = zk::Client::connector()
                .with_session_timeout(Duration::from_secs(10))
                .connect(connect)
                .await?;
            clients.push(client);
        }
        let begin = Instant::now();
        let (start, end) = (begin + warmup, begin + warmup + Duration::from_millis(measure_ms));
        let hist = Rc::new(RefCell::new((Histogram::new(), 0u64)));
        let local = tokio::task::LocalSet::new();
        let mut tasks = Vec::new();
        for client in clients.iter().cloned() {
            let (hist, path) = (hist.clone(), path.clone());
            tasks.push(local.spawn_local(async move { cycles(client, &path, start, end, &hist).await }));
        }
        local
            .run_until(async {
                tokio::time::sleep_until(start.into()).await;
                let cpu0 = procfs::cpu_ticks("self")?;
                println!("WINDOW_START");
                tokio::time::sleep_until(end.into()).await;
                let cpu1 = procfs::cpu_ticks("self")?;
                println!("WINDOW_END");
                for task in tasks {
                    task.await??;
                }
                let (hist, ops) = &*hist.borrow();
                println!(
                    "RESULT ops={} measure_ms={measure_ms} p50_ns={} p99_ns={} cpu_window_ticks={} cpu_total_ticks={} hwm_kib={}",
                    ops,
                    hist.percentile(50),
                    hist.percentile(99),
                    cpu1.saturating_sub(cpu0),
                    procfs::cpu_ticks("self")?,
                    procfs::peak_rss_kib("self")?,
                );
                Ok::<(), Box<dyn std::error::Error>>(())
            })
            .await
    })
}

fn count(args: &[String]) -> Result<String> {
    let [connect, workload, path, warmup, cycles] = args else {
        return Err(
            "usage: zkc-worker count <connect> mutex <path> <warm-up cycles> <cycles>".into(),
        );
    };
    if workload != "mutex" {
        return Err(format!("zookeeper-client has no lock for workload {workload}").into());
    }
    let (warmup, cycles): (u64, u64) = (warmup.parse()?, cycles.parse()?);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let spent = rt.block_on(async {
        let client = zk::Client::connector()
            .with_session_timeout(Duration::from_secs(10))
            .connect(connect)
            .await?;
        let options = zk::LockOptions::new(zk::Acls::anyone_all())
            .with_ancestor_options(zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all()))?;
        for _ in 0..warmup {
            one_cycle(&client, path, &options).await?;
        }
        let before = count_alloc::counts();
        for _ in 0..cycles {
            one_cycle(&client, path, &options).await?;
        }
        Ok::<_, Box<dyn std::error::Error>>(count_alloc::counts().since(before))
    })?;
    Ok(format!(
        "COUNT cycles={cycles} allocations={} bytes={}",
        spent.allocations, spent.bytes
    ))
}

/// One lock → drop cycle.
async fn one_cycle(client: &zk::Client, path: &str, options: &zk::LockOptions<'_>) -> Result<()> {
    let prefix = zk::LockPrefix::new_curator(path, "lock-")?;
    drop(client.lock(prefix, b"", options.clone()).await?);
    Ok(())
}

/// One contender's lock → drop cycles until the window ends.
async fn cycles(
    client: zk::Client,
    path: &str,
    start: Instant,
    end: Instant,
    hist: &RefCell<(Histogram, u64)>,
) -> std::result::Result<(), String> {
    let options = zk::LockOptions::new(zk::Acls::anyone_all())
        .with_ancestor_options(zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all()))
        .map_err(|e| e.to_string())?;
    let mut t0 = Instant::now();
    loop {
        let prefix = zk::LockPrefix::new_curator(path, "lock-").map_err(|e| e.to_string())?;
        let lock = client
            .lock(prefix, b"", options.clone())
            .await
            .map_err(|e| format!("lock: {e}"))?;
        drop(lock);
        let now = Instant::now();
        if now >= start && now < end {
            let mut hist = hist.borrow_mut();
            hist.0
                .record(u64::try_from((now - t0).as_nanos()).unwrap_or(u64::MAX));
            hist.1 += 1;
        }
        if now >= end {
            return Ok(());
        }
        t0 = now;
    }
}
