//! The servers' transaction logs, read and merged into one history in zxid order.

use std::collections::BTreeMap;
use std::path::Path;

use zk_proto::txnlog::{TxnBody, TxnEntry, TxnLogReader};

/// One member's log: its entries in file order, and what stopped a file early.
#[derive(Debug, Clone, Default)]
pub struct MemberLog {
    /// Log files read (whole or not): a member with none has left no record, which the
    /// judge says rather than judging nothing.
    pub files: usize,
    /// Every entry read, in the order of the files (by their zxid) and of the records.
    pub entries: Vec<TxnEntry>,
    /// Files whose last record was torn (cut short or without its `'B'`: a write torn by a
    /// crash, which Java's reader takes as the end of the file).
    pub torn: usize,
    /// Files that could not be read to their end, with why (the entries before are kept).
    pub errors: Vec<String>,
}

/// Reads one log file's bytes: its entries up to the padding, the end, a torn last record
/// (then `torn` is set) or an error (said in `errors`, prefixed by `name`).
pub fn read_file(name: &str, bytes: &[u8], into: &mut MemberLog) {
    into.files += 1;
    let log = match TxnLogReader::new(bytes) {
        Ok(log) => log,
        Err(e) => {
            into.errors.push(format!("{name}: {e}"));
            return;
        }
    };
    for item in log {
        match item {
            Ok(entry) => into.entries.push(entry),
            Err(e) if e.is_torn_tail() => into.torn += 1,
            Err(e) => into.errors.push(format!("{name}: {e}")),
        }
    }
}

/// Every `version-2/log.*` file of a member's data dir, in zxid order.
///
/// # Errors
/// The directory cannot be listed or a file cannot be read.
pub fn read_member(data_dir: &Path) -> std::io::Result<MemberLog> {
    let mut log = MemberLog::default();
    for file in crate::txnlog::log_files(data_dir)? {
        let bytes = std::fs::read(&file)?;
        read_file(&file.display().to_string(), &bytes, &mut log);
    }
    Ok(log)
}

/// The members' logs merged into the committed history.
#[derive(Debug, Clone, Default)]
pub struct Merged {
    /// One entry per committed zxid, in zxid order.
    pub entries: Vec<TxnEntry>,
    /// Transactions left out: logged by fewer than a majority of the members, so never
    /// committed (a leader's proposals that died with it: a member that rejoined by snapshot
    /// keeps that tail in its old log file), as `(zxid, members that logged it)`.
    pub uncommitted: Vec<(i64, usize)>,
    /// What keeps the logs from being merged as one: two members with different transactions
    /// at one zxid, zxids in no member's log inside an epoch, an uncommitted zxid before a
    /// committed one of its epoch.
    pub errors: Vec<String>,
}

/// Merges the members' logs (all the ensemble's members, in any order): one entry per zxid,
/// in zxid order, keeping only what a majority logged.
///
/// The rule is ZooKeeper's own: a proposal commits once a majority has logged it (each member
/// acknowledges only after its log is flushed), and no log loses a committed transaction (a
/// follower's log is truncated only of what the new leader lacks). A member that was down
/// lacks some of them, and a member synced by snapshot does not log what the snapshot held,
/// so a committed transaction is logged by at least a majority, and one logged by fewer was
/// never committed. The ensemble is configured to sync by difference (the chaos run's
/// `zookeeper.commitLogCount`), under which a member's log also holds every transaction it
/// learnt after rejoining.
pub fn merge(members: &[MemberLog]) -> Merged {
    let majority = members.len() / 2 + 1;
    let mut by_zxid: BTreeMap<i64, (usize, &TxnEntry, usize)> = BTreeMap::new();
    let mut merged = Merged::default();
    for (m, member) in members.iter().enumerate() {
        let mut seen = std::collections::HashSet::new();
        for entry in &member.entries {
            if !seen.insert(entry.zxid()) {
                // A member's own log holds a zxid once (a truncated and rewritten tail
                // aside, which the reader does not see twice).
                continue;
            }
            match by_zxid.get_mut(&entry.zxid()) {
                None => {
                    by_zxid.insert(entry.zxid(), (m, entry, 1));
                }
                Some((first, kept, count)) => {
                    *count += 1;
                    if kept.header != entry.header || !same_body(&kept.body, &entry.body) {
                        merged.errors.push(format!(
                            "zxid {:#x}: member {first} logged {:?} {:?}, member {m} {:?} {:?}",
                            entry.zxid(),
                            kept.header.op,
                            kept.body.path(),
                            entry.header.op,
                            entry.body.path()
                        ));
                    }
                }
            }
        }
    }
    let mut last: Option<i64> = None;
    // The first uncommitted zxid of the epoch being walked: nothing of that epoch may commit
    // after it.
    let mut cut: Option<i64> = None;
    for (&zxid, &(_, entry, count)) in &by_zxid {
        let epoch = zxid >> 32;
        if last.is_some_and(|prev| prev >> 32 != epoch) {
            cut = None;
        }
        if let Some(prev) = last {
            if prev >> 32 == epoch && zxid - prev > 1 {
                merged.errors.push(format!(
                    "zxids {:#x}..{:#x} are in no member's log",
                    prev + 1,
                    zxid - 1
                ));
            }
        }
        last = Some(zxid);
        if count < majority {
            merged.uncommitted.push((zxid, count));
            cut.get_or_insert(zxid);
            continue;
        }
        if let Some(first) = cut {
            merged.errors.push(format!(
                "zxid {zxid:#x} is logged by a majority after {first:#x}, which is not \
                 (proposals commit in order)"
            ));
        }
        merged.entries.push(entry.clone());
    }
    merged
}

/// Whether two members logged the same transaction body. Two failed multis of as many ops
/// count as the same: nothing of either is applied, and ZooKeeper's leader may log a failed
/// multi's ops under the error type with another record than its followers do (seen in a
/// 3.8 ensemble: the leader's error op carried the op's own check record, which reads as
/// another code).
fn same_body(a: &TxnBody, b: &TxnBody) -> bool {
    match (a, b) {
        (TxnBody::Multi(x), TxnBody::Multi(y)) if a.changed_nothing() && b.changed_nothing() => {
            x.len() == y.len()
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use zk_proto::txnlog::{DeleteTxn, ErrorTxn, TxnBody};

    use super::same_body;

    #[test]
    fn failed_multis_of_as_many_ops_are_the_same_whatever_their_codes() {
        let error = |err| TxnBody::Error(ErrorTxn { err });
        let delete = TxnBody::Delete(DeleteTxn {
            path: "/a".to_owned(),
        });
        let leader = TxnBody::Multi(vec![error(29), error(-101)]);
        let follower = TxnBody::Multi(vec![error(0), error(-101)]);
        assert!(same_body(&leader, &follower));
        assert!(!same_body(
            &leader,
            &TxnBody::Multi(vec![error(0), error(-101), error(-2)])
        ));
        // An applied multi is compared whole.
        let applied = TxnBody::Multi(vec![delete.clone()]);
        assert!(!same_body(&applied, &TxnBody::Multi(vec![error(-101)])));
        assert!(same_body(&applied, &TxnBody::Multi(vec![delete])));
        assert!(!same_body(&error(1), &error(2)));
    }
}
