//! The readers' tests: both readers on whole, cut and corrupted snapshots, and their agreement.

use super::*;
use crate::txnlog::adler32;

fn sample() -> Vec<u8> {
    let root = StatPersisted::default();
    let dir = StatPersisted {
        czxid: 2,
        ephemeral_owner: CONTAINER_OWNER,
        ..Default::default()
    };
    let node = StatPersisted {
        czxid: 3,
        ctime: 1_700_000_000_000,
        ephemeral_owner: 0x1234,
        ..Default::default()
    };
    encode_snapshot(
        &[(0x1234, 4000), (0x99, 6000)],
        &[
            ("", &root),
            ("/l", &dir),
            ("/l/_c_x-lock-0000000000", &node),
        ],
    )
}

#[test]
fn reads_sessions_nodes_and_the_seal() {
    let bytes = sample();
    let mut snap = SnapshotReader::new(&bytes).unwrap();
    assert_eq!(snap.sessions().len(), 2);
    let nodes: Vec<_> = snap.by_ref().map(Result::unwrap).collect();
    assert_eq!(nodes.len(), 3);
    assert_eq!(nodes[2].stat.ctime, 1_700_000_000_000);
    assert!(snap.is_sealed());
    assert_eq!(snap.offset(), bytes.len());
}

#[test]
fn a_digest_and_a_last_zxid_with_their_seals_are_read() {
    let mut bytes = sample();
    bytes.extend_from_slice(&9i64.to_be_bytes());
    bytes.extend_from_slice(&2i32.to_be_bytes());
    bytes.extend_from_slice(&77i64.to_be_bytes());
    let seal = |b: &mut Vec<u8>| {
        let crc = adler32(b);
        b.extend_from_slice(&i64::from(crc).to_be_bytes());
        b.extend_from_slice(&[0, 0, 0, 1, b'/']);
    };
    seal(&mut bytes);
    bytes.extend_from_slice(&11i64.to_be_bytes());
    seal(&mut bytes);
    let mut snap = SnapshotReader::new(&bytes).unwrap();
    assert_eq!(snap.by_ref().filter(Result::is_err).count(), 0);
    assert!(snap.is_sealed());
    assert_eq!(snap.digest().map(|d| d.digest), Some(77));
    assert_eq!(snap.last_zxid(), Some(11));

    // A digest whose seal is wrong.
    let mut bad = bytes.clone();
    let n = bad.len();
    bad[n - 14] ^= 1;
    let err = SnapshotReader::new(&bad).unwrap().find_map(Result::err);
    assert!(
        matches!(err, Some(SnapshotError::Checksum { .. })),
        "{err:?}"
    );
}

#[test]
fn every_prefix_and_every_flipped_byte_is_an_error_not_a_panic() {
    let bytes = sample();
    for len in 0..bytes.len() {
        let cut = &bytes[..len];
        if let Ok(snap) = SnapshotReader::new(cut) {
            let mut snap = snap;
            let errors = snap.by_ref().filter(Result::is_err).count();
            assert_eq!(errors, 1, "prefix of {len} bytes");
            assert!(!snap.is_sealed());
        }
    }
    for at in 0..bytes.len() {
        let mut bad = bytes.clone();
        bad[at] ^= 0x41;
        if let Ok(mut snap) = SnapshotReader::new(&bad) {
            let errors = snap.by_ref().filter(Result::is_err).count();
            assert!(!snap.is_sealed() || errors == 0, "byte {at}");
            assert!(errors == 1 || snap.is_sealed(), "byte {at}");
            // Only a flip the seal cannot see may pass: none in this file.
            assert!(!snap.is_sealed(), "byte {at} flipped went unnoticed");
        }
    }
}

/// The nodes read, whether it ended sealed, and the digest and last zxid.
type Outcome = (
    Vec<OwnedSnapshotNode>,
    bool,
    Option<ZxidDigest>,
    Option<i64>,
);

/// What each reader makes of `bytes`.
fn by_slice(bytes: &[u8]) -> Option<Outcome> {
    let mut snap = SnapshotReader::new(bytes).ok()?;
    let nodes = snap
        .by_ref()
        .map_while(Result::ok)
        .map(|n| OwnedSnapshotNode {
            path: n.path.into_owned(),
            data: n.data.map(<[u8]>::to_vec),
            acl: n.acl,
            stat: n.stat,
        })
        .collect();
    Some((
        nodes,
        snap.is_sealed(),
        snap.digest().cloned(),
        snap.last_zxid(),
    ))
}

fn by_stream(bytes: &[u8]) -> Option<Outcome> {
    let mut snap = SnapshotStream::new(bytes).ok()?;
    let mut nodes = Vec::new();
    while let Ok(Some(n)) = snap.next_node() {
        nodes.push(n);
    }
    Some((
        nodes,
        snap.is_sealed(),
        snap.digest().cloned(),
        snap.last_zxid(),
    ))
}

fn with_tail() -> Vec<u8> {
    let mut bytes = sample();
    bytes.extend_from_slice(&9i64.to_be_bytes());
    bytes.extend_from_slice(&2i32.to_be_bytes());
    bytes.extend_from_slice(&77i64.to_be_bytes());
    let seal = |b: &mut Vec<u8>| {
        let crc = adler32(b);
        b.extend_from_slice(&i64::from(crc).to_be_bytes());
        b.extend_from_slice(&[0, 0, 0, 1, b'/']);
    };
    seal(&mut bytes);
    bytes.extend_from_slice(&11i64.to_be_bytes());
    seal(&mut bytes);
    bytes
}

/// The stream reads what the slice reader reads, on every prefix and every flipped byte.
#[test]
fn the_stream_agrees_with_the_slice_reader() {
    for bytes in [sample(), with_tail()] {
        let whole = by_stream(&bytes).unwrap();
        assert!(whole.1, "sealed");
        assert_eq!(Some(whole), by_slice(&bytes));
        for len in 0..bytes.len() {
            let cut = &bytes[..len];
            assert_eq!(by_stream(cut), by_slice(cut), "prefix of {len}");
        }
        for at in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[at] ^= 0x41;
            assert_eq!(by_stream(&bad), by_slice(&bad), "byte {at} flipped");
        }
    }
}

#[test]
fn a_hostile_length_in_the_stream_allocates_nothing_and_says_so() {
    let s = StatPersisted::default();
    let mut bytes = encode_snapshot(&[], &[("", &s)]);
    // The root's path length (after 16 + 4 + 4 bytes of head) made 2^31 - 1.
    bytes[24..28].copy_from_slice(&i32::MAX.to_be_bytes());
    let mut snap = SnapshotStream::new(&bytes[..]).unwrap();
    assert!(matches!(
        snap.next_node(),
        Err(SnapshotError::TooLong { offset: 24, .. })
    ));
    assert_eq!(snap.next_node(), Ok(None));
    assert!(!snap.is_sealed());
}

#[test]
fn a_child_before_its_parent_and_a_bad_magic_are_refused() {
    let s = StatPersisted::default();
    let bytes = encode_snapshot(&[], &[("", &s), ("/a/b", &s)]);
    let err = SnapshotReader::new(&bytes).unwrap().find_map(Result::err);
    assert!(matches!(err, Some(SnapshotError::Orphan { .. })), "{err:?}");
    let mut log = bytes.clone();
    log[..4].copy_from_slice(b"ZKLG");
    assert!(matches!(
        SnapshotReader::new(&log),
        Err(SnapshotError::BadMagic { .. })
    ));
}
