//! A server's data directory read into an [`Audit`]: the oldest (or newest) snapshot, then
//! every transaction log after it, streamed.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::time::Instant;

use zk_proto::snapshot::SnapshotReader;
use zk_proto::txnlog::TxnLogStream;

use crate::Error;
use crate::replay::{Audit, Stamp};

/// The files of one data directory (`<dir>/version-2`, or `<dir>` itself if it holds them),
/// each with the zxid in its name.
#[derive(Debug, Clone, Default)]
pub struct DataFiles {
    /// `snapshot.<zxid>` files, oldest first.
    pub snapshots: Vec<(i64, PathBuf)>,
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
            // `snapshot.<zxid>.gz` / `.snappy`: kept with its suffix, refused when read.
            let hex = z.split('.').next().unwrap_or(z);
            if let Some(z) = zxid(hex) {
                files.snapshots.push((z, path.clone()));
            }
        } else if let Some(z) = name.strip_prefix("log.").and_then(zxid) {
            files.logs.push((z, path.clone()));
        }
    }
    if files.snapshots.is_empty() && files.logs.is_empty() {
        return Err(Error::NoData { path: dir });
    }
    files.snapshots.sort();
    files.logs.sort();
    Ok(files)
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
}

/// Reads `dir`'s snapshot (as `start` says) and its logs after it into `audit`, then starts
/// and feeds it; returns what it read.
///
/// # Errors
/// [`Error::Io`], [`Error::Snapshot`] or [`Error::Log`] naming the file (and the offset in
/// it) that cannot be read.
pub fn read_into(dir: &Path, start: Start, audit: &mut Audit) -> Result<ReadStats, Error> {
    let began = Instant::now();
    let files = list(dir)?;
    let mut stats = ReadStats::default();
    let snap = match start {
        Start::Oldest => files.snapshots.first(),
        Start::Newest => files.snapshots.last(),
        Start::LogsOnly => None,
    };
    let mut from = None;
    if let Some((zxid, path)) = snap {
        let io = |e: std::io::Error| Error::Io {
            path: path.clone(),
            message: e.to_string(),
        };
        let mut bytes = Vec::new();
        File::open(path)
            .and_then(|mut f| f.read_to_end(&mut bytes))
            .map_err(io)?;
        let snap_err = |source| Error::Snapshot {
            path: path.clone(),
            source,
        };
        let mut reader = SnapshotReader::new(&bytes).map_err(snap_err)?;
        for node in reader.by_ref() {
            let node = node.map_err(snap_err)?;
            // A node made after the snapshot's zxid is in it by fuzziness: the logs make it.
            if node.stat.czxid > *zxid {
                continue;
            }
            let made = Stamp {
                zxid: node.stat.czxid,
                time: node.stat.ctime,
            };
            audit.add_node(&node.path, made, node.stat.ephemeral_owner);
        }
        stats.snapshot = Some(path.clone());
        from = Some(*zxid);
    }
    audit.start(from);
    // The logs that may hold transactions after the snapshot: the last one starting at or
    // before it, and every later one.
    let first = match from {
        Some(z) => files
            .logs
            .iter()
            .rposition(|(s, _)| *s <= z + 1)
            .unwrap_or(0),
        None => 0,
    };
    let logs = files.logs.get(first..).unwrap_or_default();
    for (i, (_, path)) in logs.iter().enumerate() {
        let file = File::open(path).map_err(|e| Error::Io {
            path: path.clone(),
            message: e.to_string(),
        })?;
        let log_err = |source| Error::Log {
            path: path.clone(),
            source,
        };
        let stream = TxnLogStream::new(BufReader::with_capacity(1 << 16, file)).map_err(log_err)?;
        for entry in stream {
            match entry {
                Ok(e) => {
                    stats.txns += 1;
                    if from.is_some_and(|z| e.header.zxid <= z) {
                        continue;
                    }
                    audit.apply(&e);
                }
                // Java takes a torn last record for the end of the last log.
                Err(e) if e.is_torn_tail() && i + 1 == logs.len() => {
                    stats.torn_tail = Some(format!("{}: {e}", path.display()));
                }
                Err(e) => return Err(log_err(e)),
            }
        }
        stats.logs.push(path.clone());
    }
    stats.seconds = began.elapsed().as_secs_f64();
    Ok(stats)
}
