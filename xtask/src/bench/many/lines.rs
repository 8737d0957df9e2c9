//! The lines between `bench many` and its workers (ours, `zk-worker many`, and Curator's,
//! `java/CuratorMany.java`, print the same ones), written and parsed here, with no IO.
//!
//! ```text
//! READY rss_kib=<KiB> heap_kib=<KiB> threads=<n>                      worker: set up, nothing taken yet
//! GO                                                                   bench: take them all
//! ACQUIRED ns=<ns> held=<n> rss_kib=<KiB> heap_kib=<KiB> threads=<n>   worker: every lock held
//! RELEASE                                                              bench: release them all
//! RELEASED ns=<ns> rss_kib=<KiB> heap_kib=<KiB>                        worker: every lock released
//! CLOSE                                                                bench: close the sessions and exit
//! ```
//!
//! `ns` is the worker's own monotonic time from the bench's line to the last lock taken (or
//! released); the resident set (`VmRSS`) and the thread count (`Threads:`) are read from
//! `/proc/self/status` at that moment. `heap_kib` is the live heap then: ours, the bytes
//! allocated and not freed (the worker's counting allocator, `count_alloc::live`); Curator's,
//! the JVM's heap in use after a full collection (`System.gc()`). Unlike the resident set,
//! neither keeps what a burst of acquires used and gave back, so the growth of the live heap
//! is what the held locks themselves keep.

use std::fmt;

use crate::line::Fields;

/// A line the bench sends a `many` worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// `GO`: take every lock.
    Go,
    /// `RELEASE`: release every lock.
    Release,
    /// `CLOSE`: close the sessions and exit.
    Close,
}

impl Step {
    /// The step on `line` (trailing space ignored); none for any other line.
    pub fn parse(line: &str) -> Option<Step> {
        match line.trim_end() {
            "GO" => Some(Step::Go),
            "RELEASE" => Some(Step::Release),
            "CLOSE" => Some(Step::Close),
            _ => None,
        }
    }

    /// The line's text.
    pub fn line(self) -> &'static str {
        match self {
            Step::Go => "GO",
            Step::Release => "RELEASE",
            Step::Close => "CLOSE",
        }
    }
}

/// `READY`: the worker before its first lock (the locks shape: its one session connected;
/// the sessions shape: no session yet).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Ready {
    /// The resident set, in KiB.
    pub rss_kib: u64,
    /// The live heap, in KiB.
    pub heap_kib: u64,
    /// The process's threads.
    pub threads: u64,
}

impl Ready {
    /// Parses a `READY` line.
    ///
    /// # Errors
    /// Another line, or a field missing, unknown or not a whole number.
    pub fn parse(line: &str) -> Result<Ready, String> {
        let f = Fields::parse(line, "READY")?.only(&["rss_kib", "heap_kib", "threads"])?;
        Ok(Ready {
            rss_kib: f.number("rss_kib")?,
            heap_kib: f.number("heap_kib")?,
            threads: f.number("threads")?,
        })
    }
}

impl fmt::Display for Ready {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "READY rss_kib={} heap_kib={} threads={}",
            self.rss_kib, self.heap_kib, self.threads
        )
    }
}

/// `ACQUIRED`: every lock held, how long that took, and the worker's memory and threads then.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Acquired {
    /// From `GO` to the last `lock()`/`acquire()` returning, in ns.
    pub ns: u64,
    /// Locks held.
    pub held: u64,
    /// The resident set with every lock held, in KiB.
    pub rss_kib: u64,
    /// The live heap with every lock held, in KiB.
    pub heap_kib: u64,
    /// The process's threads with every lock held.
    pub threads: u64,
}

impl Acquired {
    /// Parses an `ACQUIRED` line.
    ///
    /// # Errors
    /// Another line, or a field missing, unknown or not a whole number.
    pub fn parse(line: &str) -> Result<Acquired, String> {
        let f = Fields::parse(line, "ACQUIRED")?
            .only(&["ns", "held", "rss_kib", "heap_kib", "threads"])?;
        Ok(Acquired {
            ns: f.number("ns")?,
            held: f.number("held")?,
            rss_kib: f.number("rss_kib")?,
            heap_kib: f.number("heap_kib")?,
            threads: f.number("threads")?,
        })
    }
}

impl fmt::Display for Acquired {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ACQUIRED ns={} held={} rss_kib={} heap_kib={} threads={}",
            self.ns, self.held, self.rss_kib, self.heap_kib, self.threads
        )
    }
}

/// `RELEASED`: every lock released, how long that took, and the resident set then (what
/// the process kept of its growth once nothing is held, sessions still open).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Released {
    /// From `RELEASE` to the last release returning, in ns.
    pub ns: u64,
    /// The resident set with every lock released, in KiB.
    pub rss_kib: u64,
    /// The live heap with every lock released, in KiB.
    pub heap_kib: u64,
}

impl Released {
    /// Parses a `RELEASED` line.
    ///
    /// # Errors
    /// Another line, or a field missing, unknown or not a whole number.
    pub fn parse(line: &str) -> Result<Released, String> {
        let f = Fields::parse(line, "RELEASED")?.only(&["ns", "rss_kib", "heap_kib"])?;
        Ok(Released {
            ns: f.number("ns")?,
            rss_kib: f.number("rss_kib")?,
            heap_kib: f.number("heap_kib")?,
        })
    }
}

impl fmt::Display for Released {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "RELEASED ns={} rss_kib={} heap_kib={}",
            self.ns, self.rss_kib, self.heap_kib
        )
    }
}

/// `Threads:` from the text of a `/proc/<pid>/status` file (`VmRSS` is
/// [`crate::bench::queue::lines::parse_rss_kib`]).
pub fn parse_threads(status: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|line| line.strip_prefix("Threads:"))
        .and_then(|rest| rest.split_ascii_whitespace().next())
        .and_then(|n| n.parse().ok())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn lines_round_trip_and_bad_ones_are_refused() {
        let r = Ready {
            rss_kib: 4000,
            heap_kib: 900,
            threads: 2,
        };
        assert_eq!(Ready::parse(&r.to_string()), Ok(r));
        let a = Acquired {
            ns: 1_234_567,
            held: 1000,
            rss_kib: 9000,
            heap_kib: 1900,
            threads: 2,
        };
        assert_eq!(Acquired::parse(&a.to_string()), Ok(a));
        let d = Released {
            ns: 42,
            rss_kib: 5000,
            heap_kib: 1000,
        };
        assert_eq!(Released::parse(&d.to_string()), Ok(d));
        assert!(Ready::parse("READY rss_kib=1").is_err());
        assert!(
            Ready::parse("READY rss_kib=1 threads=2").is_err(),
            "no heap"
        );
        assert!(Ready::parse("READY rss_kib=1 heap_kib=1 threads=2 x=3").is_err());
        assert!(Acquired::parse("ACQUIRED ns=-1 held=1 rss_kib=1 threads=1").is_err());
        assert!(Released::parse("RELEASE ns=1").is_err());
    }

    #[test]
    fn steps_are_whole_lines() {
        for step in [Step::Go, Step::Release, Step::Close] {
            assert_eq!(Step::parse(step.line()), Some(step));
        }
        assert_eq!(Step::parse("GO\n"), Some(Step::Go));
        assert_eq!(Step::parse("GO 123"), None);
        assert_eq!(Step::parse("released"), None);
    }

    #[test]
    fn threads_are_read_from_status() {
        let status = "Name:\tzk\nVmRSS:\t 4000 kB\nThreads:\t17\n";
        assert_eq!(parse_threads(status), Some(17));
        assert_eq!(parse_threads("Name:\tzk\n"), None);
    }
}
