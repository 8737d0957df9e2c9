//! The collecting subscriber and the run: contenders on one current-thread runtime, their
//! marks, the events, and the cycles cut from them.

use std::collections::HashMap;
use std::error::Error;
use std::fmt::Debug;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use recipe_mutex::InterProcessMutex;
use tracing::callsite::Identifier;
use tracing::field::{Field, Visit};
use tracing::level_filters::LevelFilter;
use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::Interest;
use tracing::{Event, Metadata, Subscriber};
use xtask::bench::stages::breakdown::{self, Cycle, Kind, Marks};
use zk_client::Client;

type Result<T> = std::result::Result<T, Box<dyn Error + Send + Sync>>;

/// The session timeout of each contender (as `zk-worker bench`'s).
const SESSION_TIMEOUT: Duration = Duration::from_secs(10);
/// Events per chunk of the store: a new chunk is allocated when one is full, and nothing is
/// ever copied.
const CHUNK: usize = 1 << 16;

/// What a callsite's events are, known from its message the first time it fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    LockAttempt,
    Request,
    Reply,
    Waiting,
    LockHeld,
    /// zk-client's "session state changed", emitted in the session's IO task: tells which
    /// task that is.
    SessionState,
}

impl Class {
    fn of(target: &str, message: &str) -> Option<Class> {
        let client = target.starts_with("zk_client");
        let lock = target.starts_with("recipe_mutex");
        match message {
            "lock attempt" if lock => Some(Class::LockAttempt),
            "waiting: watching a node" if lock => Some(Class::Waiting),
            "lock held" if lock => Some(Class::LockHeld),
            "request" if client => Some(Class::Request),
            "reply" if client => Some(Class::Reply),
            "session state changed" if client => Some(Class::SessionState),
            _ => None,
        }
    }
}

/// One event as stored: raw values only.
#[derive(Debug, Clone, Copy)]
struct Raw {
    at: Instant,
    task: Option<tokio::task::Id>,
    class: Class,
    /// `xid` for requests and replies, `handed_over` (0 or 1) for holds.
    value: i64,
}

#[derive(Default)]
struct Store {
    chunks: Vec<Vec<Raw>>,
    /// Each callsite seen, and its class (`None`: not one we read).
    callsites: HashMap<Identifier, Option<Class>>,
}

impl Store {
    fn push(&mut self, raw: Raw) {
        match self.chunks.last_mut() {
            Some(chunk) if chunk.len() < CHUNK => chunk.push(raw),
            _ => {
                let mut chunk = Vec::with_capacity(CHUNK);
                chunk.push(raw);
                self.chunks.push(chunk);
            }
        }
    }

    fn len(&self) -> usize {
        self.chunks.iter().map(Vec::len).sum()
    }

    fn iter(&self) -> impl Iterator<Item = &Raw> {
        self.chunks.iter().flatten()
    }
}

/// The subscriber: every event of the two crates' targets at `debug` and above, stored raw.
#[derive(Clone, Default)]
struct Collector(Arc<Mutex<Store>>);

fn wanted(metadata: &Metadata<'_>) -> bool {
    let target = metadata.target();
    *metadata.level() <= tracing::Level::DEBUG
        && (target.starts_with("zk_client") || target.starts_with("recipe_mutex"))
}

/// Reads the message, once per callsite.
#[derive(Default)]
struct Message(String);

impl Visit for Message {
    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

/// Reads the one number an event of a known class carries, without formatting.
#[derive(Default)]
struct Value(Option<i64>);

impl Visit for Value {
    fn record_i64(&mut self, field: &Field, value: i64) {
        if field.name() == "xid" {
            self.0 = Some(value);
        }
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        if field.name() == "handed_over" {
            self.0 = Some(i64::from(value));
        }
    }
    fn record_debug(&mut self, _: &Field, _: &dyn Debug) {}
}

impl Subscriber for Collector {
    fn register_callsite(&self, metadata: &'static Metadata<'static>) -> Interest {
        if wanted(metadata) {
            Interest::always()
        } else {
            Interest::never()
        }
    }
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        wanted(metadata)
    }
    fn max_level_hint(&self) -> Option<LevelFilter> {
        Some(LevelFilter::DEBUG)
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let at = Instant::now();
        let task = tokio::task::try_id();
        let Ok(mut store) = self.0.lock() else {
            return;
        };
        let metadata = event.metadata();
        let class = *store
            .callsites
            .entry(metadata.callsite())
            .or_insert_with(|| {
                let mut message = Message::default();
                event.record(&mut message);
                Class::of(metadata.target(), &message.0)
            });
        let Some(class) = class else {
            return;
        };
        let mut value = Value::default();
        if matches!(class, Class::Request | Class::Reply | Class::LockHeld) {
            event.record(&mut value);
        }
        store.push(Raw {
            at,
            task,
            class,
            value: value.0.unwrap_or(0),
        });
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

impl Collector {
    fn len(&self) -> usize {
        self.0.lock().map_or(0, |s| s.len())
    }

    /// The task of the first event of `class` from the `from`th event on.
    fn task_of(&self, from: usize, class: Class) -> Option<tokio::task::Id> {
        let store = self.0.lock().ok()?;
        store
            .iter()
            .skip(from)
            .find(|r| r.class == class)
            .and_then(|r| r.task)
    }
}

/// One contender's marks: lock() called, lock() returned, release() returned.
type CycleMarks = [Instant; 3];

/// Lock → release cycles until `end` (the cycle in progress then is finished).
async fn cycles(mutex: InterProcessMutex, end: Instant) -> Result<Vec<CycleMarks>> {
    let mut marks = Vec::with_capacity(1 << 16);
    loop {
        let called = Instant::now();
        let guard = mutex.lock().await?;
        let returned = Instant::now();
        guard.release().await?;
        let released = Instant::now();
        marks.push([called, returned, released]);
        if released >= end {
            return Ok(marks);
        }
    }
}

/// A contender's run: its marks, its task and its session's IO task.
struct Contender {
    marks: Vec<CycleMarks>,
    task: tokio::task::Id,
    io_task: tokio::task::Id,
}

/// `zk-stages <connect> <lock path> <sessions> <run ms>`.
pub fn run(args: &[String]) -> Result<()> {
    let [connect, path, sessions, run_ms] = args else {
        return Err("usage: zk-stages <connect> <lock path> <sessions> <run ms>".into());
    };
    let sessions: usize = sessions
        .parse()
        .ok()
        .filter(|n| (1..=64).contains(n))
        .ok_or_else(|| format!("<sessions> wants 1 to 64, got `{sessions}`"))?;
    let run_for = Duration::from_millis(run_ms.parse()?);

    let collector = Collector::default();
    if let Ok(mut store) = collector.0.lock() {
        store.chunks.push(Vec::with_capacity(CHUNK));
    }
    tracing::subscriber::set_global_default(collector.clone())?;

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (start, contenders) = rt.block_on(async {
        let mut clients = Vec::with_capacity(sessions);
        let mut io_tasks = Vec::with_capacity(sessions);
        for k in 0..sessions {
            let from = collector.len();
            let client = Client::builder()
                .hosts(connect.as_str())
                .session_timeout(SESSION_TIMEOUT)
                .connect()
                .await?;
            let io_task = collector
                .task_of(from, Class::SessionState)
                .ok_or_else(|| format!("session {k}: no \"session state changed\" event"))?;
            clients.push(client);
            io_tasks.push(io_task);
        }
        let start = Instant::now();
        let end = start + run_for;
        let mut handles = Vec::with_capacity(sessions);
        for client in &clients {
            let mutex = InterProcessMutex::new(client.clone(), path.as_str())?;
            handles.push(tokio::spawn(cycles(mutex, end)));
        }
        let mut contenders = Vec::with_capacity(sessions);
        for (handle, io_task) in handles.into_iter().zip(io_tasks) {
            let task = handle.id();
            contenders.push(Contender {
                marks: handle.await??,
                task,
                io_task,
            });
        }
        for client in &clients {
            client.close().await?;
        }
        Ok::<_, Box<dyn Error + Send + Sync>>((start, contenders))
    })?;
    drop(rt);

    let store = collector
        .0
        .lock()
        .map_err(|_| "the collector's lock is poisoned")?;
    let ns = |t: Instant| {
        u64::try_from(t.saturating_duration_since(start).as_nanos()).unwrap_or(u64::MAX)
    };
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let (mut done, mut skipped, mut why) = (0usize, 0usize, None);
    for (k, contender) in contenders.iter().enumerate() {
        // This contender's events, in order (one thread: the store's order is time order).
        let events: Vec<breakdown::Event> = store
            .iter()
            .filter(|r| r.at >= start)
            .filter(|r| r.task == Some(contender.task) || r.task == Some(contender.io_task))
            .filter_map(|r| {
                let kind = match r.class {
                    Class::LockAttempt => Kind::LockAttempt,
                    Class::Request => Kind::Request { xid: r.value },
                    Class::Reply => Kind::Reply { xid: r.value },
                    Class::Waiting => Kind::Waiting,
                    Class::LockHeld => Kind::LockHeld {
                        handed_over: r.value != 0,
                    },
                    Class::SessionState => return None,
                };
                Some(breakdown::Event { at: ns(r.at), kind })
            })
            .collect();
        for &[called, returned, released] in &contender.marks {
            let marks = Marks {
                lock_called: ns(called),
                lock_returned: ns(returned),
                release_returned: ns(released),
            };
            let first = events.partition_point(|e| e.at < marks.lock_called);
            let last = events.partition_point(|e| e.at <= marks.release_returned);
            let own = events.get(first..last).unwrap_or(&[]);
            match breakdown::breakdown(&marks, own) {
                Ok(stages) => {
                    done += 1;
                    let cycle = Cycle {
                        contender: k,
                        at: marks.lock_called,
                        stages,
                    };
                    writeln!(out, "{cycle}")?;
                }
                Err(missing) => {
                    skipped += 1;
                    why.get_or_insert(missing.name());
                }
            }
        }
    }
    writeln!(
        out,
        "STAGES cycles={done} skipped={skipped} events={} why={} cpu_ticks={}",
        store.len(),
        why.unwrap_or("none"),
        xtask::bench::procfs::cpu_ticks("self")?
    )?;
    out.flush()?;
    Ok(())
}
