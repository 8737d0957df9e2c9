//! Our side of a chaos run: `zk-worker chaos <args>` ([`process_main`]), one process of
//! several. For each recipe, `clients` clients, each with a session of its own, loop until
//! the run's end: acquire in one of four [`Style`]s, and while holding, update the recipe's
//! protected register(s) through the process's store session (one with a long timeout, as a
//! store outlives a holder's pause): read, wait a little, then write `read + 1` in one
//! `multi` guarded by the guard's fencing `check_ops` (or, with the fence off — the negative
//! control — without them). Every acquire, hold, write and lost signal is recorded ([`history`](super::history))
//! and written to `<dir>/rust-<process>.history` at the end. Every hold also leaves its mark
//! on the server for the log judge ([`marks`]): created by the lock's session in one `multi`
//! with the hold's checks before the work, deleted after it and before the release; the
//! register values name the node and token they were written under. A hold whose mark was
//! not surely made writes nothing, and leaves an unmarked record instead (through the store
//! session), later set to say how soon its holder was told it lost the hold: the judge
//! accounts for every hold of ours by one or the other.
//!
//! Lines: `READY` once every client is connected; `GO` starts the run; after it, `DONE
//! events=N` once every client has stopped (an acquire still running long after the run's
//! end is recorded as unfinished); then the worker keeps its sessions open until `CLOSE` (so
//! that the harness can look for nodes left while their sessions live), closes them and
//! exits.

use std::collections::HashMap;
use std::io::BufRead;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use recipe_multilock::InterProcessMultiLock;
use recipe_mutex::{CohortBound, CohortMutex, Guard, InterProcessMutex, Lock};
use recipe_rwlock::{CohortReadWriteLock, InterProcessReadWriteLock};
use recipe_semaphore::{InterProcessSemaphoreMutex, InterProcessSemaphoreV2};
use tokio::time::Instant;
use zk_client::{Client, CreateMode, CreateOptions, Op, OpResult};

use super::history::{Acquire, AcquireEnd, Event, Lost, Session, Style, Who, Write, WriteResult};
use super::judge::marks;
use super::layout;
use crate::interop::holds::{Clock, Hold, Mode};
use crate::recipe::Recipe;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// What one process of ours is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OursConfig {
    /// The connect string.
    pub connect: String,
    /// This process's number among ours.
    pub process: u32,
    /// Clients per recipe.
    pub clients: u32,
    /// How long to loop after `GO`.
    pub run_for: Duration,
    /// Where to write the history.
    pub dir: PathBuf,
    /// The semaphore's leases.
    pub leases: u32,
    /// The clients' session timeout.
    pub session_timeout: Duration,
    /// Whether writes carry the fencing check (off: a negative control).
    pub fence: bool,
    /// The defect planted in our recipes, if any (a negative control; needs a worker built
    /// with xtask's feature `plant`; the fence stays on).
    pub plant: Option<ChaosPlant>,
    /// The mutex's and the read/write lock's clients are tasks of one session sharing one
    /// `CohortMutex` and one `CohortReadWriteLock` (said on the command line as `+cohort`
    /// after the fence).
    pub cohort: bool,
    /// How long each hold lasts (said as `+hold=MS` after the fence); `None`: a random
    /// 0.2-3 ms. Long holds make a negative control's untold holds outlive the lost signal's
    /// bound.
    pub hold: Option<Duration>,
    /// The recipes to run.
    pub recipes: Vec<Recipe>,
}

impl OursConfig {
    /// The command line after `zk-worker chaos`.
    pub fn args(&self) -> Vec<String> {
        vec![
            self.connect.clone(),
            self.process.to_string(),
            self.clients.to_string(),
            self.run_for.as_millis().to_string(),
            self.dir.display().to_string(),
            self.leases.to_string(),
            self.session_timeout.as_millis().to_string(),
            format!(
                "{}{}{}",
                match (self.fence, self.plant) {
                    (_, Some(plant)) => plant.name(),
                    (true, None) => "fence",
                    (false, None) => "no-fence",
                },
                if self.cohort { "+cohort" } else { "" },
                self.hold
                    .map(|h| format!("+hold={}", h.as_millis()))
                    .unwrap_or_default()
            ),
            self.recipes
                .iter()
                .map(|r| r.name())
                .collect::<Vec<_>>()
                .join(","),
        ]
    }

    /// Parses what [`OursConfig::args`] gives.
    ///
    /// # Errors
    /// Not nine arguments, or one that does not parse.
    pub fn parse(args: &[String]) -> Result<OursConfig> {
        let [
            connect,
            process,
            clients,
            run_ms,
            dir,
            leases,
            session_ms,
            fence,
            recipes,
        ] = args
        else {
            return Err(
                "usage: zk-worker chaos <connect> <process> <clients per recipe> \
                        <run ms> <dir> <leases> <session ms> <fence|no-fence|PLANT> <recipes>"
                    .into(),
            );
        };
        let (fence, hold) = match fence.split_once("+hold=") {
            Some((fence, ms)) => (fence, Some(Duration::from_millis(ms.parse()?))),
            None => (fence.as_str(), None),
        };
        let (fence, cohort) = match fence.strip_suffix("+cohort") {
            Some(fence) => (fence.to_owned(), true),
            None => (fence.to_owned(), false),
        };
        Ok(OursConfig {
            cohort,
            hold,
            connect: connect.clone(),
            process: process.parse()?,
            clients: clients.parse()?,
            run_for: Duration::from_millis(run_ms.parse()?),
            dir: PathBuf::from(dir),
            leases: leases.parse()?,
            session_timeout: Duration::from_millis(session_ms.parse()?),
            fence: fence != "no-fence",
            plant: match fence.as_str() {
                "fence" | "no-fence" => None,
                other => Some(ChaosPlant::parse(other).ok_or_else(|| {
                    format!("`{other}`: expected fence, no-fence or a plant's name")
                })?),
            },
            recipes: recipes
                .split(',')
                .map(Recipe::parse)
                .collect::<std::result::Result<_, _>>()?,
        })
    }
}

/// How long after its run a worker exits by itself, whatever it is doing.
const DEADMAN: Duration = Duration::from_secs(300);

/// `zk-worker chaos <args>`: see the module docs.
///
/// # Errors
/// Bad arguments, a client that cannot connect, no `GO`, or a history that cannot be written.
pub fn process_main(args: &[String]) -> Result<()> {
    let cfg = OursConfig::parse(args)?;
    if let Some(plant) = cfg.plant {
        plant.switch_on()?;
    }
    let rt = crate::worker_process::side_runtime()?;
    let mut clients = Vec::new();
    // With `cohort`, the mutex's and the read/write lock's clients share one session.
    let mut cohort_session: Option<Client> = None;
    for recipe in &cfg.recipes {
        for i in 0..cfg.clients {
            let shared = (cfg.cohort && recipe.has_cohort())
                .then(|| cohort_session.clone())
                .flatten();
            let client = match shared {
                Some(client) => client,
                None => rt.block_on(
                    Client::builder()
                        .hosts(&cfg.connect)
                        .session_timeout(cfg.session_timeout)
                        .connect(),
                )?,
            };
            if cfg.cohort && recipe.has_cohort() {
                cohort_session = Some(client.clone());
            }
            let who = Who {
                lib: "rust".into(),
                process: cfg.process,
                recipe: *recipe,
                index: i,
            };
            clients.push((who, client));
        }
    }
    let store = rt.block_on(
        Client::builder()
            .hosts(&cfg.connect)
            .session_timeout(layout::STORE_SESSION_TIMEOUT)
            .connect(),
    )?;
    println!("READY");
    let mut stdin = std::io::stdin().lock();
    let mut line = String::new();
    stdin.read_line(&mut line)?;
    if line.trim() != "GO" {
        return Err(format!("expected GO on stdin, got `{}`", line.trim()).into());
    }
    let halt_after = cfg.run_for + DEADMAN;
    std::thread::spawn(move || {
        std::thread::sleep(halt_after);
        eprintln!("zk-worker chaos: still running {DEADMAN:?} after its run; exiting");
        std::process::exit(4);
    });
    // The harness's lines during the run (`STOP-AT-HOLD`, `STOP-CANCEL`, `RESUMED`: see
    // `stop_if_aimed`); `CLOSE` (or the end of stdin) comes after `DONE`.
    drop(stdin);
    let (closed_tx, closed) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin().lock();
        let mut line = String::new();
        loop {
            line.clear();
            match stdin.read_line(&mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) if line.trim() == "CLOSE" => break,
                Ok(_) => harness_line(line.trim()),
            }
        }
        let _ = closed_tx.send(());
    });
    let (events, last) = rt.block_on(run(&cfg, &clients, &store));
    let path = cfg.dir.join(format!("rust-{}.history", cfg.process));
    let text: String = events.iter().map(|e| format!("{e}\n")).collect();
    std::fs::write(&path, text)?;
    println!("DONE events={}", events.len());
    // CLOSE, or the harness gone (stdin ends): close the sessions either way.
    let _ = closed.recv();
    rt.block_on(async {
        let all = clients
            .into_iter()
            .map(|(_, c)| c)
            .chain(last)
            .chain([store]);
        for client in all {
            let _ = tokio::time::timeout(Duration::from_secs(5), client.close()).await;
        }
    });
    Ok(())
}

/// Set by the harness's `STOP-AT-HOLD` (cleared by `STOP-CANCEL`): the next hold to begin
/// waits there for the harness to stop and resume this whole process.
static STOP_AT_HOLD: AtomicBool = AtomicBool::new(false);

/// How many `RESUMED` lines the harness has sent (each after a pause of this process).
static RESUMES: (Mutex<u64>, std::sync::Condvar) = (Mutex::new(0), std::sync::Condvar::new());

/// How long an aimed hold waits for `RESUMED` at most (the harness sends it after every pause).
const RESUME_WAIT: Duration = Duration::from_secs(30);

/// If a pause is aimed (`STOP-AT-HOLD`), says `STOPPING <who>` and blocks until the harness
/// has stopped this process (SIGSTOP), resumed it (SIGCONT) and said `RESUMED`. Called when a
/// hold has made its mark and before its writes: the holder resumes believing it holds, its
/// session surely expired. The thread blocks (the runtime's too: the whole process is about
/// to stop anyway).
fn stop_if_aimed(who: &str) {
    let (count, changed) = &RESUMES;
    let before = *count
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !STOP_AT_HOLD.swap(false, SeqCst) {
        return;
    }
    println!("STOPPING {who}");
    let _ = std::io::Write::flush(&mut std::io::stdout());
    let guard = count
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let _ = changed.wait_timeout_while(guard, RESUME_WAIT, |n| *n == before);
}

/// The harness's lines during the run, until `CLOSE` or the end of stdin.
fn harness_line(line: &str) {
    match line {
        "STOP-AT-HOLD" => STOP_AT_HOLD.store(true, SeqCst),
        "STOP-CANCEL" => STOP_AT_HOLD.store(false, SeqCst),
        "RESUMED" => {
            let (count, changed) = &RESUMES;
            *count
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) += 1;
            changed.notify_all();
        }
        _ => {}
    }
}

/// A defect planted in our workers, for the chaos suite's negative controls: most make a
/// second holder that the servers' log shows; `no-node-watch` leaves holders of ours untold
/// when another session deletes their node (with the nemesis `delete-held`);
/// `deletes-others` makes ours that other session (the log judge's foreign deletes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ChaosPlant {
    /// A waiter holds on its predecessor's deletion without listing again.
    Shortcut,
    /// A waiter holds when its connection drops, whatever is ahead of it (the history the
    /// client-side checker's old rules excused).
    GrantOnDisconnect,
    /// A cohort grants its node to two local waiters at once (with `--cohort`).
    CohortDoubleGrant,
    /// A hold keeps no watch on its own node: a holder whose node another session deleted is
    /// never told (with the nemesis `delete-held`: the lost signal's table fails).
    NoNodeWatch,
    /// A semaphore's waiter lets the inner lock go while it waits, and takes its lease as
    /// soon as `leases/` changes, without counting again: the lease wait's hand-off shortcut.
    LeaseWaitShortcut,
    /// Before each acquire of the mutex, our client deletes the node that sorts first in the
    /// lock's directory (another client's, the holder's when one holds), by name: a cleanup
    /// deleting what is not its own (the log judge's foreign deletes).
    DeletesOthers,
}

impl ChaosPlant {
    /// Every plant.
    pub const ALL: [ChaosPlant; 6] = [
        ChaosPlant::Shortcut,
        ChaosPlant::GrantOnDisconnect,
        ChaosPlant::CohortDoubleGrant,
        ChaosPlant::NoNodeWatch,
        ChaosPlant::LeaseWaitShortcut,
        ChaosPlant::DeletesOthers,
    ];

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            ChaosPlant::Shortcut => "shortcut",
            ChaosPlant::GrantOnDisconnect => "grant-on-disconnect",
            ChaosPlant::CohortDoubleGrant => "cohort-double-grant",
            ChaosPlant::NoNodeWatch => "no-node-watch",
            ChaosPlant::LeaseWaitShortcut => "lease-wait-shortcut",
            ChaosPlant::DeletesOthers => "deletes-others",
        }
    }

    /// The plant of that name.
    pub fn parse(name: &str) -> Option<ChaosPlant> {
        ChaosPlant::ALL.into_iter().find(|p| p.name() == name)
    }

    /// Switches it on in this process.
    #[cfg(feature = "plant")]
    fn switch_on(self) -> Result<()> {
        use recipe_mutex::plant::{Plant, set};
        set(match self {
            ChaosPlant::Shortcut => Some(Plant::HandOffShortcut),
            ChaosPlant::GrantOnDisconnect => Some(Plant::GrantOnDisconnect),
            ChaosPlant::CohortDoubleGrant => Some(Plant::CohortDoubleGrant),
            ChaosPlant::NoNodeWatch => Some(Plant::NoNodeWatch),
            ChaosPlant::LeaseWaitShortcut => Some(Plant::LeaseWaitShortcut),
            // The worker's own, not the recipes'.
            ChaosPlant::DeletesOthers => None,
        });
        DELETES_OTHERS.store(self == ChaosPlant::DeletesOthers, SeqCst);
        Ok(())
    }

    /// Without the feature there is nothing to switch on.
    #[cfg(not(feature = "plant"))]
    fn switch_on(self) -> Result<()> {
        Err(format!(
            "this zk-worker was built without the feature `plant`: `{}` cannot be planted",
            self.name()
        )
        .into())
    }
}

/// Whether the plant `deletes-others` is on in this process.
#[cfg(feature = "plant")]
static DELETES_OTHERS: AtomicBool = AtomicBool::new(false);

/// Shared by a process's clients: the clock, the events, the acquires under way.
struct Shared {
    clock: Clock,
    events: Mutex<Vec<Event>>,
    acquiring: Mutex<HashMap<String, Acquire>>,
    /// With `cohort`: the cohort clients' one session (replaced for all of them when it
    /// ends) and its cohorts.
    cohort: tokio::sync::Mutex<Option<(Client, Cohorts)>>,
}

/// A session's cohorts: the mutex's and the read/write lock's.
#[derive(Debug, Clone)]
struct Cohorts {
    mutex: CohortMutex,
    rw: CohortReadWriteLock,
}

impl Recipe {
    /// Whether `--cohort` runs this recipe's clients as one cohort per process.
    fn has_cohort(self) -> bool {
        matches!(self, Recipe::Mutex | Recipe::Rwlock)
    }
}

impl Shared {
    fn push(&self, event: Event) {
        if let Ok(mut events) = self.events.lock() {
            events.push(event);
        }
    }
}

/// Runs every client until the run's end; then waits for them, up to two session timeouts
/// and a little past the end (an acquire still running then is recorded as unfinished).
/// Every client's last session comes back with the events (kept open until `CLOSE`).
async fn run(
    cfg: &OursConfig,
    clients: &[(Who, Client)],
    store: &Client,
) -> (Vec<Event>, Vec<Client>) {
    let shared = Arc::new(Shared {
        clock: Clock::start(),
        events: Mutex::new(Vec::new()),
        acquiring: Mutex::new(HashMap::new()),
        cohort: tokio::sync::Mutex::new(None),
    });
    let end = Instant::now() + cfg.run_for;
    let mut tasks = tokio::task::JoinSet::new();
    for (who, client) in clients {
        let mut c = Contender {
            name: who.to_string(),
            who: who.clone(),
            client: client.clone(),
            store: store.clone(),
            cfg: cfg.clone(),
            shared: shared.clone(),
            end,
            rng: shared.clock.now()
                ^ (u64::from(std::process::id()) << 20)
                ^ u64::from(who.index) << 40
                | 1,
            n: 0,
        };
        tasks.spawn(async move {
            c.run().await;
            c.client
        });
    }
    let wait_until = end + cfg.session_timeout * 2 + Duration::from_secs(10);
    let mut last = Vec::new();
    let _ = tokio::time::timeout_at(wait_until, async {
        while let Some(done) = tasks.join_next().await {
            if let Ok(client) = done {
                last.push(client);
            }
        }
    })
    .await;
    tasks.abort_all();
    let unfinished: Vec<Acquire> = shared
        .acquiring
        .lock()
        .map(|mut a| a.drain().map(|(_, a)| a).collect())
        .unwrap_or_default();
    for a in unfinished {
        shared.push(Event::Acquire(Acquire {
            end: None,
            outcome: AcquireEnd::Unfinished,
            ..a
        }));
    }
    let events = shared.events.lock().map(|e| e.clone()).unwrap_or_default();
    (events, last)
}

/// One client of ours.
struct Contender {
    /// The protected store's session: the registers are read and written through it, not
    /// through the lock's session (a store outlives a holder's pause; a write carries the
    /// fence, a check of the holder's lock node, or nothing).
    store: Client,
    name: String,
    who: Who,
    client: Client,
    cfg: OursConfig,
    shared: Arc<Shared>,
    end: Instant,
    rng: u64,
    n: u64,
}

impl Contender {
    fn now(&self) -> u64 {
        self.shared.clock.now()
    }

    fn roll(&mut self, n: u64) -> u64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng % n.max(1)
    }

    fn over(&self) -> bool {
        Instant::now() >= self.end
    }

    /// Runs the recipe's loop until the run's end; when the session ends (expired while the
    /// process was paused or its connections stalled), goes on with a new one, as a user
    /// would.
    async fn run(&mut self) {
        self.session().await;
        while !self.over() {
            self.run_session().await;
            if self.over() {
                break;
            }
            if self.client.state().is_terminal() {
                let fresh = match self.in_cohort() {
                    true => self.cohort().await.map(|(client, _)| client),
                    false => {
                        Client::builder()
                            .hosts(&self.cfg.connect)
                            .session_timeout(self.cfg.session_timeout)
                            .connect()
                            .await
                    }
                };
                match fresh {
                    Ok(client) => {
                        self.client = client;
                        self.session().await;
                    }
                    Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
                }
            }
        }
    }

    /// Records the client's session (a node left is traced to its client by it) and
    /// registers it on the server before it touches a lock (the log judge knows ours by it:
    /// see `judge::marks`), retrying until the registration is made or the session ends.
    async fn session(&self) {
        let id = self.client.session_id();
        self.shared.push(Event::Session(Session {
            who: self.name.clone(),
            id,
            at: self.now(),
        }));
        let path = format!("{}/session-{}-{id:x}", marks::MARKS, self.name);
        let data = marks::session_data("rust");
        let ephemeral = CreateOptions::new(CreateMode::Ephemeral);
        while !self.client.state().is_terminal() {
            match self.client.create(&path, data.as_bytes(), &ephemeral).await {
                Ok(_) | Err(zk_client::Error::NodeExists) => return,
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }

    /// Whether this client is one of its process's cohorts (`cohort`).
    fn in_cohort(&self) -> bool {
        self.cfg.cohort && self.who.recipe.has_cohort()
    }

    /// The cohorts' session and cohorts: the one they have while that session lives, else a
    /// new session (made by the first client to ask) and cohorts on it.
    async fn cohort(&self) -> std::result::Result<(Client, Cohorts), zk_client::Error> {
        let mut slot = self.shared.cohort.lock().await;
        if let Some((client, cohort)) = slot.as_ref() {
            if !client.state().is_terminal() {
                return Ok((client.clone(), cohort.clone()));
            }
        }
        // The first session is the one the process started with, if it lives.
        let client = match self.client.state().is_terminal() {
            false => self.client.clone(),
            true => {
                Client::builder()
                    .hosts(&self.cfg.connect)
                    .session_timeout(self.cfg.session_timeout)
                    .connect()
                    .await?
            }
        };
        let path = layout::lock_path(Recipe::Mutex);
        let mutex = InterProcessMutex::new(client.clone(), &path)
            .map_err(|_| zk_client::Error::InvalidArgument("the mutex's path"))?
            .cohort(CohortBound::default());
        let path = layout::lock_path(Recipe::Rwlock);
        let rw = InterProcessReadWriteLock::new(client.clone(), &path)
            .map_err(|_| zk_client::Error::InvalidArgument("the read/write lock's path"))?
            .cohort(CohortBound::default());
        let cohorts = Cohorts { mutex, rw };
        *slot = Some((client.clone(), cohorts.clone()));
        Ok((client, cohorts))
    }

    /// Whether to stop the loop: the run is over or the session ended.
    fn stop(&self) -> bool {
        self.over() || self.client.state().is_terminal()
    }

    /// The recipe's loop on the current session.
    async fn run_session(&mut self) {
        let recipe = self.who.recipe;
        let path = layout::lock_path(recipe);
        let client = self.client.clone();
        match recipe {
            Recipe::Mutex | Recipe::Rwlock if self.in_cohort() => match self.cohort().await {
                // The cohort of this client's session (another client may have replaced
                // it: then this one goes round again with the new session).
                Ok((shared, cohorts)) if shared.session_id() == client.session_id() => {
                    let regs = [layout::register(recipe, 0)];
                    match recipe {
                        Recipe::Rwlock => {
                            let rw = &cohorts.rw;
                            self.rw_loop(rw.write_lock(), rw.read_lock(), &regs).await
                        }
                        _ => self.lock_loop(&cohorts.mutex, Mode::Exclusive, &regs).await,
                    }
                }
                Ok((shared, _)) => {
                    self.client = shared;
                    self.session().await;
                }
                Err(e) => {
                    eprintln!("{}: {e}", self.name);
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            },
            Recipe::Mutex => match InterProcessMutex::new(client, &path) {
                Ok(lock) => {
                    self.lock_loop(&lock, Mode::Exclusive, &[layout::register(recipe, 0)])
                        .await
                }
                Err(e) => eprintln!("{}: {e}", self.name),
            },
            Recipe::SemaphoreMutex => match InterProcessSemaphoreMutex::new(client, &path) {
                Ok(lock) => {
                    self.lock_loop(&lock, Mode::Lease, &[layout::register(recipe, 0)])
                        .await
                }
                Err(e) => eprintln!("{}: {e}", self.name),
            },
            Recipe::Rwlock => match InterProcessReadWriteLock::new(client, &path) {
                Ok(rw) => {
                    let regs = [layout::register(recipe, 0)];
                    self.rw_loop(rw.write_lock(), rw.read_lock(), &regs).await
                }
                Err(e) => eprintln!("{}: {e}", self.name),
            },
            Recipe::Multilock => {
                let members: Vec<String> = (0..layout::MEMBERS).map(layout::member_path).collect();
                let refs: Vec<&str> = members.iter().map(String::as_str).collect();
                match InterProcessMultiLock::new(client, &refs) {
                    Ok(lock) => {
                        let regs: Vec<String> = (0..layout::MEMBERS)
                            .map(|k| layout::register(recipe, k))
                            .collect();
                        self.lock_loop(&lock, Mode::Exclusive, &regs).await;
                    }
                    Err(e) => eprintln!("{}: {e}", self.name),
                }
            }
            Recipe::Semaphore => match InterProcessSemaphoreV2::new(client, &path, self.cfg.leases)
            {
                Ok(sem) => self.lease_loop(&sem).await,
                Err(e) => eprintln!("{}: {e}", self.name),
            },
        }
    }

    /// A read/write lock's loop: writes (3 in 10, to the registers) and reads.
    async fn rw_loop(&mut self, write: &dyn Lock, read: &dyn Lock, regs: &[String]) {
        while !self.stop() {
            if self.roll(10) < 3 {
                self.cycle(write, Mode::Write, regs).await;
            } else {
                self.cycle(read, Mode::Read, &[]).await;
            }
        }
    }

    async fn lock_loop(&mut self, lock: &dyn Lock, mode: Mode, regs: &[String]) {
        while !self.stop() {
            self.cycle(lock, mode, regs).await;
        }
    }

    /// Picks a style and the acquire's deadline; records the acquire's start.
    fn begin(&mut self) -> (u64, Style, Instant, Option<Duration>) {
        self.n += 1;
        let style = Style::ALL
            .get(usize::try_from(self.roll(4)).unwrap_or(0))
            .copied()
            .unwrap_or(Style::Release);
        let deadline = match style {
            Style::Timeout => {
                (Instant::now() + Duration::from_millis(20 + self.roll(400))).min(self.end)
            }
            _ => self.end,
        };
        let cancel_after =
            (style == Style::Cancel).then(|| Duration::from_millis(1 + self.roll(40)));
        let start = self.now();
        if let Ok(mut a) = self.shared.acquiring.lock() {
            a.insert(
                self.name.clone(),
                Acquire {
                    who: self.name.clone(),
                    n: self.n,
                    style,
                    start,
                    end: None,
                    outcome: AcquireEnd::Unfinished,
                },
            );
        }
        (start, style, deadline, cancel_after)
    }

    /// Records how the acquire begun by [`Contender::begin`] ended.
    fn ended(&mut self, start: u64, style: Style, outcome: AcquireEnd) {
        if let Ok(mut a) = self.shared.acquiring.lock() {
            a.remove(&self.name);
        }
        let end = self.now();
        self.shared.push(Event::Acquire(Acquire {
            who: self.name.clone(),
            n: self.n,
            style,
            start,
            end: Some(end),
            outcome,
        }));
    }

    /// One acquisition in a style drawn at random: `acquire` is given its deadline; the
    /// attempt is cancelled (dropped) if the style says so; how it ended is recorded. The
    /// guard and the style when it holds (after a failure, a short pause first).
    async fn acquire<G, E, F>(&mut self, acquire: impl FnOnce(Instant) -> F) -> Option<(G, Style)>
    where
        F: std::future::Future<Output = std::result::Result<Option<G>, E>>,
        E: std::fmt::Debug,
    {
        let (start, style, deadline, cancel_after) = self.begin();
        let taking = acquire(deadline);
        let result = match cancel_after {
            Some(after) => tokio::time::timeout(after, taking).await.ok(),
            None => Some(taking.await),
        };
        let outcome = match result {
            None => AcquireEnd::Cancelled,
            Some(Ok(Some(guard))) => {
                self.ended(start, style, AcquireEnd::Held);
                return Some((guard, style));
            }
            Some(Ok(None)) => AcquireEnd::TimedOut,
            Some(Err(e)) => AcquireEnd::Failed(kind_of(&e)),
        };
        let failed = matches!(outcome, AcquireEnd::Failed(_));
        self.ended(start, style, outcome);
        if failed {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        None
    }

    /// One cycle on a lock: acquire, update the registers under the hold, release.
    async fn cycle(&mut self, lock: &dyn Lock, mode: Mode, regs: &[String]) {
        #[cfg(feature = "plant")]
        if DELETES_OTHERS.load(SeqCst) && self.who.recipe == Recipe::Mutex {
            self.delete_first().await;
        }
        let Some((guard, style)) = self
            .acquire(|deadline| lock.lock_until(Some(deadline)))
            .await
        else {
            return;
        };
        let from = self.now();
        let held: Vec<(&str, i64)> = guard
            .holds()
            .into_iter()
            .map(|h| (h.node_path(), h.fencing_token()))
            .collect();
        let mark = self.mark(guard.check_ops(), mode, &held).await;
        if mark.is_err() {
            self.unmarked(mode, &held, guard.lost()).await;
        }
        // Unmarked (its create failed or its outcome is unknown), the hold writes nothing:
        // the servers' log would show a write no mark stands for.
        let regs = if mark.is_ok() { regs } else { &[] };
        if !regs.is_empty() {
            stop_if_aimed(&self.name);
        }
        let lost_at = self.work(guard.as_ref(), mode, regs).await;
        // The hold as the clients' checker sees it ends with the work (a mark's delete held
        // up by a stalled connection is not the hold going on).
        let to = self.now();
        self.unmark(mark).await;
        for h in guard.holds() {
            let node = h.node_path();
            let on = if self.who.recipe == Recipe::Multilock {
                let member = node.rsplit('/').nth(1).unwrap_or("?");
                format!("member-{member}")
            } else if mode == Mode::Lease {
                "leases".to_owned()
            } else {
                "lock".to_owned()
            };
            self.shared.push(Event::Hold(Hold {
                who: self.name.clone(),
                n: self.n,
                on,
                mode,
                from,
                to,
                node: node.rsplit('/').next().map(str::to_owned),
                token: Some(h.fencing_token()),
            }));
        }
        if let Some(at) = lost_at {
            self.lost(at);
        }
        match style {
            Style::Drop => drop(guard),
            _ => {
                let _ = guard.release().await;
            }
        }
    }

    /// Leaves the hold's mark on the server ([`marks`]): an ephemeral node of the lock's own
    /// session, created in one `multi` with the hold's checks, naming each node held with its
    /// token. A holder that believes it holds keeps trying while its connection is down (as a
    /// user's critical section would go on to touch the server), for up to a session timeout:
    /// a hold granted during a loss leaves its mark once the connection is back. Its path; an
    /// error (with the path) if it was not surely created.
    async fn mark(
        &self,
        checks: Vec<Op>,
        mode: Mode,
        held: &[(&str, i64)],
    ) -> std::result::Result<String, String> {
        let path = format!("{}/{}-{}", marks::MARKS, self.name, self.n);
        let mut ops = checks;
        ops.push(Op::create(
            path.clone(),
            marks::mark_data("rust", &self.lock(), mark_mode(mode), held),
            CreateOptions::new(CreateMode::Ephemeral),
        ));
        let until = Instant::now() + self.cfg.session_timeout;
        loop {
            let err = match self.client.multi(&ops).await {
                Ok(_) => return Ok(path),
                Err(e) => e,
            };
            let unsent = matches!(err, zk_client::Error::NotConnected);
            if !(unsent || err.is_uncertain())
                || self.client.state().is_terminal()
                || Instant::now() >= until
            {
                return Err(path);
            }
            if err.is_uncertain() {
                // Made or not: the mark is there if it was made (its session lives on).
                match self.client.exists(&path).await {
                    Ok(Some(_)) => return Ok(path),
                    Ok(None) => {}
                    Err(_) => return Err(path),
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Accounts on the record for a hold whose mark could not be made ([`marks`]'s unmarked
    /// record, which the log judge reads): made through the store session (it outlives the
    /// lock's), and once the guard says the hold is lost, set to say how long after the
    /// failure that was. Waits for the signal (as a careful holder that cannot mark would
    /// before going on) up to a session timeout and a little, while the record is made; a
    /// holder never told stays recorded as untold, which the judge charges.
    async fn unmarked(
        &self,
        mode: Mode,
        held: &[(&str, i64)],
        lost: impl std::future::Future<Output = recipe_mutex::Loss>,
    ) {
        let failed = Instant::now();
        let path = format!(
            "{}/{}{}-{}",
            marks::MARKS,
            marks::UNMARKED,
            self.name,
            self.n
        );
        let bound = self.cfg.session_timeout + Duration::from_secs(2);
        let told = async {
            tokio::time::timeout(bound, lost)
                .await
                .ok()
                .map(|_| failed.elapsed())
        };
        let made = async {
            let data = marks::unmarked_data("rust", &self.lock(), mark_mode(mode), held, None);
            let ephemeral = CreateOptions::new(CreateMode::Ephemeral);
            loop {
                match self.store.create(&path, data.as_bytes(), &ephemeral).await {
                    Ok(_) | Err(zk_client::Error::NodeExists) => return true,
                    Err(_) if self.store.state().is_terminal() => return false,
                    Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
                }
            }
        };
        let (told, made) = tokio::join!(told, made);
        let Some(after) = told.filter(|_| made) else {
            return;
        };
        let ms = u64::try_from(after.as_millis()).unwrap_or(u64::MAX);
        let data = marks::unmarked_data("rust", &self.lock(), mark_mode(mode), held, Some(ms));
        loop {
            match self.store.set_data(&path, data.as_bytes(), None).await {
                Ok(_) => return,
                Err(_) if self.store.state().is_terminal() => return,
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }

    /// Deletes the mark (also one whose create's outcome is unknown) before the hold is
    /// released: until it is gone or its session has ended, however long that takes (the
    /// release's delete does not give up either, and a mark outliving its lock node would
    /// stand beside the next holder's: a long run saw one outlive a hold released after two
    /// elections in a row).
    async fn unmark(&self, mark: std::result::Result<String, String>) {
        let path = match mark {
            Ok(p) | Err(p) => p,
        };
        loop {
            match self.client.delete(&path, None).await {
                Ok(()) | Err(zk_client::Error::NoNode) => return,
                Err(_) if self.client.state().is_terminal() => return,
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }

    /// The lock this worker's holds are of (its recipe's path), as its marks name it.
    fn lock(&self) -> String {
        layout::lock_path(self.who.recipe)
    }

    /// The plant `deletes-others`: deletes, by name, the node that sorts first (by its
    /// sequence suffix) in the lock's directory, whoever's it is; nothing if none.
    #[cfg(feature = "plant")]
    async fn delete_first(&self) {
        let dir = layout::lock_path(self.who.recipe);
        let Ok(children) = self.client.get_children(&dir).await else {
            return;
        };
        let suffix = |c: &String| c.get(c.len().saturating_sub(10)..).map(str::to_owned);
        if let Some(first) = children.iter().min_by_key(|c| suffix(c)) {
            let _ = self.client.delete(&format!("{dir}/{first}"), None).await;
        }
    }

    /// How long the next hold lasts: the configured length, else a random 0.2-3 ms.
    fn hold_for(&mut self) -> Duration {
        match self.cfg.hold {
            Some(hold) => hold,
            None => Duration::from_micros(200 + self.roll(2800)),
        }
    }

    fn lost(&self, at: u64) {
        self.shared.push(Event::Lost(Lost {
            who: self.name.clone(),
            n: self.n,
            at,
        }));
    }

    /// The work under a hold: read the registers, wait a little, write each one more in one
    /// `multi` (fenced unless the fence is off). Watches the guard's lost signal throughout;
    /// after a write that failed, waits for the signal (a careful holder asks the guard before
    /// going on) up to a session timeout and a little. When the signal fired, if it did.
    async fn work(&mut self, guard: &dyn Guard, mode: Mode, regs: &[String]) -> Option<u64> {
        let hold_for = self.hold_for();
        let lost = guard.lost();
        tokio::pin!(lost);
        let mut lost_at = None;
        let written = {
            let write = self.write(guard, mode, regs, hold_for);
            tokio::pin!(write);
            loop {
                tokio::select! {
                    biased;
                    ok = &mut write => break ok,
                    _ = &mut lost, if lost_at.is_none() => lost_at = Some(self.shared.clock.now()),
                }
            }
        };
        if lost_at.is_none() {
            lost_at = self
                .confirm(guard.is_valid() && written, || guard.is_valid(), lost)
                .await;
        }
        lost_at
    }

    /// After a hold's work: when the work failed or the session is not surely connected (a
    /// process just resumed from a pause sees its timers fire first), waits for the hold's
    /// lost signal, up to a session timeout and a little, or until the session is surely
    /// connected again, as a careful holder would before going on. When the signal fired.
    async fn confirm(
        &self,
        fine: bool,
        valid: impl Fn() -> bool,
        lost: impl std::future::Future<Output = recipe_mutex::Loss>,
    ) -> Option<u64> {
        // Let the session task see what a pause did before asking.
        tokio::time::sleep(Duration::from_millis(5)).await;
        if fine && valid() {
            return None;
        }
        tokio::pin!(lost);
        let until = Instant::now() + self.cfg.session_timeout + Duration::from_secs(2);
        loop {
            tokio::select! {
                _ = &mut lost => return Some(self.now()),
                () = tokio::time::sleep(Duration::from_millis(50)) => {
                    if valid() || Instant::now() >= until {
                        return None;
                    }
                }
            }
        }
    }

    /// Reads `regs`, waits `hold_for`, writes each one more; whether every write was accepted
    /// (true with no registers).
    async fn write(
        &self,
        guard: &dyn Guard,
        mode: Mode,
        regs: &[String],
        hold_for: Duration,
    ) -> bool {
        if regs.is_empty() {
            tokio::time::sleep(hold_for).await;
            return true;
        }
        let mut read = Vec::with_capacity(regs.len());
        for reg in regs {
            // ZooKeeper's reads are not linearizable: a store session on a member that is
            // behind (just resumed from a pause, say) reads an old value. A sync first makes
            // the read as new as every write committed before it (seen in a long run: a read
            // two seconds old, then a fenced write that lost four updates).
            if self.store.sync(&layout::register_path(reg)).await.is_err() {
                return false;
            }
            match self.store.get_data(&layout::register_path(reg)).await {
                Ok((data, _)) => read.push(marks::register_value(&data)),
                Err(_) => return false,
            }
        }
        tokio::time::sleep(hold_for).await;
        let mut ops = if self.cfg.fence {
            guard.check_ops()
        } else {
            Vec::new()
        };
        let checks = ops.len();
        let holds = guard.holds();
        for (k, (reg, v)) in regs.iter().zip(&read).enumerate() {
            // The hold the register is written under: the one node of the register's own lock
            // (the multi-lock's member k). None (no such node held): written under `-`, which
            // the judge finds, rather than under another lock's node.
            let lock = layout::register_lock(self.who.recipe, k);
            let hold = holds.iter().find(|h| marks::is_of(h.node_path(), &lock));
            let (node, token) = hold.map_or(("-", 0), |h| (h.node_path(), h.fencing_token()));
            ops.push(Op::set_data(
                layout::register_path(reg),
                marks::register_data(v + 1, "rust", &lock, mark_mode(mode), node, token),
                None,
            ));
        }
        let sent = self.now();
        let result = self.store.multi(&ops).await;
        let replied = self.now();
        let mut all = true;
        for (i, (reg, v)) in regs.iter().zip(&read).enumerate() {
            let outcome = match &result {
                Ok(results) => match results.get(checks + i) {
                    Some(OpResult::DataSet(stat)) => WriteResult::Accepted {
                        version: u64::try_from(stat.version).unwrap_or(0),
                    },
                    _ => WriteResult::Failed("NoStat".into()),
                },
                Err(zk_client::Error::MultiFailed { index, source })
                    if *index < checks && **source == zk_client::Error::NoNode =>
                {
                    WriteResult::Fenced
                }
                Err(e) => WriteResult::Failed(kind_of(e)),
            };
            all &= outcome.accepted();
            self.shared.push(Event::Write(Write {
                who: self.name.clone(),
                n: self.n,
                reg: reg.clone(),
                read: *v,
                sent,
                replied,
                result: outcome,
            }));
        }
        all
    }

    /// The semaphore: one lease per acquisition (no register: N holders at once share none).
    async fn lease_loop(&mut self, sem: &InterProcessSemaphoreV2) {
        while !self.stop() {
            let Some((lease, style)) = self
                .acquire(|deadline| {
                    sem.try_acquire_for(deadline.saturating_duration_since(Instant::now()))
                })
                .await
            else {
                continue;
            };
            let from = self.now();
            let held = [(lease.node_path(), lease.fencing_token())];
            let mark = self.mark(vec![lease.check_op()], Mode::Lease, &held).await;
            if mark.is_err() {
                self.unmarked(Mode::Lease, &held, lease.lost()).await;
            }
            let hold_for = self.hold_for();
            let mut lost_at = tokio::select! {
                _ = lease.lost() => Some(self.now()),
                () = tokio::time::sleep(hold_for) => None,
            };
            if lost_at.is_none() {
                lost_at = self.confirm(true, || lease.is_valid(), lease.lost()).await;
            }
            let to = self.now();
            self.unmark(mark).await;
            self.shared.push(Event::Hold(Hold {
                who: self.name.clone(),
                n: self.n,
                on: "leases".into(),
                mode: Mode::Lease,
                from,
                to,
                node: lease.node_path().rsplit('/').next().map(str::to_owned),
                token: Some(lease.fencing_token()),
            }));
            if let Some(at) = lost_at {
                self.lost(at);
            }
            match style {
                Style::Drop => drop(lease),
                _ => {
                    let _ = lease.release().await;
                }
            }
        }
    }
}

/// The mode a mark or a register write names for a hold in `mode`.
fn mark_mode(mode: Mode) -> marks::Mode {
    match mode {
        Mode::Exclusive => marks::Mode::Exclusive,
        Mode::Read => marks::Mode::Read,
        Mode::Write => marks::Mode::Write,
        Mode::Lease => marks::Mode::Lease,
    }
}

/// An error's kind, one word for a history line: its debug form up to the first space,
/// parenthesis or brace.
fn kind_of(e: &impl std::fmt::Debug) -> String {
    let text = format!("{e:?}");
    text.split([' ', '(', '{'])
        .next()
        .filter(|s| !s.is_empty())
        .unwrap_or("Error")
        .to_owned()
}
