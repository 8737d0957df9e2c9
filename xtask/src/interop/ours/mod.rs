//! Our side of an interop run: what it is told ([`WorkerConfig`]), the process around it
//! ([`process_main`], `zk-worker interop`), and one task per client running the recipe's
//! body ([`run_clients`]): `mutex.rs`, `rwlock.rs`, `multilock.rs`, `semaphore.rs`. A body
//! loops acquire → hold 0.2–3 ms → release until the run's end, and records each hold in its
//! `Contender`.

use std::fmt;
use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

use tokio::time::Instant;
use zk_client::Client;

use super::holds::{Clock, Hold, Mode, write_holds};
use super::{Counts, Result, SESSION_TIMEOUT};
use crate::recipe::Recipe;

mod multilock;
mod mutex;
mod rwlock;
mod semaphore;

/// What one side's worker is told: the same for the Java worker, `zk-worker interop` and our
/// side in the harness's process, in the same order on both command lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerConfig {
    /// The recipe.
    pub recipe: Recipe,
    /// The server's connect string.
    pub connect: String,
    /// The lock path.
    pub path: String,
    /// Clients (sessions) of this side.
    pub clients: usize,
    /// How long to loop after `GO`.
    pub run_for: Duration,
    /// Where each client writes its holds.
    pub dir: PathBuf,
    /// The semaphore's leases (1 for the other recipes).
    pub leases: u32,
    /// The mutex's clients are tasks of the first client's session sharing one
    /// `CohortMutex` (ours only: the recipe's name says `mutex-cohort`).
    pub cohort: bool,
}

impl WorkerConfig {
    /// The command line: `<recipe> <connect> <lock path> <clients> <run ms> <dir> <leases>`.
    pub fn args(&self) -> Vec<String> {
        let recipe = match self.cohort {
            true => format!("{}-cohort", self.recipe.name()),
            false => self.recipe.name().to_owned(),
        };
        vec![
            recipe,
            self.connect.clone(),
            self.path.clone(),
            self.clients.to_string(),
            self.run_for.as_millis().to_string(),
            self.dir.display().to_string(),
            self.leases.to_string(),
        ]
    }

    /// Parses what [`WorkerConfig::args`] gives.
    ///
    /// # Errors
    /// Not seven arguments, an unknown recipe, or a count that is not a number.
    pub fn parse(args: &[String]) -> Result<WorkerConfig> {
        let [recipe, connect, path, clients, run_ms, dir, leases] = args else {
            return Err(
                "usage: zk-worker interop <recipe> <connect> <lock path> <clients> \
                        <run ms> <dir> <leases>"
                    .into(),
            );
        };
        let (recipe, cohort) = match recipe.strip_suffix("-cohort") {
            Some(recipe) => (recipe, true),
            None => (recipe.as_str(), false),
        };
        Ok(WorkerConfig {
            recipe: Recipe::parse(recipe)?,
            cohort,
            connect: connect.clone(),
            path: path.clone(),
            clients: clients.parse()?,
            run_for: Duration::from_millis(run_ms.parse()?),
            dir: PathBuf::from(dir),
            leases: leases.parse()?,
        })
    }
}

/// How long after its run a worker process exits by itself, whatever it is doing.
const DEADMAN: Duration = Duration::from_secs(120);

/// Our side in a process of its own (`zk-worker interop <args>`, see
/// [`WorkerConfig::args`]): connects the clients, prints `READY`, waits for `GO` on stdin,
/// runs [`run_clients`], and returns the `COUNTS` line. It exits when stdin ends (the harness
/// went away), and by itself two minutes after its run should have ended. A multi-thread
/// runtime with two worker threads.
///
/// # Errors
/// Bad arguments, a runtime or a client that cannot start, or no `GO`.
pub fn process_main(args: &[String]) -> Result<String> {
    use std::io::BufRead;
    let cfg = WorkerConfig::parse(args)?;
    let rt = crate::worker_process::side_runtime()?;
    let clients = rt.block_on(connect_clients(&cfg.connect, cfg.clients))?;
    println!("READY");
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    if line.trim() != "GO" {
        return Err(format!("expected GO on stdin, got `{}`", line.trim()).into());
    }
    // Exit when the harness goes away, or long after the run should be over.
    std::thread::spawn(|| {
        let mut stdin = std::io::stdin().lock();
        let mut sink = String::new();
        while matches!(stdin.read_line(&mut sink), Ok(n) if n > 0) {
            sink.clear();
        }
        std::process::exit(3);
    });
    let halt_after = cfg.run_for + DEADMAN;
    std::thread::spawn(move || {
        std::thread::sleep(halt_after);
        eprintln!("zk-worker interop: still running {DEADMAN:?} after its run; exiting");
        std::process::exit(4);
    });
    let counts = rt.block_on(run_clients(clients, &cfg));
    Ok(counts.line("rust"))
}

/// Connects `n` clients to `connect`, each with a session of its own.
///
/// # Errors
/// The first client that cannot connect.
pub async fn connect_clients(connect: &str, n: usize) -> std::result::Result<Vec<Client>, String> {
    let mut clients = Vec::with_capacity(n);
    for i in 0..n {
        match Client::builder()
            .hosts(connect)
            .session_timeout(SESSION_TIMEOUT)
            .connect()
            .await
        {
            Ok(client) => clients.push(client),
            Err(e) => {
                close_all(clients).await;
                return Err(format!("client {i} could not connect to {connect}: {e}"));
            }
        }
    }
    Ok(clients)
}

/// Closes every client.
pub(crate) async fn close_all(clients: Vec<Client>) {
    for client in clients {
        let _ = client.close().await;
    }
}

/// A cohort every client's task shares (`--cohort`).
#[derive(Debug, Clone)]
enum Cohort {
    Mutex(recipe_mutex::CohortMutex),
    Rw(recipe_rwlock::CohortReadWriteLock),
}

impl Cohort {
    fn new(recipe: Recipe, client: &Client, path: &str) -> std::result::Result<Cohort, String> {
        let bound = recipe_mutex::CohortBound::default();
        let client = client.clone();
        match recipe {
            Recipe::Mutex => recipe_mutex::InterProcessMutex::new(client, path)
                .map(|m| Cohort::Mutex(m.cohort(bound)))
                .map_err(|e| e.to_string()),
            Recipe::Rwlock => recipe_rwlock::InterProcessReadWriteLock::new(client, path)
                .map(|rw| Cohort::Rw(rw.cohort(bound)))
                .map_err(|e| e.to_string()),
            other => Err(format!("{} has no cohort", other.name())),
        }
    }
}

/// Our side's run: one task per client running `cfg.recipe`'s body for `cfg.run_for`, each
/// writing its holds to `cfg.dir`; then closes the clients and returns the sum of the counts.
pub async fn run_clients(clients: Vec<Client>, cfg: &WorkerConfig) -> Counts {
    let clock = Clock::start();
    let end = Instant::now() + cfg.run_for;
    let mut tasks = Vec::new();
    // The cohort: one for every client, on the first one's session.
    let cohort = match (cfg.cohort, clients.first()) {
        (true, Some(first)) => match Cohort::new(cfg.recipe, first, &cfg.path) {
            Ok(cohort) => Some(cohort),
            Err(e) => {
                eprintln!("ERROR-COUNTED creating the cohort: {e}");
                None
            }
        },
        _ => None,
    };
    for (i, client) in clients.iter().enumerate() {
        let mut contender = Contender::new(i, client.clone(), cfg.clone(), clock, end);
        let cohort = cohort.clone();
        tasks.push(tokio::spawn(async move {
            match contender.cfg.recipe {
                _ if contender.cfg.cohort => match cohort {
                    Some(Cohort::Mutex(cohort)) => mutex::run_cohort(&mut contender, cohort).await,
                    Some(Cohort::Rw(cohort)) => rwlock::run_cohort(&mut contender, cohort).await,
                    None => contender.counts.errors += 1,
                },
                Recipe::Mutex => mutex::run(&mut contender).await,
                Recipe::Rwlock => rwlock::run(&mut contender).await,
                Recipe::Multilock => multilock::run(&mut contender).await,
                Recipe::Semaphore => semaphore::run(&mut contender).await,
                Recipe::SemaphoreMutex => semaphore::run_mutex(&mut contender).await,
            }
            contender.finish()
        }));
    }
    let mut total = Counts {
        clients: u64::try_from(clients.len()).unwrap_or(u64::MAX),
        ..Counts::default()
    };
    for task in tasks {
        match task.await {
            Ok(c) => {
                total.acquisitions += c.acquisitions;
                total.errors += c.errors;
            }
            Err(e) => {
                eprintln!("ERROR-COUNTED a client task failed: {e}");
                total.errors += 1;
            }
        }
    }
    close_all(clients).await;
    total
}

/// What an acquire came to.
enum Taken<T> {
    /// Held.
    Held(T),
    /// The run is over (the acquire's timeout was the time left).
    Over,
    /// It failed (counted); the loop goes on.
    Failed,
}

/// One client of ours: its session, its counts, its holds, its random hold times.
pub(super) struct Contender {
    name: String,
    client: Client,
    cfg: WorkerConfig,
    clock: Clock,
    end: Instant,
    rng: u64,
    counts: Counts,
    holds: Vec<Hold>,
}

impl Contender {
    fn new(index: usize, client: Client, cfg: WorkerConfig, clock: Clock, end: Instant) -> Self {
        let seed = clock.now() ^ (u64::from(std::process::id()) << 32) ^ ((index as u64) << 48);
        Contender {
            name: format!("rust-{index}"),
            client,
            cfg,
            clock,
            end,
            rng: seed | 1,
            counts: Counts::default(),
            holds: Vec::new(),
        }
    }

    /// The time left in the run; none once it is over.
    fn left(&self) -> Option<Duration> {
        Some(self.end.saturating_duration_since(Instant::now())).filter(|d| !d.is_zero())
    }

    /// A random number below `n` (xorshift).
    fn roll(&mut self, n: u64) -> u64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng % n.max(1)
    }

    /// The hold's clock.
    fn now(&self) -> u64 {
        self.clock.now()
    }

    /// Awaits an acquire (`Ok(None)`: its timeout, the run's end, passed).
    async fn take<T, E: fmt::Display>(
        &mut self,
        what: &str,
        acquire: impl Future<Output = std::result::Result<Option<T>, E>>,
    ) -> Taken<T> {
        match acquire.await {
            Ok(Some(held)) => Taken::Held(held),
            Ok(None) => Taken::Over,
            Err(e) => {
                self.error(what, &e).await;
                Taken::Failed
            }
        }
    }

    /// Counts an acquisition and holds for a random 0.2–3 ms, to widen any race: the
    /// acquisition's number and the hold's span.
    async fn hold(&mut self) -> (u64, (u64, u64)) {
        self.counts.acquisitions += 1;
        let from = self.now();
        self.pause().await;
        (self.counts.acquisitions, (from, self.now()))
    }

    /// Waits a random 0.2–3 ms.
    async fn pause(&mut self) {
        let micros = 200 + self.roll(2800);
        tokio::time::sleep(Duration::from_micros(micros)).await;
    }

    /// Awaits a release; an error is counted.
    async fn release<E: fmt::Display>(
        &mut self,
        what: &str,
        release: impl Future<Output = std::result::Result<(), E>>,
    ) {
        if let Err(e) = release.await {
            self.error(what, &e).await;
        }
    }

    /// Records a hold of acquisition `n`; `node` is a lock node's path.
    fn record(
        &mut self,
        n: u64,
        on: String,
        mode: Mode,
        (from, to): (u64, u64),
        node: &str,
        token: impl Into<Option<i64>>,
    ) {
        self.holds.push(Hold {
            who: self.name.clone(),
            n,
            on,
            mode,
            from,
            to,
            node: node.rsplit('/').next().map(str::to_owned),
            token: token.into(),
        });
    }

    /// Counts and logs an error; the loop goes on after a short pause.
    fn error(&mut self, what: &str, e: &dyn fmt::Display) -> tokio::time::Sleep {
        self.counts.errors += 1;
        eprintln!("ERROR-COUNTED {} {what}: {e}", self.name);
        tokio::time::sleep(Duration::from_millis(50))
    }

    /// Writes the holds; the counts.
    fn finish(self) -> Counts {
        let mut counts = self.counts;
        if let Err(e) = write_holds(&self.cfg.dir, &self.name, &self.holds) {
            counts.errors += 1;
            eprintln!("ERROR-COUNTED {} writing its holds: {e}", self.name);
        }
        counts
    }
}
