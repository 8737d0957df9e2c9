//! The lines between `bench queue` and its workers (ours, `zk-worker queue`, and Curator's,
//! `CuratorWorker queue`, print the same ones), written and parsed here, with no IO.
//!
//! ```text
//! QUEUED waiters=<started> nodes=<this session's lock nodes> rss_before_kib=<KiB> rss_kib=<KiB>
//! HOLDS <acquired ns>:<released ns> <acquired ns>:<released ns> ...   (up to HOLDS_PER_LINE)
//! RESULT drained=<holds> drain_ns=<ns> p50_ns=<ns> p99_ns=<ns> rss_before_kib=<KiB> rss_queued_kib=<KiB>
//! ```
//!
//! and one line the other way, `GO <released ns>`: the bench's holder released at that time.
//! Times are `CLOCK_REALTIME` in ns since the Unix epoch (Rust's `SystemTime`, Java's
//! `Instant.now()`), the one clock every process on the machine shares, so that holds from
//! several processes can be put in one order.

use std::fmt;

use crate::line::Fields;

/// How many holds one `HOLDS` line carries.
pub const HOLDS_PER_LINE: usize = 200;

/// `QUEUED`: every waiter of the worker has its lock node, and the worker's memory then.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Queued {
    /// Waiters started (fewer than asked when Curator's JVM could not start more threads).
    pub waiters: u64,
    /// The session's ephemeral nodes under the lock path when it printed the line.
    pub nodes: u64,
    /// The resident set (`VmRSS`) once connected, before the first waiter started, in KiB.
    pub rss_before_kib: u64,
    /// The resident set with every waiter queued, in KiB.
    pub rss_kib: u64,
}

impl Queued {
    /// Parses a `QUEUED` line.
    ///
    /// # Errors
    /// Another line, or a field missing, unknown or not a whole number.
    pub fn parse(line: &str) -> Result<Queued, String> {
        let f = Fields::parse(line, "QUEUED")?.only(&[
            "waiters",
            "nodes",
            "rss_before_kib",
            "rss_kib",
        ])?;
        Ok(Queued {
            waiters: f.number("waiters")?,
            nodes: f.number("nodes")?,
            rss_before_kib: f.number("rss_before_kib")?,
            rss_kib: f.number("rss_kib")?,
        })
    }

    /// What the waiters added to the resident set, in KiB (none if it shrank).
    pub fn growth_kib(&self) -> u64 {
        self.rss_kib.saturating_sub(self.rss_before_kib)
    }
}

impl fmt::Display for Queued {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "QUEUED waiters={} nodes={} rss_before_kib={} rss_kib={}",
            self.waiters, self.nodes, self.rss_before_kib, self.rss_kib
        )
    }
}

/// One waiter's hold: when its `lock()` returned and when it called release (right after).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Hold {
    /// `lock()` returned (ns since the epoch).
    pub acquired_ns: u64,
    /// Release called (ns since the epoch).
    pub released_ns: u64,
}

/// The `HOLDS` lines of `holds`, [`HOLDS_PER_LINE`] to a line.
pub fn holds_lines(holds: &[Hold]) -> Vec<String> {
    holds
        .chunks(HOLDS_PER_LINE)
        .map(|chunk| {
            let mut line = String::from("HOLDS");
            for h in chunk {
                line.push_str(&format!(" {}:{}", h.acquired_ns, h.released_ns));
            }
            line
        })
        .collect()
}

/// The holds of one `HOLDS` line.
///
/// # Errors
/// Another line, or a hold that is not `<ns>:<ns>` with the release not before the acquire.
pub fn parse_holds(line: &str) -> Result<Vec<Hold>, String> {
    let rest = line
        .strip_prefix("HOLDS")
        .filter(|rest| rest.is_empty() || rest.starts_with(' '))
        .ok_or_else(|| format!("not a HOLDS line: {line:?}"))?;
    rest.split_ascii_whitespace()
        .map(|pair| {
            let bad = || format!("`{pair}` is not <acquired ns>:<released ns> in a HOLDS line");
            let (a, r) = pair.split_once(':').ok_or_else(bad)?;
            let hold = Hold {
                acquired_ns: a.parse().map_err(|_| bad())?,
                released_ns: r.parse().map_err(|_| bad())?,
            };
            if hold.released_ns < hold.acquired_ns {
                return Err(format!("`{pair}`: released before acquired"));
            }
            Ok(hold)
        })
        .collect()
}

/// A worker's `RESULT`: its own holds, with the hand-offs seen from inside it (each hold's
/// acquire after the release before it in this process, the first after the bench's).
/// With one process these are every hand-off; with several, the bench merges the `HOLDS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QueueResult {
    /// Holds taken and released.
    pub drained: u64,
    /// From the bench's release (`GO`) to this process's last release call, in ns.
    pub drain_ns: u64,
    /// Median hand-off, in ns.
    pub p50_ns: u64,
    /// 99th percentile hand-off, in ns.
    pub p99_ns: u64,
    /// As in [`Queued`].
    pub rss_before_kib: u64,
    /// [`Queued::rss_kib`].
    pub rss_queued_kib: u64,
}

impl QueueResult {
    /// Parses a `RESULT` line of a queue worker.
    ///
    /// # Errors
    /// Another line, or a field missing, unknown or not a whole number.
    pub fn parse(line: &str) -> Result<QueueResult, String> {
        let f = Fields::parse(line, "RESULT")?.only(&[
            "drained",
            "drain_ns",
            "p50_ns",
            "p99_ns",
            "rss_before_kib",
            "rss_queued_kib",
        ])?;
        Ok(QueueResult {
            drained: f.number("drained")?,
            drain_ns: f.number("drain_ns")?,
            p50_ns: f.number("p50_ns")?,
            p99_ns: f.number("p99_ns")?,
            rss_before_kib: f.number("rss_before_kib")?,
            rss_queued_kib: f.number("rss_queued_kib")?,
        })
    }
}

impl fmt::Display for QueueResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "RESULT drained={} drain_ns={} p50_ns={} p99_ns={} rss_before_kib={} rss_queued_kib={}",
            self.drained,
            self.drain_ns,
            self.p50_ns,
            self.p99_ns,
            self.rss_before_kib,
            self.rss_queued_kib
        )
    }
}

/// The time in a `GO <released ns>` line.
///
/// # Errors
/// Another line, or no whole number after `GO`.
pub fn parse_go(line: &str) -> Result<u64, String> {
    line.trim_end()
        .strip_prefix("GO ")
        .and_then(|ns| ns.trim().parse().ok())
        .ok_or_else(|| format!("not a `GO <released ns>` line: {line:?}"))
}

/// `VmRSS` in KiB from the text of a `/proc/<pid>/status` file: the resident set now (not its
/// peak, `VmHWM`, which [`crate::bench::procfs`] reads).
pub fn parse_rss_kib(status: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_ascii_whitespace().next())
        .and_then(|kib| kib.parse().ok())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn queued_and_result_lines_round_trip() {
        let q = Queued {
            waiters: 20,
            nodes: 20,
            rss_before_kib: 4000,
            rss_kib: 4100,
        };
        assert_eq!(Queued::parse(&q.to_string()), Ok(q));
        assert_eq!(q.growth_kib(), 100);
        let shrunk = Queued { rss_kib: 3000, ..q };
        assert_eq!(shrunk.growth_kib(), 0);
        assert!(Queued::parse("QUEUED waiters=1 nodes=1 rss_before_kib=1").is_err());
        assert!(Queued::parse("QUEUED waiters=1 nodes=1 rss_before_kib=1 rss_kib=2 x=1").is_err());
        let r = QueueResult {
            drained: 20,
            drain_ns: 5,
            p50_ns: 1,
            p99_ns: 2,
            rss_before_kib: 3,
            rss_queued_kib: 4,
        };
        assert_eq!(QueueResult::parse(&r.to_string()), Ok(r));
        assert!(QueueResult::parse("RESULT ops=1").is_err());
    }

    #[test]
    fn holds_travel_in_chunks_and_bad_ones_are_refused() {
        let holds: Vec<Hold> = (0..450)
            .map(|i| Hold {
                acquired_ns: 1_000 + i,
                released_ns: 1_000 + i + 7,
            })
            .collect();
        let lines = holds_lines(&holds);
        assert_eq!(lines.len(), 3);
        let back: Vec<Hold> = lines.iter().flat_map(|l| parse_holds(l).unwrap()).collect();
        assert_eq!(back, holds);
        assert_eq!(parse_holds("HOLDS"), Ok(vec![]));
        assert!(parse_holds("HOLDSX 1:2").is_err());
        assert!(parse_holds("HOLDS 1-2").is_err());
        assert!(parse_holds("HOLDS 1:x").is_err());
        assert!(parse_holds("HOLDS 5:4").unwrap_err().contains("before"));
    }

    #[test]
    fn go_carries_the_release_time() {
        assert_eq!(
            parse_go("GO 1700000000000000000\n"),
            Ok(1_700_000_000_000_000_000)
        );
        assert!(parse_go("GO").is_err());
        assert!(parse_go("GO -1").is_err());
        assert!(parse_go("STOP 1").is_err());
    }

    #[test]
    fn rss_is_read_from_vmrss() {
        let status = "Name:\tzk\nVmHWM:\t    5120 kB\nVmRSS:\t 4000 kB\n";
        assert_eq!(parse_rss_kib(status), Some(4000));
        assert_eq!(parse_rss_kib("Name:\tzk\n"), None);
    }
}
