//! Any bytes, read as a ZooKeeper transaction log file and as one log record
//! (`zk_proto::txnlog`). Nothing may panic; whatever decodes must re-encode to bytes that
//! decode to the same value, and to the input's own bytes unless it sent a string as 4-byte
//! UTF-8 (Java writes surrogate pairs). The properties live in
//! `../../tests/txn_log_support/mod.rs`, shared with `tests/txn_log.rs`.

#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/txn_log_support/mod.rs"]
mod txn_log_support;

fuzz_target!(|data: &[u8]| {
    let _ = txn_log_support::check(data);
});
