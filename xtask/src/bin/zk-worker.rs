//! `zk-worker`: our side of the harnesses that need a process of their own, the mode first:
//! `bench` for `cargo xtask bench` (one workload with zk-client or a recipe, so that its CPU
//! time and memory are its own; the Java sides are `java/JavaClientBench.java` and
//! `java/CuratorBench.java`, kazoo's is `python/kazoo_lock_bench.py`), `interop` for
//! `cargo xtask interop <recipe>` ([`xtask::interop::process_main`]: every recipe's body, a
//! recipe switch; Curator's side is `java/CuratorInterop.java`, with the same
//! arguments), `stress` for `cargo xtask stress <recipe>` ([`xtask::stress::worker`]), `chaos`
//! for `cargo xtask chaos` ([`xtask::chaos::ours::process_main`]), `count` for the benches'
//! counted cost (one session, a fixed number of uncontended cycles, its allocations counted
//! by the global allocator, [`count_alloc::Counting`], and its instructions by callgrind
//! around it). The lines it prints are [`xtask::line`]'s.
//!
//! ```text
//! zk-worker bench <connect> <create|get> <warmup ms> <measure ms> <path>
//! zk-worker bench <connect> <mutex|mutex-drop|mutex-cohort[:H][/C]> <warmup ms> <measure ms> <path> <sessions>
//! zk-worker bench <connect> <read|write|rwmix:P|multi:K|semmutex|sem:N> <warmup ms> <measure ms> <path> <sessions>
//! zk-worker interop <recipe> <connect> <lock path> <clients> <run ms> <dir> <leases>
//! zk-worker stress <recipe> <connect> <path> <tasks> <run ms> <holds dir>
//! zk-worker count <connect> <lock workload|floor|floor-two-tasks> <path> <warm-up cycles> <cycles>
//! zk-worker chaos <connect> <process> <clients per recipe> <run ms> <dir> <leases> <session ms> <fence|no-fence> <recipes>
//! zk-worker queue <connect> <lock path> <waiters> <budget ms>
//! zk-worker many <connect> <locks|sessions> <n> <path> <budget ms>
//! zk-worker stampede <connect> <n> <budget ms> [<first>]
//! ```
//!
//! The `bench` workloads:
//!
//! - `create`: sequential round trips: create `<path>` (persistent, empty), await, delete it,
//!   await; one op is one pair, its latency from the create's call to the delete's reply.
//! - `get`: `get_data` of `<path>` (1 KiB, created if missing) with 100 requests in flight at
//!   all times: 100 tasks on one `Client`, each issuing its next request as soon as its last
//!   one is answered.
//! - `mutex`, `mutex-drop`: `<sessions>` contenders, each with its own `Client` (its own
//!   session) and its own `recipe_mutex::InterProcessMutex` on `<path>`, each looping
//!   `lock().await` → release; one op is one cycle, its latency from before the acquire to
//!   after the release returns. `mutex` releases with `guard.release().await` (the delete is
//!   awaited, as Curator's `release()` does); `mutex-drop` drops the guard (the delete goes out
//!   in the background). At the start and the end of the measured window the worker prints
//!   `WINDOW_START` and `WINDOW_END`, so that the bench can read the server's request counters
//!   at those moments.
//! - `mutex-cohort`, `mutex-cohort:H`: `<sessions>` contenders that are tasks of **one**
//!   session, sharing one `recipe_mutex::CohortMutex` (lock cohorting: the default bound, or
//!   `H` hand-offs and the default time) on `<path>`, each looping
//!   `lock().await` → `release().await`. `mutex-cohort/C`: the contenders spread over `C`
//!   sessions, each with its own cohort (so `C` participants in the server's queue: as `C`
//!   processes would be, sharing this one's thread).
//! - `read`, `write`, `rwmix:P`, `multi:K`: the same loop with another lock per cycle: the read
//!   or the write lock of a `recipe_rwlock::InterProcessReadWriteLock` on `<path>` (`rwmix:P`:
//!   the read lock with probability P per cent), or a `recipe_multilock::InterProcessMultiLock`
//!   over `<path>/0` .. `<path>/K-1`; released with `release().await`.
//!
//! Runtime: a **current-thread** tokio runtime; the session tasks and every request task (or
//! contender) share the one thread. Requests run for `<warmup ms>` unmeasured, then for `<measure ms>`
//! measured (an op counts when it completes inside the window); then no new request starts
//! and the worker waits for those in flight. It prints one `RESULT ...` line
//! ([`xtask::bench::sample::Sample`]) or `ERROR <message>`, and exits when its stdin ends.

use std::error::Error;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use recipe_multilock::InterProcessMultiLock;
use recipe_mutex::InterProcessMutex;
use recipe_rwlock::InterProcessReadWriteLock;
use recipe_semaphore::{InterProcessSemaphoreMutex, InterProcessSemaphoreV2};
use xtask::bench::footprint::floor::Transport;
use xtask::bench::histogram::Histogram;
use xtask::bench::procfs;
use xtask::bench::sample::Sample;
use xtask::recipe::Workload;
use zk_client::{Client, CreateMode, CreateOptions};

/// Counts allocations for `count` (a relaxed atomic add per allocation in the other modes).
#[global_allocator]
static ALLOC: count_alloc::Counting = count_alloc::Counting;

type Result<T> = std::result::Result<T, Box<dyn Error + Send + Sync>>;

/// Requests in flight in the `get` workload.
const IN_FLIGHT: usize = 100;
/// The node size in the `get` workload.
const DATA_LEN: usize = 1024;
/// The session timeout of each `mutex` contender (Curator's and kazoo's workers ask for the
/// same).
const MUTEX_SESSION_TIMEOUT: Duration = Duration::from_secs(10);

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.split_first() {
        Some((mode, rest)) if mode == "bench" => {
            xtask::worker_process::exit_at_end_of_stdin();
            run(rest).map(|sample| Some(sample.to_string()))
        }
        Some((mode, rest)) if mode == "interop" => {
            xtask::interop::process_main(rest)
                .map(Some)
                .map_err(|e| e.to_string().into())
        }
        Some((mode, rest)) if mode == "stress" => xtask::stress::worker(rest)
            .map(|()| None)
            .map_err(|e| e.to_string().into()),
        // Bounded by its cycle count: no watch on stdin (callgrind runs it with none).
        Some((mode, rest)) if mode == "count" => count(rest).map(Some),
        Some((mode, rest)) if mode == "queue" => {
            xtask::bench::queue::ours::process_main(rest).map(Some)
        }
        Some((mode, rest)) if mode == "many" => {
            xtask::bench::many::ours::process_main(rest).map(|()| None)
        }
        Some((mode, rest)) if mode == "stampede" => {
            xtask::bench::stampede::ours::process_main(rest).map(|()| None)
        }
        Some((mode, rest)) if mode == "chaos" => xtask::chaos::ours::process_main(rest)
            .map(|()| None)
            .map_err(|e| e.to_string().into()),
        _ => Err(format!("{USAGE}\n   or: zk-worker interop <recipe> <connect> <lock path> <clients> <run ms> <dir> <leases>\n   or: zk-worker stress <recipe> <connect> <path> <tasks> <run ms> <holds dir>\n   or: zk-worker chaos <connect> <process> <clients per recipe> <run ms> <dir> <leases> <session ms> <fence|no-fence> <recipes>").into()),
    };
    match result {
        Ok(line) => {
            if let Some(line) = line {
                println!("{line}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("ERROR {e}");
            ExitCode::FAILURE
        }
    }
}

/// The parsed command line.
struct Args {
    connect: String,
    workload: String,
    warmup: Duration,
    measure: Duration,
    path: String,
    /// Contending sessions (lock workloads only; 1 otherwise).
    sessions: usize,
}

const USAGE: &str = "usage: zk-worker bench <connect> <create|get> <warmup ms> <measure ms> \
                     <path>\n   or: zk-worker bench <connect> <a lock workload> <warmup ms> \
                     <measure ms> <path> <sessions>";

/// Whether `workload` takes locks (and a session count).
fn is_lock(workload: &str) -> bool {
    !matches!(workload, "create" | "get")
}

fn parse(args: &[String]) -> Result<Args> {
    let (connect, workload, warmup, measure, path, sessions) = match args {
        [connect, workload, warmup, measure, path] if !is_lock(workload) => {
            (connect, workload, warmup, measure, path, 1)
        }
        [connect, workload, warmup, measure, path, sessions] if is_lock(workload) => {
            let sessions = sessions
                .parse()
                .ok()
                .filter(|n| (1..=1024).contains(n))
                .ok_or_else(|| format!("<sessions> wants 1 to 1024, got `{sessions}`"))?;
            (connect, workload, warmup, measure, path, sessions)
        }
        _ => return Err(USAGE.into()),
    };
    Ok(Args {
        connect: connect.clone(),
        workload: workload.clone(),
        warmup: Duration::from_millis(warmup.parse()?),
        measure: Duration::from_millis(measure.parse()?),
        path: path.clone(),
        sessions,
    })
}

fn run(args: &[String]) -> Result<Sample> {
    let args = parse(args)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (hist, cpu_window_ticks) = match args.workload.as_str() {
        // `mutex-cohort`: the contenders are tasks of one session sharing one cohort.
        w if w == "mutex-cohort"
            || w.starts_with("mutex-cohort:")
            || w.starts_with("mutex-cohort/") =>
        {
            rt.block_on(mutex_workload(&args, Release::Cohort))?
        }
        // `<lock workload>-drop`: the same, releasing by dropping the guard.
        w if is_lock(w) && w.ends_with("-drop") => {
            rt.block_on(mutex_workload(&args, Release::Drop))?
        }
        w if is_lock(w) => rt.block_on(mutex_workload(&args, Release::Await))?,
        _ => rt.block_on(workload(&args))?,
    };
    drop(rt);
    Ok(Sample {
        ops: hist.count(),
        measure_ms: u64::try_from(args.measure.as_millis())?,
        p50_ns: hist.percentile(50),
        p99_ns: hist.percentile(99),
        cpu_window_ticks,
        cpu_total_ticks: procfs::cpu_ticks("self")?,
        hwm_kib: procfs::peak_rss_kib("self")?,
    })
}

/// `count`: one session, `<warm-up cycles>` lock cycles uncounted, then `<cycles>` counted;
/// prints `COUNT cycles=N allocations=A bytes=B` (the counted cycles' allocations, from the
/// global allocator). Its instructions are counted from outside, by callgrind over two runs of
/// different lengths (`xtask::bench::cost`).
fn count(args: &[String]) -> Result<String> {
    let [connect, workload, path, warmup, cycles] = args else {
        return Err(
            "usage: zk-worker count <connect> <lock workload> <path> <warm-up cycles> <cycles>"
                .into(),
        );
    };
    let warmup: u64 = warmup.parse()?;
    let cycles: u64 = cycles.parse()?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    if Transport::names(workload) {
        // A floor under the mutex cycle: its requests with tokio and zk-proto alone.
        let spent = rt.block_on(async {
            let Some(mut floor) = Transport::connect(workload, connect, path).await? else {
                return Err("not a floor".into());
            };
            for _ in 0..warmup {
                floor.cycle().await?;
            }
            let before = count_alloc::counts();
            for _ in 0..cycles {
                floor.cycle().await?;
            }
            Ok::<_, Box<dyn Error + Send + Sync>>(count_alloc::counts().since(before))
        })?;
        return Ok(format!(
            "COUNT cycles={cycles} allocations={} bytes={}",
            spent.allocations, spent.bytes
        ));
    }
    // `<workload>-drop`: each guard dropped (the delete goes out in the background).
    let (workload, release) = match workload.strip_suffix("-drop") {
        Some(w) => (w, Release::Drop),
        None => (workload.as_str(), Release::Await),
    };
    let workload: Workload = workload.parse()?;
    let spent = rt.block_on(async {
        let client = Client::builder()
            .hosts(connect.as_str())
            .session_timeout(MUTEX_SESSION_TIMEOUT)
            .connect()
            .await?;
        let mut taker = Taker::new(workload, &client, path, 0)?;
        for _ in 0..warmup {
            taker.cycle(release).await?;
        }
        let before = count_alloc::counts();
        for _ in 0..cycles {
            taker.cycle(release).await?;
        }
        let spent = count_alloc::counts().since(before);
        client.close().await?;
        Ok::<_, Box<dyn Error + Send + Sync>>(spent)
    })?;
    Ok(format!(
        "COUNT cycles={cycles} allocations={} bytes={}",
        spent.allocations, spent.bytes
    ))
}

/// The measured window: an op counts when it completes in `start..end`.
#[derive(Clone, Copy)]
struct Window {
    start: Instant,
    end: Instant,
}

/// A builder for `connect`: over TLS when the bench gives a CA file in
/// `ZK_BENCH_TLS_CA` (`bench client --tls`).
fn builder(connect: &str) -> Result<zk_client::ClientBuilder> {
    let builder = Client::builder().hosts(connect);
    match std::env::var_os("ZK_BENCH_TLS_CA") {
        Some(ca) => Ok(builder.tls(zk_client::tls::TlsConfig::new().ca_pem_file(ca)?)),
        None => Ok(builder),
    }
}

/// Runs the workload; returns the window's latencies and the CPU ticks spent in it.
async fn workload(args: &Args) -> Result<(Histogram, u64)> {
    let client = builder(&args.connect)?.connect().await?;
    let begin = Instant::now();
    let window = Window {
        start: begin + args.warmup,
        end: begin + args.warmup + args.measure,
    };
    let hist = Arc::new(Mutex::new(Histogram::new()));
    let mut tasks = Vec::new();
    match args.workload.as_str() {
        "create" => {
            if client.exists(&args.path).await?.is_some() {
                client.delete(&args.path, None).await?;
            }
            tasks.push(tokio::spawn(create_delete(
                client.clone(),
                args.path.clone(),
                window,
                hist.clone(),
            )));
        }
        "get" => {
            if client.exists(&args.path).await?.is_none() {
                let options = CreateOptions::new(CreateMode::Persistent);
                client.create(&args.path, &[0; DATA_LEN], &options).await?;
            }
            for _ in 0..IN_FLIGHT {
                tasks.push(tokio::spawn(get_data(
                    client.clone(),
                    args.path.clone(),
                    window,
                    hist.clone(),
                )));
            }
        }
        other => return Err(format!("unknown workload `{other}`: use create or get").into()),
    }

    tokio::time::sleep_until(window.start.into()).await;
    let cpu_start = procfs::cpu_ticks("self")?;
    tokio::time::sleep_until(window.end.into()).await;
    let cpu_end = procfs::cpu_ticks("self")?;
    for task in tasks {
        task.await??;
    }
    client.close().await?;
    let hist = hist.lock().map_err(|_| "a request task panicked")?.clone();
    Ok((hist, cpu_end.saturating_sub(cpu_start)))
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Counts one op that started at `t0` and completed at `now`, if `now` is in the window.
fn record(hist: &Mutex<Histogram>, window: Window, t0: Instant, now: Instant) {
    if now >= window.start && now < window.end {
        if let Ok(mut hist) = hist.lock() {
            hist.record(nanos(now - t0));
        }
    }
}

/// Sequential create + delete pairs until the window ends.
async fn create_delete(
    client: Client,
    path: String,
    window: Window,
    hist: Arc<Mutex<Histogram>>,
) -> Result<()> {
    let options = CreateOptions::new(CreateMode::Persistent);
    let mut t0 = Instant::now();
    loop {
        client.create(&path, &[], &options).await?;
        client.delete(&path, None).await?;
        let now = Instant::now();
        record(&hist, window, t0, now);
        if now >= window.end {
            return Ok(());
        }
        t0 = now;
    }
}

/// One of the `get` workload's request loops: the next request as soon as the last returns.
async fn get_data(
    client: Client,
    path: String,
    window: Window,
    hist: Arc<Mutex<Histogram>>,
) -> Result<()> {
    let mut t0 = Instant::now();
    loop {
        let (data, _) = client.get_data(&path).await?;
        let now = Instant::now();
        if data.len() != DATA_LEN {
            return Err(format!("{path} has {} bytes, not {DATA_LEN}", data.len()).into());
        }
        record(&hist, window, t0, now);
        if now >= window.end {
            return Ok(());
        }
        t0 = now;
    }
}

/// How a `mutex` contender releases the lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Release {
    /// `guard.release().await`: the cycle ends when the delete is answered.
    Await,
    /// `drop(guard)`: the delete goes out in the background.
    Drop,
    /// `mutex-cohort`: one session, one `CohortMutex` shared by the contenders (tasks), each
    /// releasing with `guard.release().await` (`mutex-cohort/C`: `C` such sessions).
    Cohort,
}

/// The `mutex` workloads: `args.sessions` contenders, a session each, on one lock path; returns
/// the window's cycle latencies and the CPU ticks spent in it.
async fn mutex_workload(args: &Args, release: Release) -> Result<(Histogram, u64)> {
    let (bound, cohorts) = cohort_of(&args.workload)?;
    let sessions = if release == Release::Cohort {
        cohorts
    } else {
        args.sessions
    };
    let mut clients = Vec::with_capacity(sessions);
    for _ in 0..sessions {
        let client = Client::builder()
            .hosts(args.connect.as_str())
            .session_timeout(MUTEX_SESSION_TIMEOUT)
            .connect()
            .await?;
        clients.push(client);
    }
    let begin = Instant::now();
    let window = Window {
        start: begin + args.warmup,
        end: begin + args.warmup + args.measure,
    };
    let hist = Arc::new(Mutex::new(Histogram::new()));
    let mut tasks = Vec::with_capacity(args.sessions);
    if release == Release::Cohort {
        let cohorts = clients
            .iter()
            .map(|c| Ok(InterProcessMutex::new(c.clone(), &args.path)?.cohort(bound)))
            .collect::<Result<Vec<_>>>()?;
        // Contender i on cohort i mod C.
        for cohort in cohorts.iter().cycle().take(args.sessions) {
            tasks.push(tokio::spawn(lock_cycles(
                Taker::Cohort(cohort.clone()),
                Release::Await,
                window,
                hist.clone(),
            )));
        }
    }
    for (i, client) in clients
        .iter()
        .enumerate()
        .filter(|_| release != Release::Cohort)
    {
        let workload = args
            .workload
            .strip_suffix("-drop")
            .unwrap_or(&args.workload);
        let taker = Taker::new(workload.parse::<Workload>()?, client, &args.path, i)?;
        tasks.push(tokio::spawn(lock_cycles(
            taker,
            release,
            window,
            hist.clone(),
        )));
    }

    tokio::time::sleep_until(window.start.into()).await;
    let cpu_start = procfs::cpu_ticks("self")?;
    println!("WINDOW_START");
    tokio::time::sleep_until(window.end.into()).await;
    let cpu_end = procfs::cpu_ticks("self")?;
    println!("WINDOW_END");
    for task in tasks {
        task.await??;
    }
    for client in &clients {
        client.close().await?;
    }
    let hist = hist.lock().map_err(|_| "a contender panicked")?.clone();
    Ok((hist, cpu_end.saturating_sub(cpu_start)))
}

/// The cohorts' bound and how many cohorts (sessions) there are: `mutex-cohort` the default
/// bound and one, `:H` with `H` hand-offs (the time bound the default's), `/C` with `C`.
fn cohort_of(workload: &str) -> Result<(recipe_mutex::CohortBound, usize)> {
    let mut bound = recipe_mutex::CohortBound::default();
    let Some(rest) = workload.strip_prefix("mutex-cohort") else {
        return Ok((bound, 1));
    };
    let (rest, cohorts) = match rest.split_once('/') {
        Some((rest, c)) => (rest, c.parse::<usize>()?.max(1)),
        None => (rest, 1),
    };
    if let Some(handoffs) = rest.strip_prefix(':') {
        bound.handoffs = handoffs.parse()?;
    }
    Ok((bound, cohorts))
}

/// One contender: lock → release cycles until the window ends (the cycle in progress then is
/// finished, so that the others get their turn and end too).
async fn lock_cycles(
    mut taker: Taker,
    release: Release,
    window: Window,
    hist: Arc<Mutex<Histogram>>,
) -> Result<()> {
    let mut t0 = Instant::now();
    loop {
        taker.cycle(release).await?;
        let now = Instant::now();
        record(&hist, window, t0, now);
        if now >= window.end {
            return Ok(());
        }
        t0 = now;
    }
}

/// The lock a contender takes each cycle.
enum Taker {
    Mutex(InterProcessMutex),
    /// Shared by the contenders of one session.
    Cohort(recipe_mutex::CohortMutex),
    /// A read/write lock, the read side with probability `read_pct` per cent.
    ReadWrite {
        lock: InterProcessReadWriteLock,
        read_pct: u64,
        rng: u64,
    },
    Multi(InterProcessMultiLock),
    SemaphoreMutex(InterProcessSemaphoreMutex),
    Semaphore(InterProcessSemaphoreV2),
}

impl Taker {
    fn new(workload: Workload, client: &Client, path: &str, index: usize) -> Result<Taker> {
        let rw = |read_pct: u64| -> Result<Taker> {
            Ok(Taker::ReadWrite {
                lock: InterProcessReadWriteLock::new(client.clone(), path)?,
                read_pct,
                rng: 0x9e37_79b9_7f4a_7c15 ^ (index as u64 + 1),
            })
        };
        Ok(match workload {
            Workload::Mutex => Taker::Mutex(InterProcessMutex::new(client.clone(), path)?),
            Workload::SemaphoreMutex => {
                Taker::SemaphoreMutex(InterProcessSemaphoreMutex::new(client.clone(), path)?)
            }
            Workload::Read => rw(100)?,
            Workload::Write => rw(0)?,
            Workload::ReadWriteMix(pct) => rw(u64::from(pct))?,
            Workload::Semaphore(n) => {
                Taker::Semaphore(InterProcessSemaphoreV2::new(client.clone(), path, n)?)
            }
            Workload::MultiLock(k) => {
                let members: Vec<String> = (0..k).map(|m| format!("{path}/{m}")).collect();
                let refs: Vec<&str> = members.iter().map(String::as_str).collect();
                Taker::Multi(InterProcessMultiLock::new(client.clone(), &refs)?)
            }
        })
    }

    async fn cycle(&mut self, release: Release) -> Result<()> {
        match self {
            Taker::Mutex(m) => {
                let guard = m.lock().await?;
                match release {
                    Release::Await | Release::Cohort => guard.release().await?,
                    Release::Drop => drop(guard),
                }
            }
            Taker::Cohort(m) => m.lock().await?.release().await?,
            Taker::ReadWrite {
                lock,
                read_pct,
                rng,
            } => {
                *rng ^= *rng << 13;
                *rng ^= *rng >> 7;
                *rng ^= *rng << 17;
                let guard = if *rng % 100 < *read_pct {
                    lock.read_lock().lock().await?.into_hold()
                } else {
                    lock.write_lock().lock().await?.into_hold()
                };
                guard.release().await?;
            }
            Taker::Multi(m) => m.lock().await?.release().await?,
            Taker::SemaphoreMutex(m) => {
                let guard = m.lock().await?;
                match release {
                    Release::Await | Release::Cohort => guard.release().await?,
                    Release::Drop => drop(guard),
                }
            }
            Taker::Semaphore(s) => {
                let lease = s.acquire().await?;
                match release {
                    Release::Await | Release::Cohort => lease.release().await?,
                    Release::Drop => drop(lease),
                }
            }
        }
        Ok(())
    }
}
