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
//!
//! [`Style`]: super::history::Style
//! [`marks`]: super::judge::marks

use std::collections::HashMap;
use std::io::BufRead;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use recipe_mutex::CohortMutex;
use recipe_rwlock::CohortReadWriteLock;
use tokio::time::Instant;
use zk_client::Client;

use super::history::{Acquire, AcquireEnd, Event, Who};
use super::layout;
use crate::interop::holds::Clock;
use crate::recipe::Recipe;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

mod contender;
mod harness;
mod mark;
mod plant;
mod work;

pub use plant::ChaosPlant;

use harness::harness_line;

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
