//! Servers' data directories read into an [`Audit`]: the oldest (or newest) snapshot, then
//! every transaction log after it, both streamed, one member's or several members' merged by
//! zxid (only the transactions a majority logged, [`crate::commit`]). A snapshot compressed by
//! the server (`zookeeper.snapshot.compression.method` `gz` or `snappy`) is decompressed as it
//! is read.

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::time::Instant;

use zk_proto::snapshot::{Compression, Decompressed, SnapshotStream};
use zk_proto::txnlog::{TxnEntry, TxnLogStream};

use crate::Error;
use crate::commit::{MemberStream, merge};
use crate::replay::{Audit, Stamp};

/// The files of one data directory (`<dir>/version-2`, or `<dir>` itself if it holds them),
/// each with the zxid in its name.
#[derive(Debug, Clone, Default)]
pub struct DataFiles {
    /// `snapshot.<zxid>` files, and those compressed as ZooKeeper does
    /// (`snapshot.<zxid>.gz`, `.snappy`: [`compression`]), oldest first.
    pub snapshots: Vec<(i64, PathBuf)>,
    /// `snapshot.<zxid>.<suffix>` files of a compression method this reader does not know,
    /// which are not read.
    pub unknown_method: Vec<PathBuf>,
    /// `log.<zxid>` files (the zxid of their first transaction), oldest first.
    pub logs: Vec<(i64, PathBuf)>,
}

/// Which snapshot to start from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Start {
    /// The oldest kept: the longest history.
    #[default]
    Oldest,
    /// The newest: the least to read.
    Newest,
    /// No snapshot: the logs alone (history before the first log is unknown).
    LogsOnly,
}

/// Lists the snapshots and logs under `dir`.
///
/// # Errors
/// [`Error::Io`] if the directory cannot be read; [`Error::NoData`] if it holds neither.
pub fn list(dir: &Path) -> Result<DataFiles, Error> {
    let version2 = dir.join("version-2");
    let dir = if version2.is_dir() {
        version2
    } else {
        dir.to_owned()
    };
    let io = |e: std::io::Error| Error::Io {
        path: dir.clone(),
        message: e.to_string(),
    };
    let mut files = DataFiles::default();
    for entry in std::fs::read_dir(&dir).map_err(io)? {
        let path = entry.map_err(io)?.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let zxid = |rest: &str| i64::from_str_radix(rest, 16).ok();
        if let Some(z) = name.strip_prefix("snapshot.") {
            let (z, suffix) = match z.split_once('.') {
                Some((z, suffix)) => (z, Some(suffix)),
                None => (z, None),
            };
            match (zxid(z), suffix.map(Compression::from_suffix)) {
                (Some(z), None | Some(Some(_))) => files.snapshots.push((z, path.clone())),
                (Some(_), Some(None)) => files.unknown_method.push(path.clone()),
                (None, _) => {}
            }
        } else if let Some(z) = name.strip_prefix("log.").and_then(zxid) {
            files.logs.push((z, path.clone()));
        }
    }
    if files.snapshots.is_empty() && files.logs.is_empty() && files.unknown_method.is_empty() {
        return Err(Error::NoData { path: dir });
    }
    files.snapshots.sort();
    files.logs.sort();
    files.unknown_method.sort();
    Ok(files)
}

/// How the snapshot at `path` is compressed, from its name: `None` for `snapshot.<zxid>`,
/// as ZooKeeper's `SnapStream` reads the suffix.
pub fn compression(path: &Path) -> Option<Compression> {
    let name = path.file_name()?.to_str()?;
    let (_, suffix) = name.strip_prefix("snapshot.")?.split_once('.')?;
    Compression::from_suffix(suffix)
}

/// What reading a data directory cost.
#[derive(Debug, Clone, Default)]
pub struct ReadStats {
    /// The snapshot read, if any.
    pub snapshot: Option<PathBuf>,
    /// The logs read.
    pub logs: Vec<PathBuf>,
    /// Transactions read from the logs (applied or skipped as older than the snapshot).
    pub txns: u64,
    /// Seconds spent.
    pub seconds: f64,
    /// A torn last record (a write cut by a crash, which ZooKeeper takes for the log's end).
    pub torn_tail: Option<String>,
    /// Records of transactions a member had logged already, dropped: one identical to the
    /// record before it, or one below it (the member's records starting again lower). A
    /// ZooKeeper follower rejoining its ensemble logs transactions again so; each is read
    /// once.
    pub repeated: u64,
    /// Snapshots of a compression method this reader does not know
    /// ([`DataFiles::unknown_method`]), passed over: the history starts at another one, or
    /// at the first log.
    pub unknown_method: Vec<PathBuf>,
}

/// Reads `dir`'s snapshot (as `start` says) and its logs after it into `audit`, then starts
/// and feeds it; returns what it read. [`read_members`] with one member.
///
/// # Errors
/// As [`read_members`].
pub fn read_into(dir: &Path, start: Start, audit: &mut Audit) -> Result<ReadStats, Error> {
    read_members(&[dir.to_owned()], start, audit)
}

/// One member's transactions after `from`, its logs one after the other, streamed.
struct MemberLog {
    /// The zxid its oldest log file starts at (whether read or not).
    oldest: Option<i64>,
    logs: std::vec::IntoIter<PathBuf>,
    current: Option<(PathBuf, TxnLogStream<BufReader<File>>)>,
    from: Option<i64>,
    read: Vec<PathBuf>,
    txns: u64,
    torn_tail: Option<String>,
    /// The next transaction, read ahead to see whether it repeats the one returned.
    ahead: Option<TxnEntry>,
    /// Records dropped as transactions logged again ([`MemberLog::next_entry`]).
    repeated: u64,
}

impl MemberStream for MemberLog {
    type Error = Error;

    fn oldest(&self) -> Option<i64> {
        self.oldest
    }

    fn next_entry(&mut self) -> Result<Option<TxnEntry>, Error> {
        MemberLog::next_entry(self)
    }
}

impl MemberLog {
    fn new(files: &DataFiles, from: Option<i64>) -> Self {
        // The last log starting at or before the first zxid wanted, and every later one.
        let first = match from {
            Some(z) => files
                .logs
                .iter()
                .rposition(|(s, _)| *s <= z + 1)
                .unwrap_or(0),
            None => 0,
        };
        let logs: Vec<PathBuf> = files
            .logs
            .get(first..)
            .unwrap_or_default()
            .iter()
            .map(|(_, p)| p.clone())
            .collect();
        MemberLog {
            oldest: files.logs.first().map(|(z, _)| *z),
            logs: logs.into_iter(),
            current: None,
            from,
            read: Vec::new(),
            txns: 0,
            torn_tail: None,
            ahead: None,
            repeated: 0,
        }
    }

    /// The next transaction after `from`, or `None` at the end of the last log. A transaction
    /// the member logged again is read once, at its first record: a record identical to the
    /// one before, or one below it (the member's records start again lower, further on in a
    /// file or in a later file). A ZooKeeper follower rejoining an ensemble does both (the new
    /// epoch's first proposal twice in a row; the transactions its leader sent it logged, then
    /// logged again from the first). A record that differs at the same zxid is returned, for
    /// [`Audit::apply`] to skip and note.
    fn next_entry(&mut self) -> Result<Option<TxnEntry>, Error> {
        let entry = match self.ahead.take() {
            Some(e) => e,
            None => match self.next_record()? {
                Some(e) => e,
                None => return Ok(None),
            },
        };
        loop {
            match self.next_record()? {
                Some(next)
                    if next.header.zxid < entry.header.zxid
                        || (next.header == entry.header && next.body == entry.body) =>
                {
                    self.repeated += 1;
                }
                next => {
                    self.ahead = next;
                    return Ok(Some(entry));
                }
            }
        }
    }

    /// The next record after `from`, as the logs hold it.
    fn next_record(&mut self) -> Result<Option<TxnEntry>, Error> {
        loop {
            if self.current.is_none() {
                let Some(path) = self.logs.next() else {
                    return Ok(None);
                };
                let file = File::open(&path).map_err(|e| Error::Io {
                    path: path.clone(),
                    message: e.to_string(),
                })?;
                let stream = TxnLogStream::new(BufReader::with_capacity(1 << 16, file)).map_err(
                    |source| Error::Log {
                        path: path.clone(),
                        source,
                    },
                )?;
                self.read.push(path.clone());
                self.current = Some((path, stream));
            }
            let Some((path, stream)) = self.current.as_mut() else {
                continue;
            };
            match stream.next() {
                Some(Ok(e)) => {
                    self.txns += 1;
                    if self.from.is_some_and(|z| e.header.zxid <= z) {
                        continue;
                    }
                    return Ok(Some(e));
                }
                // Java takes a torn last record for the end of the last log.
                Some(Err(e)) if e.is_torn_tail() && self.logs.len() == 0 => {
                    self.torn_tail = Some(format!("{}: {e}", path.display()));
                    self.current = None;
                }
                Some(Err(source)) => {
                    return Err(Error::Log {
                        path: path.clone(),
                        source,
                    });
                }
                None => self.current = None,
            }
        }
    }
}

/// Reads the data directories of one ensemble's members (all of them) into `audit`:
/// [`read_ensemble`] with the ensemble's size the number of directories.
///
/// # Errors
/// As [`read_ensemble`].
pub fn read_members(dirs: &[PathBuf], start: Start, audit: &mut Audit) -> Result<ReadStats, Error> {
    read_ensemble(dirs, dirs.len(), start, audit)
}

/// Reads the data directories of members of an ensemble of `ensemble` into `audit`: the
/// snapshot (as `start` says, among every member's: the oldest of all, or the newest), then
/// every member's logs after it merged by zxid ([`crate::commit::merge`]): each transaction
/// the ensemble committed applied once, those it never committed (logged by too few members)
/// left out, what the rule decided kept in the history ([`History::commits`]; with one
/// directory, or fewer than a majority of `ensemble`, the rule is not applied and every
/// transaction is). Members that hold different transactions at one zxid are reported
/// ([`Audit::diverged`]): the servers lost history there. Memory: the tree and one record
/// per member at a time.
///
/// [`History::commits`]: crate::replay::History::commits
///
/// # Errors
/// [`Error::Io`], [`Error::NoData`], [`Error::Snapshot`] or [`Error::Log`] naming the file
/// (and the offset in it) that cannot be read.
pub fn read_ensemble(
    dirs: &[PathBuf],
    ensemble: usize,
    start: Start,
    audit: &mut Audit,
) -> Result<ReadStats, Error> {
    let began = Instant::now();
    let members = dirs
        .iter()
        .map(|d| list(d))
        .collect::<Result<Vec<_>, _>>()?;
    let mut stats = ReadStats {
        unknown_method: members
            .iter()
            .flat_map(|m| m.unknown_method.clone())
            .collect(),
        ..ReadStats::default()
    };
    let snapshots = members.iter().flat_map(|m| m.snapshots.iter());
    let snap = match start {
        Start::Oldest => snapshots.min_by_key(|(z, _)| *z),
        Start::Newest => snapshots.max_by_key(|(z, _)| *z),
        Start::LogsOnly => None,
    };
    let mut from = None;
    if let Some((zxid, path)) = snap {
        load_snapshot(*zxid, path, audit)?;
        stats.snapshot = Some(path.clone());
        from = Some(*zxid);
    }
    audit.start(from);
    let mut logs: Vec<MemberLog> = members.iter().map(|m| MemberLog::new(m, from)).collect();
    merge(&mut logs, ensemble, audit)?;
    for log in logs {
        stats.txns += log.txns;
        stats.repeated += log.repeated;
        stats.logs.extend(log.read);
        if log.torn_tail.is_some() {
            stats.torn_tail = log.torn_tail;
        }
    }
    stats.seconds = began.elapsed().as_secs_f64();
    Ok(stats)
}

fn load_snapshot(zxid: i64, path: &Path, audit: &mut Audit) -> Result<(), Error> {
    let file = File::open(path).map_err(|e| Error::Io {
        path: path.to_owned(),
        message: e.to_string(),
    })?;
    let snap_err = |source| Error::Snapshot {
        path: path.to_owned(),
        source,
    };
    // Streamed (decompressed as it goes, if compressed): one node in memory at a time, the
    // seals checked on the snapshot's own bytes as they go by.
    let input = Decompressed::new(BufReader::with_capacity(1 << 16, file), compression(path));
    let mut snap = SnapshotStream::new(input).map_err(snap_err)?;
    for session in snap.sessions() {
        audit.add_session(session.id, session.timeout);
    }
    while let Some(node) = snap.next_node().map_err(snap_err)? {
        // A node made after the snapshot's zxid is in it by fuzziness: the logs make it.
        if node.stat.czxid > zxid {
            continue;
        }
        let made = Stamp {
            zxid: node.stat.czxid,
            time: node.stat.ctime,
        };
        audit.add_node(&node.path, made, node.stat.ephemeral_owner);
    }
    Ok(())
}
