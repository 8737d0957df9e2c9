//! A post-mortem auditor for ZooKeeper locks in Apache Curator's layout (ours and Curator's
//! alike): given a server's data directory, it reads the snapshot and the transaction logs
//! and answers, for every lock, "who held it when, how long did each waiter wait, how did
//! each hold end, and how long until the next holder": the queue over time; each grant (the
//! zxid and time its node became first by the recipe's rule); each end (released by its own
//! session, deleted by another session: which, or ended by its session's expiry or close);
//! the time from a hold's end to the next grant; nodes left behind, strays and empty
//! containers; overlaps, gaps and lost history in the record. Several members' directories
//! are merged by zxid, keeping only what the ensemble committed: a transaction logged by
//! fewer than a majority of its members (a dead leader's last proposals, kept in a re-synced
//! member's old log) is left out and reported, one the logs given cannot confirm (members'
//! older logs purged, or not given) is applied and reported, and with one member's directory
//! (or fewer than a majority) every transaction is applied and the report says the rule was
//! not ([`commit`]). Output: a timeline, a summary table, JSON. The binary `zk-lock-audit` is
//! the front end.
//!
//! It is **not** a monitor: it reads files a server wrote (copy them off a live server, or
//! point it at a stopped one's `dataDir`), does not connect to ZooKeeper, and knows only what
//! the servers logged: a client's belief that it holds a lock after its session expired is
//! invisible here (the record shows the expiry and the next grant; the gap between them is
//! when two clients may both have believed they held it). The grant rules are recipes-core's
//! (the chaos suite's judge keeps its own, independent one).
//!
//! Layers: [`replay`] is the pure reconstruction (a starting tree and transactions in, a
//! [`replay::History`] out; no IO, unit-tested without a server); [`commit`] the pure
//! commit rule and the merge of members' logs by it; [`datadir`] finds and
//! streams a data directory's files into it (the logs one record at a time, so memory is the
//! tree's and the events kept, not the logs': with a time range only the range's events are
//! kept, [`replay::Audit::keep_only`]); [`report`] and [`json`] print the history.
//!
//! # Examples
//!
//! ```no_run
//! use zk_lock_audit::datadir::{Start, read_into};
//! use zk_lock_audit::replay::Audit;
//! use zk_lock_audit::report::{Range, table};
//!
//! let mut audit = Audit::new(vec!["/app/locks".into()]);
//! read_into("/var/lib/zookeeper".as_ref(), Start::Oldest, &mut audit)?;
//! print!("{}", table(&audit.finish(), Range::default()));
//! # Ok::<(), zk_lock_audit::Error>(())
//! ```

use std::path::PathBuf;

pub mod args;
pub mod commit;
pub mod datadir;
pub mod json;
pub mod replay;
pub mod report;
pub mod time;

/// Why the auditor cannot read what it was given.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file or directory cannot be read.
    #[error("{}: {message}", path.display())]
    Io {
        /// Which.
        path: PathBuf,
        /// The system's reason.
        message: String,
    },
    /// The directory holds no `snapshot.*` or `log.*` file: not a ZooKeeper `dataDir` (or
    /// `dataLogDir`).
    #[error("{}: no snapshot.* or log.* files (is this the server's dataDir?)", path.display())]
    NoData {
        /// The directory looked in.
        path: PathBuf,
    },
    /// A snapshot is malformed: the error says where (for a compressed one, where in the
    /// decompressed bytes and where in the file).
    #[error("snapshot {}: {source}", path.display())]
    Snapshot {
        /// The file.
        path: PathBuf,
        /// What is wrong and where.
        source: zk_proto::snapshot::SnapshotError,
    },
    /// A transaction log is malformed: the error says where.
    #[error("log {}: {source}", path.display())]
    Log {
        /// The file.
        path: PathBuf,
        /// What is wrong and where.
        source: zk_proto::txnlog::TxnLogError,
    },
    /// The command line is wrong: the message says how.
    #[error("{0}")]
    Usage(String),
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests;
