//! Reading data directories made here (no server): which files are read, and what a bad
//! file gives.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::path::PathBuf;

use zk_lock_audit::Error;
use zk_lock_audit::datadir::{Start, read_ensemble, read_into, read_members};
use zk_lock_audit::replay::{Audit, EventKind};
use zk_lock_audit::report::{Range, table};
use zk_proto::snapshot::{StatPersisted, encode_snapshot};
use zk_proto::txnlog::{
    CreateTxn, DeleteTxn, FileHeader, TxnBody, TxnEntry, TxnHeader, encode_log,
};

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("zk-lock-audit-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("version-2")).unwrap();
    d
}

fn txn(zxid: i64, body: TxnBody) -> TxnEntry {
    TxnEntry {
        header: TxnHeader {
            client_id: 7,
            cxid: 1,
            zxid,
            time: 1000 + zxid,
            op: body.op_code(),
        },
        body,
        digest: None,
    }
}

const NODE: &str = "/l/_c_x-lock-0000000001";

/// A snapshot at zxid 2 holding `/l` and one lock node; a log from zxid 1 (overlapping it)
/// that makes them and then deletes the node at zxid 3; a snapshot of an unknown compression
/// method beside.
fn write(d: &std::path::Path, log_tail: &[u8]) {
    let v2 = d.join("version-2");
    let root = StatPersisted::default();
    let l = StatPersisted {
        czxid: 1,
        ..Default::default()
    };
    let n = StatPersisted {
        czxid: 2,
        ctime: 1002,
        ephemeral_owner: 7,
        ..Default::default()
    };
    let snap = encode_snapshot(&[(7, 4000)], &[("", &root), ("/l", &l), (NODE, &n)]);
    std::fs::write(v2.join("snapshot.2"), snap).unwrap();
    std::fs::write(v2.join("snapshot.9.zst"), b"\x28\xb5\x2f\xfd not read").unwrap();
    let create = |path: &str, ephemeral, cv| {
        TxnBody::Create(CreateTxn {
            path: path.into(),
            ephemeral,
            parent_cversion: cv,
            ..CreateTxn::default()
        })
    };
    let entries = [
        txn(1, create("/l", false, 1)),
        txn(2, create(NODE, true, 1)),
        txn(3, TxnBody::Delete(DeleteTxn { path: NODE.into() })),
    ];
    let mut log = bytes::BytesMut::new();
    encode_log(&FileHeader::new(0), &entries, &mut log).unwrap();
    log.extend_from_slice(log_tail);
    std::fs::write(v2.join("log.1"), log).unwrap();
}

#[test]
fn the_snapshot_then_the_log_after_it_and_unknown_compression_set_aside() {
    let d = dir("good");
    write(&d, &[0; 64]);
    let mut audit = Audit::new(vec![]);
    let stats = read_into(&d, Start::Oldest, &mut audit).unwrap();
    assert_eq!(stats.snapshot, Some(d.join("version-2/snapshot.2")));
    assert_eq!(stats.unknown_method, [d.join("version-2/snapshot.9.zst")]);
    assert_eq!(
        stats.txns, 3,
        "every record read, those up to the snapshot skipped"
    );
    let h = audit.finish();
    assert_eq!(h.txns, 1);
    assert_eq!(h.anomalies, []);
    let kinds: Vec<_> = h.locks[0]
        .events
        .iter()
        .map(|e| (e.at.zxid, &e.kind))
        .collect();
    assert!(
        matches!(kinds[0], (2, EventKind::Present { holding: true, .. })),
        "{kinds:?}"
    );
    assert!(
        matches!(kinds[1], (3, EventKind::Ended { .. })),
        "{kinds:?}"
    );

    // The logs alone: the same node, queued and granted from the log.
    let mut audit = Audit::new(vec![]);
    read_into(&d, Start::LogsOnly, &mut audit).unwrap();
    let h = audit.finish();
    assert_eq!(h.txns, 3);
    assert!(matches!(
        h.locks[0].events[1].kind,
        EventKind::Granted { wait_ms: 0 }
    ));
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_torn_last_record_ends_the_log_and_a_corrupt_one_is_an_error_naming_the_file() {
    let d = dir("torn");
    // A record head announcing 40 bytes, then 3: a write cut by a crash.
    write(&d, &[0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 40, 1, 2, 3]);
    let mut audit = Audit::new(vec![]);
    let stats = read_into(&d, Start::Oldest, &mut audit).unwrap();
    assert!(stats.torn_tail.is_some());

    let mut bytes = std::fs::read(d.join("version-2/log.1")).unwrap();
    bytes[40] ^= 0xff; // inside the first record
    std::fs::write(d.join("version-2/log.1"), bytes).unwrap();
    let err = read_into(&d, Start::Oldest, &mut Audit::new(vec![])).unwrap_err();
    assert!(matches!(err, Error::Log { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("log.1") && text.contains("checksum"),
        "{text}"
    );

    let mut snap = std::fs::read(d.join("version-2/snapshot.2")).unwrap();
    let n = snap.len();
    snap[n - 20] ^= 1;
    std::fs::write(d.join("version-2/snapshot.2"), snap).unwrap();
    let err = read_into(&d, Start::Oldest, &mut Audit::new(vec![])).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("snapshot.2") && text.contains("checksum"),
        "{text}"
    );

    let empty = dir("empty");
    assert!(matches!(
        read_into(&empty, Start::Oldest, &mut Audit::new(vec![])),
        Err(Error::NoData { .. })
    ));
    std::fs::remove_dir_all(&d).unwrap();
    std::fs::remove_dir_all(&empty).unwrap();
}

/// A member's log holding transactions again, as a ZooKeeper 3.8 follower's logs did after it
/// rejoined (seen in chaos runs' kept logs, beside the judge): one record twice in a row,
/// identical (the new epoch's first proposal), or records starting again lower (there, the
/// epoch's first 339 transactions logged, then logged again from the first, in one file;
/// here in a later file). Each transaction is applied once, the records dropped are counted, and
/// none is an anomaly. A record that differs at the same zxid still is.
#[test]
fn transactions_a_member_logged_again_are_read_once() {
    let d = dir("twice");
    let v2 = d.join("version-2");
    let create = |path: &str, cv| {
        TxnBody::Create(CreateTxn {
            path: path.into(),
            ephemeral: path != "/l",
            parent_cversion: cv,
            ..CreateTxn::default()
        })
    };
    let second = "/l/_c_y-lock-0000000002";
    let entries = [
        txn(1, create("/l", 1)),
        txn(2, create(NODE, 1)),
        txn(0x1_0000_0001, create(second, 2)),
        txn(0x1_0000_0001, create(second, 2)),
        txn(
            0x1_0000_0002,
            TxnBody::Delete(DeleteTxn { path: NODE.into() }),
        ),
    ];
    let mut log = bytes::BytesMut::new();
    encode_log(&FileHeader::new(0), &entries, &mut log).unwrap();
    std::fs::write(v2.join("log.1"), log).unwrap();
    let mut audit = Audit::new(vec![]);
    let stats = read_into(&d, Start::Oldest, &mut audit).unwrap();
    assert_eq!((stats.txns, stats.repeated), (5, 1));
    let h = audit.finish();
    assert_eq!(h.txns, 4);
    assert_eq!(h.anomalies, []);
    let granted: Vec<_> = h.locks[0]
        .events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Granted { .. }))
        .map(|e| (e.at.zxid, e.node.as_str()))
        .collect();
    assert_eq!(
        granted,
        [
            (2, "_c_x-lock-0000000001"),
            (0x1_0000_0002, "_c_y-lock-0000000002")
        ]
    );

    // A later file holding again what the one before held (from zxid 2 on), then more: read
    // once, in order.
    let third = "/l/_c_z-lock-0000000003";
    let mut log = bytes::BytesMut::new();
    encode_log(
        &FileHeader::new(0),
        [
            &entries[1],
            &entries[2],
            &entries[4],
            &txn(0x1_0000_0003, create(third, 3)),
        ],
        &mut log,
    )
    .unwrap();
    std::fs::write(v2.join("log.2"), log).unwrap();
    let mut audit = Audit::new(vec![]);
    let stats = read_into(&d, Start::Oldest, &mut audit).unwrap();
    assert_eq!((stats.txns, stats.repeated), (9, 4));
    let h = audit.finish();
    assert_eq!((h.txns, h.anomalies.as_slice()), (5, &[][..]));
    let granted: Vec<_> = h.locks[0]
        .events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Granted { .. }))
        .map(|e| e.at.zxid)
        .collect();
    assert_eq!(granted, [2, 0x1_0000_0002]);
    std::fs::remove_file(v2.join("log.2")).unwrap();

    // Not identical: the second is skipped, and noted.
    let mut other = entries[3].clone();
    other.header.cxid = 2;
    let entries = [
        entries[0].clone(),
        entries[1].clone(),
        entries[2].clone(),
        other,
        entries[4].clone(),
    ];
    let mut log = bytes::BytesMut::new();
    encode_log(&FileHeader::new(0), &entries, &mut log).unwrap();
    std::fs::write(v2.join("log.1"), log).unwrap();
    let mut audit = Audit::new(vec![]);
    let stats = read_into(&d, Start::Oldest, &mut audit).unwrap();
    assert_eq!(stats.repeated, 0);
    assert_eq!(
        audit.finish().anomalies,
        [zk_lock_audit::replay::Anomaly::Repeated {
            zxid: 0x1_0000_0001
        }]
    );
    std::fs::remove_dir_all(&d).unwrap();
}

/// Three members' data directories: the leader's proposal `0x100000003` (a release) reached
/// no follower before it died; it rejoined by snapshot, so its old log file keeps that dead
/// tail, and its new one starts in epoch 2. Merged, the tail is left out (the grant it would
/// make is not in the history) and reported; read alone, the leader's directory is applied
/// whole, and the report says the rule was not applied. A member whose older logs were
/// purged is no witness of the tail: merged with the leader's, it is applied unconfirmed.
#[test]
fn a_dead_leaders_tail_in_one_members_old_log_is_left_out() {
    let create = |path: &str, cv| {
        TxnBody::Create(CreateTxn {
            path: path.into(),
            ephemeral: path != "/l",
            parent_cversion: cv,
            ..CreateTxn::default()
        })
    };
    let second = "/l/_c_y-lock-0000000002";
    let e1 = |n: i64| (1 << 32) | n;
    let e2 = |n: i64| (2 << 32) | n;
    let epoch1 = [
        txn(e1(1), create("/l", 1)),
        txn(e1(2), create(NODE, 1)),
        txn(e1(3), TxnBody::Delete(DeleteTxn { path: NODE.into() })),
    ];
    let epoch2 = [
        txn(e2(1), create(second, 2)),
        txn(e2(2), TxnBody::Delete(DeleteTxn { path: NODE.into() })),
    ];
    let write_log = |d: &std::path::Path, entries: &[TxnEntry]| {
        let mut log = bytes::BytesMut::new();
        encode_log(&FileHeader::new(0), entries, &mut log).unwrap();
        let name = format!("log.{:x}", entries[0].header.zxid);
        std::fs::write(d.join("version-2").join(name), log).unwrap();
    };
    let (leader, f1, f2, purged) = (
        dir("leader"),
        dir("follower1"),
        dir("follower2"),
        dir("purged"),
    );
    write_log(&leader, &epoch1);
    write_log(&leader, &epoch2);
    for f in [&f1, &f2] {
        write_log(f, &epoch1[..2]);
        write_log(f, &epoch2);
    }
    write_log(&purged, &epoch2);

    let granted = |h: &zk_lock_audit::replay::History| -> Vec<(i64, String)> {
        h.locks[0]
            .events
            .iter()
            .filter(|e| matches!(e.kind, EventKind::Granted { .. }))
            .map(|e| (e.at.zxid, e.node.clone()))
            .collect()
    };
    let mut audit = Audit::new(vec![]);
    read_members(
        &[leader.clone(), f1.clone(), f2.clone()],
        Start::Oldest,
        &mut audit,
    )
    .unwrap();
    let h = audit.finish();
    assert_eq!(h.txns, 4);
    let c = h.commits.clone().unwrap();
    assert!(c.applied);
    assert_eq!(
        (c.uncommitted, c.first_uncommitted[0].zxid, c.unconfirmed),
        (1, e1(3), 0)
    );
    // The first lock node is never released in epoch 1: the second is granted when it is
    // deleted, in epoch 2.
    assert_eq!(
        granted(&h),
        [
            (e1(2), "_c_x-lock-0000000001".to_owned()),
            (e2(2), "_c_y-lock-0000000002".to_owned())
        ]
    );
    let text = table(&h, Range::default());
    assert!(
        text.contains("1 uncommitted transactions left out: 0x100000003 (1 of 3 logged it)"),
        "{text}"
    );

    // The leader's directory alone: every record applied, and said.
    let mut audit = Audit::new(vec![]);
    read_into(&leader, Start::Oldest, &mut audit).unwrap();
    let h = audit.finish();
    assert_eq!(h.txns, 5);
    assert_eq!(
        granted(&h),
        [
            (e1(2), "_c_x-lock-0000000001".to_owned()),
            (e2(1), "_c_y-lock-0000000002".to_owned())
        ]
    );
    let text = table(&h, Range::default());
    assert!(
        text.contains("commit rule not applied: 1 of 1 members' logs given"),
        "{text}"
    );

    // With a follower and a member whose epoch-1 logs were purged: the tail is no longer
    // shown uncommitted (the purged member might have logged it), so it is applied,
    // unconfirmed; epoch 1's other zxids, two of three, are committed.
    let mut audit = Audit::new(vec![]);
    read_ensemble(
        &[leader.clone(), f1.clone(), purged.clone()],
        3,
        Start::Oldest,
        &mut audit,
    )
    .unwrap();
    let h = audit.finish();
    let c = h.commits.clone().unwrap();
    assert_eq!((h.txns, c.uncommitted, c.unconfirmed), (5, 0, 1));
    assert_eq!(c.first_unconfirmed[0].zxid, e1(3));
    for d in [leader, f1, f2, purged] {
        std::fs::remove_dir_all(&d).unwrap();
    }
}

/// CRC-32 (gzip's), bit by bit: enough for a test's few kilobytes.
fn crc32(bytes: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in bytes {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 != 0 {
                0xedb8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
        }
    }
    !c
}

/// `bytes` as a gzip member of stored blocks (as `GZIPOutputStream` at level 0 would).
fn gzip_stored(bytes: &[u8]) -> Vec<u8> {
    let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
    let chunks: Vec<&[u8]> = bytes.chunks(1000).collect();
    for (i, chunk) in chunks.iter().enumerate() {
        out.push(u8::from(i + 1 == chunks.len()));
        let len = u16::try_from(chunk.len()).unwrap();
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(chunk);
    }
    out.extend_from_slice(&crc32(bytes).to_le_bytes());
    out.extend_from_slice(&u32::try_from(bytes.len()).unwrap().to_le_bytes());
    out
}

/// `bytes` in snappy-java's framing, each block one snappy literal.
fn snappy_literals(bytes: &[u8]) -> Vec<u8> {
    let mut out = vec![
        0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1,
    ];
    for chunk in bytes.chunks(50) {
        // Decompressed length (one varint byte), a literal tag of length - 1, the bytes.
        let n = u8::try_from(chunk.len()).unwrap();
        out.extend_from_slice(&u32::from(n + 2).to_be_bytes());
        out.extend_from_slice(&[n, (n - 1) << 2]);
        out.extend_from_slice(chunk);
    }
    out
}

/// A server with `zookeeper.snapshot.compression.method` set writes `snapshot.<zxid>.gz` or
/// `.snappy`: read through its decoder, the same history as the plain file gives; a corrupt
/// one is an error naming the file and both offsets.
#[test]
fn compressed_snapshots_read_as_the_plain_one() {
    let plain_dir = dir("plain");
    write(&plain_dir, &[]);
    let history = |d: &std::path::Path, start| {
        let mut audit = Audit::new(vec![]);
        let stats = read_into(d, start, &mut audit).unwrap();
        (stats, format!("{:?}", audit.finish().locks))
    };
    let (_, want) = history(&plain_dir, Start::Oldest);
    let snap = std::fs::read(plain_dir.join("version-2/snapshot.2")).unwrap();
    for (name, bytes) in [
        ("snapshot.2.gz", gzip_stored(&snap)),
        ("snapshot.2.snappy", snappy_literals(&snap)),
    ] {
        let d = dir(name);
        write(&d, &[]);
        let v2 = d.join("version-2");
        std::fs::remove_file(v2.join("snapshot.2")).unwrap();
        std::fs::write(v2.join(name), &bytes).unwrap();
        let (stats, got) = history(&d, Start::Newest);
        assert_eq!(stats.snapshot, Some(v2.join(name)));
        assert_eq!(got, want, "{name}");

        // Cut short: an error naming the file, where the snapshot's bytes stopped and where
        // the compressed file did.
        let cut = bytes.len() - 30;
        std::fs::write(v2.join(name), &bytes[..cut]).unwrap();
        let err = read_into(&d, Start::Newest, &mut Audit::new(vec![])).unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, Error::Snapshot { .. }), "{text}");
        assert!(
            text.contains(name)
                && text.contains("decompressed offset")
                && text.contains(&format!("compressed offset {cut}")),
            "{text}"
        );
        std::fs::remove_dir_all(&d).unwrap();
    }
    std::fs::remove_dir_all(&plain_dir).unwrap();
}
