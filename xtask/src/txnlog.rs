//! `cargo xtask txnlog <dir-or-file>...`: a ZooKeeper server's transaction log, one line per
//! transaction, read with `zk_proto::txnlog`: who did what, when.
//!
//! A directory is a server's `dataDir` (its `version-2/log.*` files are read) or the
//! `version-2` directory itself; files are read in zxid order. Each line has the zxid, the
//! leader's time (UTC), the session, the type and what changed: the path, an ephemeral
//! node's owner, a multi's inner transactions, the ephemerals a closed session deletes.
//! A record the reader refuses ends that file with its error and offset; a record cut short at
//! the end (a write torn by a crash, which Java's reader also takes as the end) is reported but
//! is not a failure.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use zk_proto::txnlog::{TxnBody, TxnEntry, TxnLogReader};

/// The `log.<hex zxid>` files of `path` (a data dir, its `version-2`, or one file), in zxid
/// order.
pub fn log_files(path: &Path) -> std::io::Result<Vec<PathBuf>> {
    if path.is_file() {
        return Ok(vec![path.to_owned()]);
    }
    let dir = if path.join("version-2").is_dir() {
        path.join("version-2")
    } else {
        path.to_owned()
    };
    let mut files: Vec<(u64, PathBuf)> = Vec::new();
    for entry in std::fs::read_dir(&dir)? {
        let file = entry?.path();
        let zxid = file
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_prefix("log."))
            .and_then(|hex| u64::from_str_radix(hex, 16).ok());
        if let Some(zxid) = zxid {
            files.push((zxid, file));
        }
    }
    files.sort();
    Ok(files.into_iter().map(|(_, f)| f).collect())
}

/// `ms` since the epoch as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
fn utc(ms: i64) -> String {
    let (days, ms_of_day) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let s = ms_of_day / 1000;
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        s / 3600,
        s / 60 % 60,
        s % 60,
        ms_of_day % 1000
    )
}

/// The name ZooKeeper's `Request.op2String` gives a type.
fn type_name(body: &TxnBody) -> &'static str {
    match body {
        TxnBody::CreateSession(_) => "createSession",
        TxnBody::CloseSession(_) => "closeSession",
        TxnBody::Create(_) | TxnBody::CreateV0(_) => "create",
        TxnBody::Create2(_) => "create2",
        TxnBody::CreateTtl(_) => "createTtl",
        TxnBody::CreateContainer(_) => "createContainer",
        TxnBody::Delete(_) => "delete",
        TxnBody::DeleteContainer(_) => "deleteContainer",
        TxnBody::SetData(_) => "setData",
        TxnBody::Reconfig(_) => "reconfig",
        TxnBody::SetAcl(_) => "setACL",
        TxnBody::Check(_) => "check",
        TxnBody::Error(_) => "error",
        TxnBody::Multi(_) => "multi",
    }
}

/// What a body changed, in a few words: the path and what matters about it.
fn what(body: &TxnBody, session: i64) -> String {
    let mut out = String::new();
    if let Some(path) = body.path() {
        out.push_str(path);
    }
    match body {
        TxnBody::CreateSession(t) => {
            let _ = write!(out, "timeout={}ms", t.timeout);
        }
        TxnBody::CloseSession(Some(t)) if !t.paths_to_delete.is_empty() => {
            let _ = write!(out, "deletes {}", t.paths_to_delete.join(" "));
        }
        TxnBody::CloseSession(_) => {}
        _ if body.is_ephemeral() => {
            let _ = write!(out, " ephemeral owner={session:#x}");
        }
        TxnBody::CreateTtl(t) => {
            let _ = write!(out, " ttl={}ms", t.ttl);
        }
        TxnBody::SetData(t) | TxnBody::Reconfig(t) => {
            let len = t.data.as_ref().map_or(0, |d| d.len());
            let _ = write!(out, " version={} data={len}B", t.version);
        }
        TxnBody::SetAcl(t) => {
            let _ = write!(out, " aclVersion={} acl={}", t.version, t.acl.len());
        }
        TxnBody::Check(t) => {
            let _ = write!(out, " version={}", t.version);
        }
        TxnBody::Error(t) => {
            let _ = write!(out, "{:?} ({})", t.code(), t.err);
        }
        TxnBody::Multi(txns) => {
            if body.changed_nothing() {
                out.push_str("FAILED, nothing applied: ");
            }
            out.push('[');
            for (i, t) in txns.iter().enumerate() {
                if i > 0 {
                    out.push_str("; ");
                }
                let _ = write!(out, "{} {}", type_name(t), what(t, session));
            }
            out.push(']');
        }
        _ => {}
    }
    out
}

/// One entry's line: zxid, time, session, type, what changed.
pub fn line(entry: &TxnEntry) -> String {
    let h = &entry.header;
    format!(
        "{:#012x}  {}  {:#018x}  {:<15}  {}",
        h.zxid,
        utc(h.time),
        h.client_id,
        type_name(&entry.body),
        what(&entry.body, h.client_id).trim_start()
    )
}

/// Prints every entry of the logs under `paths`.
///
/// # Errors
/// A path that cannot be read, or a log with a record the reader refuses (other than a torn
/// last record).
pub fn run(paths: &[PathBuf]) -> Result<(), Box<dyn std::error::Error>> {
    let mut failures = Vec::new();
    for path in paths {
        let files = log_files(path)?;
        if files.is_empty() {
            return Err(format!("no log.* files in {}", path.display()).into());
        }
        for file in files {
            let bytes = std::fs::read(&file)?;
            let mut log = match TxnLogReader::new(&bytes) {
                Ok(log) => log,
                Err(e) => {
                    println!("# {}: {e}", file.display());
                    failures.push(format!("{}: {e}", file.display()));
                    continue;
                }
            };
            println!("# {} (dbid {})", file.display(), log.header().dbid);
            let mut entries = 0usize;
            for item in log.by_ref() {
                match item {
                    Ok(entry) => {
                        entries += 1;
                        println!("{}", line(&entry));
                    }
                    Err(e) if e.is_torn_tail() => {
                        println!("# torn last record (Java's reader stops here too): {e}");
                    }
                    Err(e) => {
                        println!("# error: {e}");
                        failures.push(format!("{}: {e}", file.display()));
                    }
                }
            }
            println!("# {entries} entries, log ends at offset {}", log.offset());
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("; ").into())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use zk_proto::OpCode;
    use zk_proto::txnlog::{CreateTxn, DeleteTxn, ErrorTxn, TxnHeader};

    use super::*;

    #[test]
    fn dates_are_utc() {
        assert_eq!(utc(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(utc(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(utc(1_795_864_342_024), "2026-11-28T11:12:22.024Z");
        assert_eq!(utc(-1), "1969-12-31T23:59:59.999Z");
    }

    #[test]
    fn a_line_says_who_did_what() {
        let create = TxnBody::Create(CreateTxn {
            path: "/l/n-0000000001".into(),
            ephemeral: true,
            ..CreateTxn::default()
        });
        let entry = TxnEntry {
            header: TxnHeader {
                client_id: 0x1000_0abc_0000_0001,
                cxid: 4,
                zxid: 0x1_0000_0004,
                time: 0,
                op: OpCode::Multi,
            },
            body: TxnBody::Multi(vec![
                create,
                TxnBody::Delete(DeleteTxn { path: "/x".into() }),
                TxnBody::Error(ErrorTxn { err: -101 }),
            ]),
            digest: None,
        };
        assert_eq!(
            line(&entry),
            "0x0100000004  1970-01-01T00:00:00.000Z  0x10000abc00000001  multi            \
             FAILED, nothing applied: [create /l/n-0000000001 ephemeral owner=0x10000abc00000001; \
             delete /x; error NoNode (-101)]"
        );
    }
}
