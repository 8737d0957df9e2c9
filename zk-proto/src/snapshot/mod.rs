//! ZooKeeper's snapshot (`dataDir/version-2/snapshot.<zxid>`), read: the sessions, the ACL
//! cache and every node of the tree, with the checksum that seals them.
//!
//! A snapshot is the server's whole tree at (about) one zxid; the transaction logs hold what
//! came after. Logs are purged together with old snapshots, so whoever reconstructs history
//! starts from a snapshot and replays the logs from its zxid on. A snapshot is *fuzzy*: the
//! server keeps applying transactions while it writes one, so a node made after the zxid in
//! the file's name may be in it (replaying such a create again is what ZooKeeper itself does).
//!
//! # The format (ZooKeeper 3.8: `FileSnap`, `SerializeUtils`, `DataTree`,
//! `ReferenceCountedACLCache`, `SnapStream`)
//!
//! ```text
//! file     = FileHeader sessions acls node* "/" seal [ZxidDigest seal] [lastZxid seal]
//! FileHeader = magic "ZKSN" (i32), version 2 (i32), dbid (i64)
//! sessions = count (i32), count x (id i64, timeout i32)
//! acls     = count (i32), count x (key i64, vector<ACL>)
//! node     = path (ustring; the root is "") data (buffer) acl (i64, a key of the cache)
//!            StatPersisted
//! seal     = the Adler-32 of every byte before it (i64), then the string "/"
//! ```
//!
//! The nodes come parent before child, the end marked by the path `"/"`. A server with
//! digests on (the default) appends its last zxid digest and a second seal; a 3.9 server may
//! append its last processed zxid and a third. Each seal's checksum covers every byte of the
//! file before it (earlier seals included).
//!
//! Snapshots are written uncompressed unless `zookeeper.snapshot.compression.method` is set:
//! `gz` (`snapshot.<zxid>.gz`, Java's `GZIPOutputStream`) or `snappy` (`snapshot.<zxid>.snappy`,
//! snappy-java's `SnappyOutputStream`). The format above is then what the file decompresses
//! to, and the seals' checksums cover the decompressed bytes. [`GzipDecoder`] and
//! [`SnappyDecoder`] decompress as the bytes are read (bounded memory, no dependency),
//! [`Decompressed`] picks one by [`Compression`] (from the file name's suffix), and a
//! [`SnapshotStream`] reads through any of them; a fault in the compressed bytes is
//! [`SnapshotError::Decompress`], with both offsets.
//!
//! [`SnapshotReader`] reads the head at once and yields the nodes one at a time; it checks the
//! seal when the nodes end, so a caller trusts what it read only once the iterator has ended
//! without an error. [`SnapshotStream`] does the same from any [`std::io::BufRead`], one node
//! in memory at a time, the checksum kept as the bytes go by ([`crate::txnlog::Adler32`]).
//! Both read the format with one decoder, over a slice or over a reader. Decoding is total:
//! malformed bytes give a [`SnapshotError`] saying where.
//!
//! # Examples
//!
//! ```
//! use zk_proto::snapshot::{SnapshotError, SnapshotReader, StatPersisted, encode_snapshot};
//!
//! let root = StatPersisted::default();
//! let lock = StatPersisted { czxid: 5, ephemeral_owner: 0x77, ..StatPersisted::default() };
//! let bytes = encode_snapshot(&[(0x77, 30_000)], &[("", &root), ("/lock", &lock)]);
//!
//! let mut snap = SnapshotReader::new(&bytes).unwrap();
//! assert_eq!(snap.sessions()[0].id, 0x77);
//! let nodes: Vec<_> = snap.by_ref().collect::<Result<_, _>>().unwrap();
//! assert_eq!(nodes[1].path, "/lock");
//! assert_eq!(nodes[1].stat.ephemeral_owner, 0x77);
//! assert!(snap.is_sealed());
//!
//! // One flipped bit in a node: the seal says so.
//! let mut bad = bytes.clone();
//! let at = bad.len() - 30;
//! bad[at] ^= 1;
//! let err = SnapshotReader::new(&bad).unwrap().find_map(Result::err).unwrap();
//! assert!(matches!(err, SnapshotError::Checksum { .. }), "{err}");
//! ```

mod compression;
mod decoder;
#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod decompress_tests;
mod encode;
mod error;
mod inflate;
mod reader;
mod records;
mod snappy;
mod source;
mod stream;
#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests;

pub use compression::{Compression, Decompressed};
pub use encode::encode_snapshot;
pub use error::{DecompressError, SnapshotError};
pub use inflate::GzipDecoder;
pub use reader::SnapshotReader;
pub use records::{OwnedSnapshotNode, SnapshotNode, SnapshotSession, StatPersisted, ZxidDigest};
pub use snappy::SnappyDecoder;
pub use stream::SnapshotStream;

/// `"ZKSN"`, the first four bytes of every snapshot.
pub const MAGIC: i32 = i32::from_be_bytes(*b"ZKSN");

/// The only snapshot version ZooKeeper writes.
pub const VERSION: i32 = 2;

/// The `ephemeralOwner` of a container node (`EphemeralType.CONTAINER_EPHEMERAL_OWNER`).
pub const CONTAINER_OWNER: i64 = i64::MIN;

/// The longest string or node data [`SnapshotStream`] accepts (ZooKeeper refuses data over
/// `jute.maxbuffer`, 1 MiB by default): a longer length is [`SnapshotError::TooLong`], so a
/// corrupt length allocates nothing.
pub const MAX_FIELD_LEN: usize = 64 << 20;

/// The longest snappy block [`SnappyDecoder`] accepts, decompressed (ZooKeeper's
/// `SnappyOutputStream` writes 32 KiB blocks; snappy-java allows up to 512 MiB): a longer
/// length is [`DecompressError::TooLong`], so a corrupt length allocates nothing.
pub const MAX_SNAPPY_BLOCK: usize = 16 << 20;
