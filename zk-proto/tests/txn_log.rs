//! The transaction-log reader is total: any bytes give entries and then the end or one
//! error, never a panic; whatever decodes re-encodes to the same bytes. Checked on a sample
//! log of every txn type and on a real 3.8 server's log (`fuzz/seeds/txn_log/server-log.1`,
//! written by xtask's `txnlog` test): every strict prefix, every flipped byte, and seeded
//! random mutations. The `txn_log` fuzz target checks the same with `txn_log_support::check`.
//!
//! `TXN_LOG_SEED=<u64>` changes the mutations' seed; `TXN_LOG_SCALE=<n>` multiplies them.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

#[path = "txn_log_support/mod.rs"]
mod txn_log_support;

use txn_log_support::{Read, check, sample_entries, sample_log, sample_types};
use zk_proto::OpCode;
use zk_proto::txnlog::{TxnBody, TxnLogError};

/// A real log: ZooKeeper 3.8.0 standalone, one session (see xtask/tests/txnlog.rs), cut 64
/// bytes into its padding.
const SERVER_LOG: &[u8] = include_bytes!("../fuzz/seeds/txn_log/server-log.1");

fn logs() -> Vec<(&'static str, Vec<u8>)> {
    vec![("sample", sample_log(40)), ("server", SERVER_LOG.to_vec())]
}

/// The entries of a log that must read without error.
fn entries_of(bytes: &[u8]) -> (Vec<zk_proto::txnlog::TxnEntry>, usize) {
    match check(bytes) {
        Read::Log {
            entries,
            error: None,
            end,
            ..
        } => (entries, end),
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_sample_covers_every_type_and_the_server_log_reads() {
    let mut expected = vec![
        OpCode::CreateSession,
        OpCode::CloseSession,
        OpCode::Error,
        OpCode::Create,
        OpCode::Delete,
        OpCode::SetData,
        OpCode::SetAcl,
        OpCode::Check,
        OpCode::Multi,
        OpCode::Create2,
        OpCode::Reconfig,
        OpCode::CreateContainer,
        OpCode::DeleteContainer,
        OpCode::CreateTtl,
    ];
    expected.sort_by_key(|op| op.code());
    assert_eq!(sample_types(), expected);
    assert_eq!(entries_of(&sample_log(40)).0, sample_entries());

    let (server, end) = entries_of(SERVER_LOG);
    assert_eq!(end, SERVER_LOG.len() - 64);
    assert_eq!(server.len(), 14);
    assert_eq!(server[0].header.op, OpCode::CreateSession);
    assert!(
        matches!(&server[13].body, TxnBody::CloseSession(Some(c)) if c.paths_to_delete.len() == 1)
    );
}

/// Where each record starts, and where the records end.
fn record_starts(bytes: &[u8]) -> (Vec<usize>, usize) {
    let mut starts = Vec::new();
    let mut at = 16;
    loop {
        let len = i32::from_be_bytes(bytes[at + 8..at + 12].try_into().unwrap());
        if len == 0 {
            return (starts, at);
        }
        starts.push(at);
        at += 12 + len as usize + 1;
    }
}

#[test]
fn every_strict_prefix_gives_entries_then_a_clean_end_or_a_torn_tail() {
    for (name, log) in logs() {
        let (all, _) = entries_of(&log);
        let (starts, end) = record_starts(&log);
        for cut in 0..log.len() {
            let read = check(&log[..cut]);
            if cut < 16 {
                assert!(
                    matches!(
                        read,
                        Read::NoHeader(TxnLogError::Truncated { offset: 0, .. })
                    ),
                    "{name} cut at {cut}: {read:?}"
                );
                continue;
            }
            let Read::Log {
                entries,
                error,
                end: stop,
                ..
            } = read
            else {
                panic!("{name} cut at {cut}: {read:?}")
            };
            // The records wholly inside the cut are read, in order.
            let whole = starts
                .iter()
                .zip(starts.iter().skip(1).chain([&end]))
                .take_while(|(_, next)| **next <= cut)
                .count();
            assert_eq!(entries, all[..whole], "{name} cut at {cut}");
            // A cut at a record's start, or in the padding, is a clean end; so is one within
            // the zero bytes a record starts with (the checksum's high half is always 0):
            // those bytes are padding as far as any reader can tell (Java's too).
            let record = starts.iter().rev().find(|&&s| s <= cut);
            let boundary = cut >= end
                || cut == 16
                || record.is_some_and(|&s| log[s..cut].iter().all(|&b| b == 0));
            match error {
                None => assert!(boundary, "{name} cut at {cut}: a clean end inside a record"),
                Some(e) => {
                    assert!(!boundary, "{name} cut at {cut}: {e}");
                    assert!(e.is_torn_tail(), "{name} cut at {cut}: {e}");
                    assert!(
                        matches!(e, TxnLogError::Truncated { offset, .. } if offset == stop),
                        "{name} cut at {cut}: {e}"
                    );
                }
            }
        }
    }
}

#[test]
fn every_flipped_byte_is_an_error_or_a_different_value() {
    for (name, log) in logs() {
        let original = check(&log);
        for at in 0..log.len() {
            for mask in [0x01, 0x80, 0xff] {
                let mut bad = log.clone();
                bad[at] ^= mask;
                let read = check(&bad);
                assert_ne!(
                    read, original,
                    "{name}: byte {at} ^ {mask:#x} went unnoticed"
                );
            }
        }
    }
}

#[test]
fn a_flipped_byte_inside_a_record_is_a_checksum_error() {
    for (name, log) in logs() {
        let (starts, end) = record_starts(&log);
        for (i, &start) in starts.iter().enumerate() {
            let next = starts.get(i + 1).copied().unwrap_or(end);
            // The checksum's low 4 bytes and the record's bytes (not its length, not 'B').
            for at in (start + 4..start + 8).chain(start + 12..next - 1) {
                let mut bad = log.clone();
                bad[at] ^= 0x20;
                let Read::Log {
                    entries,
                    error: Some(e),
                    ..
                } = check(&bad)
                else {
                    panic!("{name}: byte {at} flipped")
                };
                assert_eq!(entries.len(), i);
                assert!(
                    matches!(e, TxnLogError::Checksum { offset, .. } if offset == start),
                    "{name}: byte {at}: {e}"
                );
            }
        }
    }
}

/// SplitMix64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

#[test]
fn random_mutations_never_panic() {
    let seed = std::env::var("TXN_LOG_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_7a10_9000_0001u64);
    let scale: usize = std::env::var("TXN_LOG_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let mut rng = Rng(seed);
    let mut outcomes = [0usize; 3]; // no header, clean, error
    for (_, log) in logs() {
        for case in 0..2_000 * scale.max(1) {
            let mut bytes = log.clone();
            for _ in 0..1 + rng.below(4) {
                let at = rng.below(bytes.len());
                match rng.below(5) {
                    0 => bytes[at] = rng.next() as u8,
                    1 => bytes.truncate(at),
                    2 => bytes.insert(at, rng.next() as u8),
                    3 => {
                        // A plausible big length where a length may be.
                        let v = [0x7f, 0xff, 0xff, 0xff];
                        for (i, b) in v.iter().enumerate() {
                            if let Some(slot) = bytes.get_mut(at + i) {
                                *slot = *b;
                            }
                        }
                    }
                    _ => {
                        let end = (at + 1 + rng.below(16)).min(bytes.len());
                        bytes.drain(at..end);
                    }
                }
                if bytes.is_empty() {
                    break;
                }
            }
            let read = std::panic::catch_unwind(|| check(&bytes))
                .unwrap_or_else(|_| panic!("seed {seed:#x} case {case}: {:02x?}", bytes));
            outcomes[match read {
                Read::NoHeader(_) => 0,
                Read::Log { error: None, .. } => 1,
                Read::Log { .. } => 2,
            }] += 1;
        }
    }
    println!("no header / clean / error: {outcomes:?}");
    assert!(outcomes.iter().all(|&n| n > 0), "{outcomes:?}");
}

/// Writes the hand-made seeds of the `txn_log` fuzz target (the server's log is written by
/// xtask's `txnlog` test with `TXNLOG_SEED_DIR`):
/// `cargo test -p zk-proto --test txn_log -- --ignored write_fuzz_seeds`.
#[test]
#[ignore = "writes fuzz/seeds/txn_log"]
fn write_fuzz_seeds() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds/txn_log");
    std::fs::create_dir_all(&dir).unwrap();
    let log = sample_log(24);
    std::fs::write(dir.join("every-type.log"), &log).unwrap();
    let (starts, _) = record_starts(&log);
    // One record's bytes alone (the target reads its input as a record too).
    for (i, &start) in starts.iter().enumerate().take(starts.len()) {
        let len = i32::from_be_bytes(log[start + 8..start + 12].try_into().unwrap()) as usize;
        std::fs::write(
            dir.join(format!("record-{i:02}")),
            &log[start + 12..start + 12 + len],
        )
        .unwrap();
    }
    std::fs::write(dir.join("torn-tail.log"), &log[..log.len() - 40]).unwrap();
    std::fs::write(dir.join("header-only.log"), &log[..16]).unwrap();
}
