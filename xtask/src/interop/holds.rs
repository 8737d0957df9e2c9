//! The events both sides record: one [`Hold`] per lock, lease or member held, with the times
//! it began and ended on a clock both processes share ([`Clock`]), written by each client to
//! a file of its own in the run's directory and read back by the harness ([`read_holds`]).
//!
//! A hold's line (Rust, Java alike; [`crate::line::Fields`] parses it):
//!
//! ```text
//! HOLD who=java-0 n=12 on=lock mode=x from=1795528847673647751 to=1795528847675647751 node=_c_...-lock-0000000012 token=-
//! ```
//!
//! `who` is the client (`java-<i>`, `rust-<i>`), `n` its acquisition count (a semaphore's
//! two-lease acquisition is two holds with the same `n`), `on` what is held (`lock`,
//! `member-<k>` for the multi-lock's members, `leases`), `mode` one of [`Mode`]'s, `from` and
//! `to` nanoseconds since the Unix epoch, `node` the lock node's name (`-` when the worker
//! cannot see it) and `token` our fencing token (`-` for Curator). `from` is read after the
//! acquire returned and `to` before the release is called, so a recorded hold lies inside
//! the real one: two recorded holds that overlap were really held together.

use std::fmt;
use std::fs;
use std::io::Write;
use std::path::Path;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use crate::line::Fields;

/// How a hold holds what it holds; which modes may be held together is the recipe's
/// [`Rule`](super::check::Rule).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `x`: alone (a mutex, a multi-lock member).
    Exclusive,
    /// `r`: the read lock.
    Read,
    /// `w`: the write lock.
    Write,
    /// `lease`: one lease of a semaphore.
    Lease,
}

impl Mode {
    fn as_str(self) -> &'static str {
        match self {
            Mode::Exclusive => "x",
            Mode::Read => "r",
            Mode::Write => "w",
            Mode::Lease => "lease",
        }
    }

    fn parse(s: &str) -> Option<Mode> {
        [Mode::Exclusive, Mode::Read, Mode::Write, Mode::Lease]
            .into_iter()
            .find(|m| m.as_str() == s)
    }
}

/// One hold, as a client recorded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hold {
    /// The client: `java-<i>` or `rust-<i>`.
    pub who: String,
    /// The client's acquisition count, from 1.
    pub n: u64,
    /// What is held: `lock`, `member-<k>`, `leases`.
    pub on: String,
    /// How.
    pub mode: Mode,
    /// When it began (after the acquire returned), ns since the Unix epoch.
    pub from: u64,
    /// When it ended (before the release was called).
    pub to: u64,
    /// The lock node's name, if the worker knows it.
    pub node: Option<String>,
    /// Our fencing token (none for Curator's side).
    pub token: Option<i64>,
}

impl Hold {
    /// The side: `java` or `rust` (what `who` starts with).
    pub fn side(&self) -> &str {
        self.who.split('-').next().unwrap_or(&self.who)
    }

    /// Whether the side is Curator's.
    pub fn is_java(&self) -> bool {
        self.side() == "java"
    }

    /// Parses a `HOLD` line.
    ///
    /// # Errors
    /// Not a `HOLD` line, a field missing or unknown, a bad mode or number, or `to` before
    /// `from`.
    pub fn parse(line: &str) -> Result<Hold, String> {
        let f = Fields::parse(line, "HOLD")?
            .only(&["who", "n", "on", "mode", "from", "to", "node", "token"])?;
        let mode = f.text("mode")?;
        let hold = Hold {
            who: f.text("who")?.to_owned(),
            n: f.number("n")?,
            on: f.text("on")?.to_owned(),
            mode: Mode::parse(mode).ok_or_else(|| format!("unknown mode `{mode}` in {line:?}"))?,
            from: f.number("from")?,
            to: f.number("to")?,
            node: Some(f.text("node")?)
                .filter(|n| *n != "-")
                .map(str::to_owned),
            token: match f.text("token")? {
                "-" => None,
                t => Some(
                    t.parse()
                        .map_err(|_| format!("`token={t}` is not a number in {line:?}"))?,
                ),
            },
        };
        if hold.to < hold.from {
            return Err(format!("a hold that ends before it begins: {line:?}"));
        }
        Ok(hold)
    }
}

impl fmt::Display for Hold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "HOLD who={} n={} on={} mode={} from={} to={} node={} token=",
            self.who,
            self.n,
            self.on,
            self.mode.as_str(),
            self.from,
            self.to,
            self.node.as_deref().unwrap_or("-"),
        )?;
        match self.token {
            Some(t) => write!(f, "{t}"),
            None => f.write_str("-"),
        }
    }
}

/// The clock holds are stamped with: the wall clock read once, when the side starts, and the
/// monotonic clock's progress since added to it. Both processes' monotonic clocks are the
/// kernel's one `CLOCK_MONOTONIC` (Rust's `Instant`, Java's `System.nanoTime`), so their
/// stamps differ only by the error of each side's anchor, and a step of the wall clock during
/// the run moves neither. The anchor is the wall-clock reading taken between two monotonic
/// ones, the tightest pair of [`ANCHOR_TRIES`]: a thread preempted between its readings
/// (milliseconds on a busy machine) would shift every stamp of its side, and a hand-off
/// between the sides would look like an overlap. (The Java worker does the same with
/// `Instant.now()` and `System.nanoTime()`.)
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    wall: u64,
    mono: Instant,
}

/// How many (monotonic, wall, monotonic) readings [`Clock::start`] takes.
pub const ANCHOR_TRIES: usize = 20;

impl Clock {
    /// Anchors the clock.
    pub fn start() -> Clock {
        let mut best: Option<(std::time::Duration, Clock)> = None;
        for _ in 0..ANCHOR_TRIES {
            let before = Instant::now();
            let wall = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
            let after = Instant::now();
            let gap = after - before;
            if best.is_none_or(|(g, _)| gap < g) {
                best = Some((
                    gap,
                    Clock {
                        wall,
                        mono: before + gap / 2,
                    },
                ));
            }
        }
        best.map_or_else(
            || Clock {
                wall: 0,
                mono: Instant::now(),
            },
            |(_, clock)| clock,
        )
    }

    /// Nanoseconds since the Unix epoch.
    pub fn now(&self) -> u64 {
        let since = u64::try_from(self.mono.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.wall.saturating_add(since)
    }
}

/// Writes one client's holds to `<dir>/holds-<who>`, one line each.
///
/// # Errors
/// The file cannot be written.
pub fn write_holds(dir: &Path, who: &str, holds: &[Hold]) -> std::io::Result<()> {
    let mut text = String::new();
    for hold in holds {
        text.push_str(&hold.to_string());
        text.push('\n');
    }
    fs::File::create(dir.join(format!("holds-{who}")))?.write_all(text.as_bytes())
}

/// Reads every `holds-*` file in `dir`.
///
/// # Errors
/// A file that cannot be read or a line that is not a [`Hold`].
pub fn read_holds(dir: &Path) -> Result<Vec<Hold>, String> {
    let entries = fs::read_dir(dir).map_err(|e| format!("reading {}: {e}", dir.display()))?;
    let mut holds = Vec::new();
    for entry in entries {
        let path = entry
            .map_err(|e| format!("reading {}: {e}", dir.display()))?
            .path();
        let is_holds = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("holds-"));
        if !is_holds {
            continue;
        }
        let text =
            fs::read_to_string(&path).map_err(|e| format!("reading {}: {e}", path.display()))?;
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            holds.push(Hold::parse(line).map_err(|e| format!("{}: {e}", path.display()))?);
        }
    }
    Ok(holds)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_hold_round_trips_through_its_line() {
        let hold = Hold {
            who: "rust-1".into(),
            n: 7,
            on: "member-2".into(),
            mode: Mode::Exclusive,
            from: 10,
            to: 20,
            node: Some("_c_x-lock-0000000003".into()),
            token: Some(42),
        };
        assert_eq!(Hold::parse(&hold.to_string()), Ok(hold.clone()));
        let curator = Hold {
            who: "java-0".into(),
            node: None,
            token: None,
            mode: Mode::Lease,
            ..hold
        };
        assert_eq!(Hold::parse(&curator.to_string()), Ok(curator.clone()));
        assert!(curator.is_java());
    }

    #[test]
    fn bad_lines_are_refused() {
        let ok = "HOLD who=a-0 n=1 on=lock mode=x from=1 to=2 node=- token=-";
        assert!(Hold::parse(ok).is_ok());
        for bad in [
            "HOLD who=a-0 n=1 on=lock mode=q from=1 to=2 node=- token=-",
            "HOLD who=a-0 n=1 on=lock mode=x from=3 to=2 node=- token=-",
            "HOLD who=a-0 n=1 on=lock mode=x from=1 to=2 node=- token=z",
            "HOLD who=a-0 n=1 on=lock mode=x from=1 to=2 node=-",
            "HOLD who=a-0 n=1 on=lock mode=x from=1 to=2 node=- token=- extra=1",
            "HOLDS who=a-0",
        ] {
            assert!(Hold::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_clock_moves_forward_from_the_wall_clock() {
        let clock = Clock::start();
        let (a, b) = (clock.now(), clock.now());
        assert!(b >= a);
        // 2020-01-01 in ns: the stamps are wall-clock times.
        assert!(a > 1_577_836_800_000_000_000);
    }
}
