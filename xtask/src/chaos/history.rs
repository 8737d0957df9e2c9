//! What a chaos run records: the lines each worker process writes (one file per process, on
//! the clock the interop runs share, [`Clock`](crate::interop::holds::Clock)), read back as
//! [`Event`]s for the [checker](super::check).
//!
//! A client is named `<lib>-<process>.<recipe>.<i>`: `rust-1.mutex.0` is the first mutex
//! client of our second process, `java-0.semaphore-mutex.1` a Curator client. Its lines:
//!
//! ```text
//! HOLD who=rust-1.mutex.0 n=12 on=lock mode=x from=<ns> to=<ns> node=_c_...-lock-0000000012 token=4295032833
//! ACQ who=rust-1.mutex.0 n=12 style=drop start=<ns> end=<ns> outcome=held
//! WRITE who=rust-1.mutex.0 n=12 reg=mutex read=41 sent=<ns> replied=<ns> result=ok:42
//! LOST who=rust-1.mutex.0 n=12 at=<ns>
//! SESSION who=rust-1.mutex.0 id=0x30000b424a40007 at=<ns>
//! ```
//!
//! - `HOLD` is the interop's [`Hold`] (what was held, from after the acquire returned to
//!   before the release was called).
//! - `ACQ`: every acquisition attempt, how it was asked for ([`Style`]) and how it ended
//!   ([`AcquireEnd`]); `end=-` with `outcome=unfinished` for one still running when the
//!   worker stopped waiting for it.
//! - `WRITE`: a holder's update of the protected register `reg`: it read `read`, then wrote
//!   `read + 1` guarded by its hold (ours: the guard's fencing `check_op` in one `multi`;
//!   Curator's: `setData` with the version it read), and the result ([`WriteResult`]; for an
//!   accepted write the register's version after it).
//! - `LOST`: the client was told that hold `n` is lost (ours: the guard's `lost()`;
//!   Curator's: the connection state `SUSPENDED` or `LOST` while holding).
//! - `SESSION`: the client has a session with this id (each new one, after an expiry), so
//!   that a node left at the end can be traced to its client.

use std::fmt;
use std::path::Path;

use crate::interop::holds::Hold;
use crate::line::Fields;
use crate::recipe::Recipe;

/// A client's name, split: `rust-1.mutex.0`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Who {
    /// `rust` or `java`.
    pub lib: String,
    /// The worker process, within its library.
    pub process: u32,
    /// The recipe it runs.
    pub recipe: Recipe,
    /// The client within the process and recipe.
    pub index: u32,
}

impl Who {
    /// Parses `rust-1.mutex.0`.
    ///
    /// # Errors
    /// Anything else.
    pub fn parse(who: &str) -> Result<Who, String> {
        let bad = || format!("`{who}` is not a chaos client's name (<lib>-<process>.<recipe>.<i>)");
        let (lib, rest) = who.split_once('-').ok_or_else(bad)?;
        let mut parts = rest.split('.');
        let (Some(process), Some(recipe), Some(index), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(bad());
        };
        if lib != "rust" && lib != "java" {
            return Err(bad());
        }
        Ok(Who {
            lib: lib.to_owned(),
            process: process.parse().map_err(|_| bad())?,
            recipe: Recipe::parse(recipe).map_err(|_| bad())?,
            index: index.parse().map_err(|_| bad())?,
        })
    }

    /// The process's name: `rust-1` (what the nemesis pauses).
    pub fn process_name(&self) -> String {
        format!("{}-{}", self.lib, self.process)
    }

    /// Whether it is one of ours.
    pub fn is_ours(&self) -> bool {
        self.lib == "rust"
    }
}

impl fmt::Display for Who {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}-{}.{}.{}",
            self.lib,
            self.process,
            self.recipe.name(),
            self.index
        )
    }
}

/// How an acquisition was asked for (the mix of styles a run exercises).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Style {
    /// Without a deadline; released explicitly.
    Release,
    /// Without a deadline; the guard dropped (released in the background).
    Drop,
    /// With a short deadline (may time out).
    Timeout,
    /// Dropped (cancelled) after a random short wait, if not yet held.
    Cancel,
}

impl Style {
    /// Every style.
    pub const ALL: [Style; 4] = [Style::Release, Style::Drop, Style::Timeout, Style::Cancel];

    /// The name in a line.
    pub fn name(self) -> &'static str {
        match self {
            Style::Release => "release",
            Style::Drop => "drop",
            Style::Timeout => "timeout",
            Style::Cancel => "cancel",
        }
    }

    fn parse(s: &str) -> Option<Style> {
        Style::ALL.into_iter().find(|st| st.name() == s)
    }
}

/// How an acquisition ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AcquireEnd {
    /// It held (a `HOLD` follows with the same `n`).
    Held,
    /// Its deadline passed.
    TimedOut,
    /// It was dropped before holding.
    Cancelled,
    /// It failed with this error (terminal: the session ended, say).
    Failed(String),
    /// Still running when the worker stopped waiting for it: stuck.
    Unfinished,
}

impl AcquireEnd {
    fn text(&self) -> String {
        match self {
            AcquireEnd::Held => "held".into(),
            AcquireEnd::TimedOut => "timeout".into(),
            AcquireEnd::Cancelled => "cancelled".into(),
            AcquireEnd::Failed(e) => format!("error:{e}"),
            AcquireEnd::Unfinished => "unfinished".into(),
        }
    }

    fn parse(s: &str) -> Option<AcquireEnd> {
        Some(match s {
            "held" => AcquireEnd::Held,
            "timeout" => AcquireEnd::TimedOut,
            "cancelled" => AcquireEnd::Cancelled,
            "unfinished" => AcquireEnd::Unfinished,
            other => AcquireEnd::Failed(other.strip_prefix("error:")?.to_owned()),
        })
    }
}

/// One acquisition attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Acquire {
    /// The client.
    pub who: String,
    /// Its acquisition count (as in its `HOLD`).
    pub n: u64,
    /// How it was asked for.
    pub style: Style,
    /// When it was called.
    pub start: u64,
    /// When it returned (none: it had not).
    pub end: Option<u64>,
    /// How it ended.
    pub outcome: AcquireEnd,
}

/// What became of a register write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteResult {
    /// Applied; the register's version after it.
    Accepted {
        /// `Stat.version` after the write.
        version: u64,
    },
    /// Ours: refused by the fence (the hold's node was gone: the `check_op` failed).
    Fenced,
    /// Curator's: refused because the register changed since it was read (`BadVersion`).
    BadVersion,
    /// Failed otherwise (the connection or session went); may or may not have been applied
    /// (the next read tells).
    Failed(String),
}

impl WriteResult {
    fn text(&self) -> String {
        match self {
            WriteResult::Accepted { version } => format!("ok:{version}"),
            WriteResult::Fenced => "fenced".into(),
            WriteResult::BadVersion => "badversion".into(),
            WriteResult::Failed(e) => format!("error:{e}"),
        }
    }

    fn parse(s: &str) -> Option<WriteResult> {
        Some(match s {
            "fenced" => WriteResult::Fenced,
            "badversion" => WriteResult::BadVersion,
            other => match other.split_once(':')? {
                ("ok", v) => WriteResult::Accepted {
                    version: v.parse().ok()?,
                },
                ("error", e) => WriteResult::Failed(e.to_owned()),
                _ => return None,
            },
        })
    }

    /// Whether the register took it.
    pub fn accepted(&self) -> bool {
        matches!(self, WriteResult::Accepted { .. })
    }
}

/// A holder's update of a register.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Write {
    /// The client.
    pub who: String,
    /// The hold it wrote under.
    pub n: u64,
    /// The register (`mutex`, `rwlock`, `semaphore-mutex`, `multilock-<k>`).
    pub reg: String,
    /// The value it read (it wrote one more).
    pub read: u64,
    /// When the write was sent.
    pub sent: u64,
    /// When its result came.
    pub replied: u64,
    /// The result.
    pub result: WriteResult,
}

/// A client told that a hold is lost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lost {
    /// The client.
    pub who: String,
    /// The hold.
    pub n: u64,
    /// When it was told.
    pub at: u64,
}

/// A client's session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// The client.
    pub who: String,
    /// The session id.
    pub id: i64,
    /// When the client had it.
    pub at: u64,
}

/// One line of a chaos history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A hold.
    Hold(Hold),
    /// An acquisition attempt.
    Acquire(Acquire),
    /// A register write.
    Write(Write),
    /// A lost hold.
    Lost(Lost),
    /// A session.
    Session(Session),
}

impl Event {
    /// The client it is about.
    pub fn who(&self) -> &str {
        match self {
            Event::Hold(h) => &h.who,
            Event::Acquire(a) => &a.who,
            Event::Write(w) => &w.who,
            Event::Lost(l) => &l.who,
            Event::Session(s) => &s.who,
        }
    }

    /// Parses one line.
    ///
    /// # Errors
    /// An unknown tag, a missing or unknown field, a bad value, or a client name that is not
    /// a chaos client's.
    pub fn parse(line: &str) -> Result<Event, String> {
        let tag = line.split(' ').next().unwrap_or("");
        let event = match tag {
            "HOLD" => Event::Hold(Hold::parse(line)?),
            "ACQ" => {
                let f = Fields::parse(line, "ACQ")?
                    .only(&["who", "n", "style", "start", "end", "outcome"])?;
                let style = f.text("style")?;
                let outcome = f.text("outcome")?;
                Event::Acquire(Acquire {
                    who: f.text("who")?.to_owned(),
                    n: f.number("n")?,
                    style: Style::parse(style)
                        .ok_or_else(|| format!("unknown style `{style}` in {line:?}"))?,
                    start: f.number("start")?,
                    end: match f.text("end")? {
                        "-" => None,
                        _ => Some(f.number("end")?),
                    },
                    outcome: AcquireEnd::parse(outcome)
                        .ok_or_else(|| format!("unknown outcome `{outcome}` in {line:?}"))?,
                })
            }
            "WRITE" => {
                let f = Fields::parse(line, "WRITE")?
                    .only(&["who", "n", "reg", "read", "sent", "replied", "result"])?;
                let result = f.text("result")?;
                Event::Write(Write {
                    who: f.text("who")?.to_owned(),
                    n: f.number("n")?,
                    reg: f.text("reg")?.to_owned(),
                    read: f.number("read")?,
                    sent: f.number("sent")?,
                    replied: f.number("replied")?,
                    result: WriteResult::parse(result)
                        .ok_or_else(|| format!("unknown result `{result}` in {line:?}"))?,
                })
            }
            "LOST" => {
                let f = Fields::parse(line, "LOST")?.only(&["who", "n", "at"])?;
                Event::Lost(Lost {
                    who: f.text("who")?.to_owned(),
                    n: f.number("n")?,
                    at: f.number("at")?,
                })
            }
            "SESSION" => {
                let f = Fields::parse(line, "SESSION")?.only(&["who", "id", "at"])?;
                let id = f.text("id")?;
                Event::Session(Session {
                    who: f.text("who")?.to_owned(),
                    id: id
                        .strip_prefix("0x")
                        .and_then(|hex| u64::from_str_radix(hex, 16).ok())
                        .map(|v| v as i64)
                        .ok_or_else(|| format!("`id={id}` is not a session id in {line:?}"))?,
                    at: f.number("at")?,
                })
            }
            _ => return Err(format!("not a chaos history line: {line:?}")),
        };
        Who::parse(event.who())?;
        Ok(event)
    }
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Event::Hold(h) => write!(f, "{h}"),
            Event::Acquire(a) => write!(
                f,
                "ACQ who={} n={} style={} start={} end={} outcome={}",
                a.who,
                a.n,
                a.style.name(),
                a.start,
                a.end.map_or_else(|| "-".to_owned(), |e| e.to_string()),
                a.outcome.text()
            ),
            Event::Write(w) => write!(
                f,
                "WRITE who={} n={} reg={} read={} sent={} replied={} result={}",
                w.who,
                w.n,
                w.reg,
                w.read,
                w.sent,
                w.replied,
                w.result.text()
            ),
            Event::Lost(l) => write!(f, "LOST who={} n={} at={}", l.who, l.n, l.at),
            Event::Session(s) => write!(f, "SESSION who={} id={:#x} at={}", s.who, s.id, s.at),
        }
    }
}

/// Reads every `*.history` file of `dir`.
///
/// # Errors
/// A file that cannot be read, or a line that does not parse (with its file and line).
pub fn read_dir(dir: &Path) -> Result<Vec<Event>, String> {
    let mut events = Vec::new();
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries {
        let path = entry.map_err(|e| e.to_string())?.path();
        if path.extension().is_none_or(|x| x != "history") {
            continue;
        }
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        for (i, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            events.push(
                Event::parse(line).map_err(|e| format!("{}:{}: {e}", path.display(), i + 1))?,
            );
        }
    }
    Ok(events)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn every_line_reads_back_as_written() {
        let lines = [
            "HOLD who=rust-1.mutex.0 n=12 on=lock mode=x from=10 to=20 node=_c_a-lock-0000000012 token=77",
            "ACQ who=java-0.semaphore-mutex.1 n=3 style=cancel start=5 end=- outcome=unfinished",
            "ACQ who=rust-0.rwlock.2 n=4 style=timeout start=5 end=9 outcome=timeout",
            "ACQ who=rust-0.rwlock.2 n=5 style=drop start=5 end=9 outcome=error:SessionExpired",
            "WRITE who=rust-1.multilock.0 n=2 reg=multilock-1 read=41 sent=30 replied=31 result=ok:42",
            "WRITE who=java-1.mutex.0 n=2 reg=mutex read=41 sent=30 replied=31 result=badversion",
            "WRITE who=rust-1.mutex.0 n=9 reg=mutex read=7 sent=30 replied=31 result=fenced",
            "LOST who=rust-1.mutex.0 n=12 at=25",
            "SESSION who=java-1.mutex.0 id=0x30000b424a40007 at=3",
        ];
        for line in lines {
            let event = Event::parse(line).unwrap();
            assert_eq!(event.to_string(), line);
        }
        let who = Who::parse("java-0.semaphore-mutex.1").unwrap();
        assert_eq!(who.recipe, Recipe::SemaphoreMutex);
        assert_eq!(who.process_name(), "java-0");
        assert_eq!(who.to_string(), "java-0.semaphore-mutex.1");
    }

    #[test]
    fn bad_lines_say_what_is_wrong() {
        for (line, says) in [
            (
                "ACQ who=rust-1.mutex.0 n=1 style=fast start=1 end=2 outcome=held",
                "style",
            ),
            (
                "WRITE who=rust-1.mutex.0 n=1 reg=m read=1 sent=1 replied=2 result=maybe",
                "result",
            ),
            ("LOST who=rust-1 n=1 at=2", "chaos client"),
            ("NOPE x=1", "not a chaos history line"),
        ] {
            let err = Event::parse(line).unwrap_err();
            assert!(err.contains(says), "{err}");
        }
    }
}
