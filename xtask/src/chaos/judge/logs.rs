//! The servers' transaction logs, read and merged into one history in zxid order.

use std::collections::BTreeMap;
use std::path::Path;

use zk_proto::txnlog::{TxnEntry, TxnLogReader};

/// One member's log: its entries in file order, and what stopped a file early.
#[derive(Debug, Clone, Default)]
pub struct MemberLog {
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

/// The members' logs merged: one entry per zxid, in zxid order (every member logs the same
/// committed transactions; a member down for a while lacks some, another has them), and the
/// judge's errors: two members with different transactions at one zxid (the first read is
/// kept), and zxids missing from every log (a gap in one epoch's counter).
pub fn merge(members: &[MemberLog]) -> (Vec<TxnEntry>, Vec<String>) {
    let mut by_zxid: BTreeMap<i64, (usize, &TxnEntry)> = BTreeMap::new();
    let mut errors = Vec::new();
    for (m, member) in members.iter().enumerate() {
        for entry in &member.entries {
            match by_zxid.get(&entry.zxid()) {
                None => {
                    by_zxid.insert(entry.zxid(), (m, entry));
                }
                Some((first, kept)) => {
                    if kept.header != entry.header || kept.body != entry.body {
                        errors.push(format!(
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
    for &zxid in by_zxid.keys() {
        if let Some(prev) = last {
            if prev >> 32 == zxid >> 32 && zxid - prev > 1 {
                errors.push(format!(
                    "zxids {:#x}..{:#x} are in no member's log",
                    prev + 1,
                    zxid - 1
                ));
            }
        }
        last = Some(zxid);
    }
    let entries = by_zxid.into_values().map(|(_, e)| e.clone()).collect();
    (entries, errors)
}
