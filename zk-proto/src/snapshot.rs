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
//! Snapshots are written uncompressed unless `zookeeper.snapshot.compression.method` is set
//! (`snapshot.<zxid>.gz`, `.snappy`): this module reads uncompressed bytes only; a caller that
//! meets such a file decompresses it first or says it cannot.
//!
//! [`SnapshotReader`] reads the head at once and yields the nodes one at a time; it checks the
//! seal when the nodes end, so a caller trusts what it read only once the iterator has ended
//! without an error. [`SnapshotStream`] does the same from any [`std::io::BufRead`], one node
//! in memory at a time, the checksum kept as the bytes go by ([`crate::txnlog::Adler32`]).
//! Decoding is total: malformed bytes give a [`SnapshotError`] saying where.
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

use std::borrow::Cow;

use crate::codec::record;
use crate::records::Acl;
use crate::txnlog::adler32;
use crate::{Decode, DecodeError, Reader};

/// `"ZKSN"`, the first four bytes of every snapshot.
pub const MAGIC: i32 = i32::from_be_bytes(*b"ZKSN");

/// The only snapshot version ZooKeeper writes.
pub const VERSION: i32 = 2;

/// The `ephemeralOwner` of a container node (`EphemeralType.CONTAINER_EPHEMERAL_OWNER`).
pub const CONTAINER_OWNER: i64 = i64::MIN;

record! {
    /// A node's metadata as the server stores it (`StatPersisted`).
    StatPersisted "StatPersisted" {
        /// The zxid that created the node.
        czxid: i64 = "czxid",
        /// The zxid that last changed its data.
        mzxid: i64 = "mzxid",
        /// When it was created, in ms since the epoch (the leader's clock).
        ctime: i64 = "ctime",
        /// When its data last changed.
        mtime: i64 = "mtime",
        /// Its data's version.
        version: i32 = "version",
        /// Its children's version: the sequence counter of its sequential children.
        cversion: i32 = "cversion",
        /// Its ACL's version.
        aversion: i32 = "aversion",
        /// The session owning an ephemeral node; 0 for a persistent one,
        /// [`CONTAINER_OWNER`] for a container, a TTL marker (top byte `0xff`) for a TTL node.
        ephemeral_owner: i64 = "ephemeralOwner",
        /// The zxid that last changed its children.
        pzxid: i64 = "pzxid",
    }
}

record! {
    /// A live session in the snapshot, with its negotiated timeout in ms.
    SnapshotSession "session" {
        /// The session's id.
        id: i64 = "id",
        /// Its timeout in ms.
        timeout: i32 = "timeout",
    }
}

record! {
    /// The tree's digest at a zxid, after the first seal of a 3.6+ server's snapshot
    /// (`DataTree.ZxidDigest`, digest version 2 and later).
    ZxidDigest "ZxidDigest" {
        /// The zxid the digest is of (0: none was known).
        zxid: i64 = "zxid",
        /// The digest algorithm's version.
        digest_version: i32 = "digestVersion",
        /// The digest.
        digest: i64 = "digest",
    }
}

/// One node of the tree, as the snapshot holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotNode<'a> {
    /// Its path; the root's is `""`.
    pub path: Cow<'a, str>,
    /// Its data (`None`: null).
    pub data: Option<&'a [u8]>,
    /// Its ACL's key in the snapshot's ACL cache (-1: open).
    pub acl: i64,
    /// Its metadata.
    pub stat: StatPersisted,
}

/// Why a snapshot cannot be read (further). Every variant says where: `offset` counts bytes
/// from the start of the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SnapshotError {
    /// The file does not start with `ZKSN`: not an uncompressed snapshot (a gzip one starts
    /// with `1f 8b`, a log with `ZKLG`).
    #[error("not an uncompressed snapshot: magic {found:#010x} at offset 0 (expected \"ZKSN\")")]
    BadMagic {
        /// The first four bytes, big-endian.
        found: i32,
    },
    /// The header's version is not 2.
    #[error("snapshot version {found} at offset 4 (expected 2)")]
    BadVersion {
        /// The version read.
        found: i32,
    },
    /// A field does not decode (the file is cut short, or a length is out of range).
    #[error("at offset {offset}: {source}")]
    Decode {
        /// Where the record being read starts.
        offset: usize,
        /// What is wrong, with offsets from `offset`.
        source: DecodeError,
    },
    /// A seal's checksum does not match the bytes before it: the file is corrupt.
    #[error("seal at offset {offset}: checksum {stored:#x} stored, {computed:#x} computed")]
    Checksum {
        /// Where the seal starts.
        offset: usize,
        /// The checksum in the file.
        stored: i64,
        /// The Adler-32 of every byte before the seal.
        computed: u32,
    },
    /// A seal is not followed by the string `"/"`.
    #[error("seal at offset {offset} is not followed by \"/\"")]
    BadSeal {
        /// Where the seal starts.
        offset: usize,
    },
    /// A node's parent is not in the snapshot before it.
    #[error("node {path:?} at offset {offset} comes before its parent")]
    Orphan {
        /// The node's path.
        path: String,
        /// Where its record starts.
        offset: usize,
    },
    /// The reader given to [`SnapshotStream`] failed (other than by ending).
    #[error("reading at offset {offset}: {kind}: {message}")]
    Io {
        /// Where.
        offset: usize,
        /// The IO error's kind.
        kind: std::io::ErrorKind,
        /// Its message.
        message: String,
    },
    /// A string or buffer in a [`SnapshotStream`] announces more than [`MAX_FIELD_LEN`] bytes.
    #[error("{at}: length {len} at offset {offset} is negative or over the limit")]
    TooLong {
        /// The field.
        at: &'static str,
        /// Where its length starts.
        offset: usize,
        /// The length read.
        len: i32,
    },
    /// Bytes after the last seal that are not a digest or a last zxid with their seal.
    #[error("{extra} unexpected bytes after the seal ending at offset {offset}")]
    TrailingBytes {
        /// Where the last seal ends.
        offset: usize,
        /// How many bytes follow.
        extra: usize,
    },
}

/// Reads a snapshot's bytes: the header, the sessions and the ACL cache at once, then one
/// [`SnapshotNode`] per node as an iterator, then the seals.
///
/// The iterator yields the nodes in the file's order (each parent before its children), then
/// ends (`None`) once the seals checked out, or yields one error and ends. Until it has ended
/// without an error ([`SnapshotReader::is_sealed`]), nothing read is known to be intact.
#[derive(Debug, Clone)]
pub struct SnapshotReader<'a> {
    bytes: &'a [u8],
    offset: usize,
    dbid: i64,
    sessions: Vec<SnapshotSession>,
    acls: Vec<(i64, Vec<Acl>)>,
    /// The paths read so far, to check each node's parent came before it.
    seen: std::collections::HashSet<String>,
    digest: Option<ZxidDigest>,
    last_zxid: Option<i64>,
    state: State,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Nodes,
    Sealed,
    Failed,
}

impl<'a> SnapshotReader<'a> {
    /// Reads the header, the sessions and the ACL cache.
    ///
    /// # Errors
    /// [`SnapshotError::BadMagic`], [`SnapshotError::BadVersion`], or
    /// [`SnapshotError::Decode`] for a head cut short or malformed.
    pub fn new(bytes: &'a [u8]) -> Result<Self, SnapshotError> {
        let mut r = Reader::new(bytes);
        let at = |r: &Reader<'_>, source| SnapshotError::Decode {
            offset: r.offset(),
            source,
        };
        let magic = r.at("FileHeader.magic").i32().map_err(|e| at(&r, e))?;
        if magic != MAGIC {
            return Err(SnapshotError::BadMagic { found: magic });
        }
        let version = r.at("FileHeader.version").i32().map_err(|e| at(&r, e))?;
        if version != VERSION {
            return Err(SnapshotError::BadVersion { found: version });
        }
        let dbid = r.at("FileHeader.dbid").i64().map_err(|e| at(&r, e))?;
        let head = |r: &mut Reader<'a>| -> Result<_, DecodeError> {
            let n = r
                .at("sessions.count")
                .vector_len(SnapshotSession::MIN_LEN)?;
            let mut sessions = Vec::with_capacity(n);
            for _ in 0..n {
                sessions.push(SnapshotSession::decode(r)?);
            }
            let n = r.at("acls.map").vector_len(12)?;
            let mut acls = Vec::with_capacity(n);
            for _ in 0..n {
                let key = r.at("acls.long").i64()?;
                acls.push((key, Vec::<Acl>::decode(r.at("acls.acls"))?));
            }
            Ok((sessions, acls))
        };
        let (sessions, acls) =
            head(&mut r).map_err(|source| SnapshotError::Decode { offset: 0, source })?;
        Ok(SnapshotReader {
            bytes,
            offset: r.offset(),
            dbid,
            sessions,
            acls,
            seen: Default::default(),
            digest: None,
            last_zxid: None,
            state: State::Nodes,
        })
    }

    /// The database id in the file header.
    pub fn dbid(&self) -> i64 {
        self.dbid
    }

    /// The sessions alive when the snapshot was taken.
    pub fn sessions(&self) -> &[SnapshotSession] {
        &self.sessions
    }

    /// The ACL cache: each key the nodes refer to, with its ACL.
    pub fn acls(&self) -> &[(i64, Vec<Acl>)] {
        &self.acls
    }

    /// The digest after the first seal, once the iterator has ended (3.6+ with digests on).
    pub fn digest(&self) -> Option<&ZxidDigest> {
        self.digest.as_ref()
    }

    /// The last processed zxid a 3.9+ server appends, once the iterator has ended.
    pub fn last_zxid(&self) -> Option<i64> {
        self.last_zxid
    }

    /// Whether every node was read and every seal checked out.
    pub fn is_sealed(&self) -> bool {
        self.state == State::Sealed
    }

    /// Where the next record starts (once ended: where the file's bytes end, or where the bad
    /// record starts).
    pub fn offset(&self) -> usize {
        self.offset
    }

    fn rest(&self) -> &'a [u8] {
        self.bytes.get(self.offset..).unwrap_or_default()
    }

    fn decode_err(&self, source: DecodeError) -> SnapshotError {
        SnapshotError::Decode {
            offset: self.offset,
            source,
        }
    }

    /// Reads a seal at the current offset: checksum of every byte before it, then `"/"`.
    fn seal(&mut self) -> Result<(), SnapshotError> {
        let start = self.offset;
        let mut r = Reader::new(self.rest());
        let stored = r.at("seal.val").i64().map_err(|e| self.decode_err(e))?;
        let slash = r.at("seal.path").string().map_err(|e| self.decode_err(e))?;
        let computed = adler32(self.bytes.get(..start).unwrap_or_default());
        if stored != i64::from(computed) {
            return Err(SnapshotError::Checksum {
                offset: start,
                stored,
                computed,
            });
        }
        if slash != "/" {
            return Err(SnapshotError::BadSeal { offset: start });
        }
        self.offset += r.offset();
        Ok(())
    }

    /// After the nodes' `"/"`: the seal, then what 3.6+ and 3.9+ servers append.
    fn seals(&mut self) -> Result<(), SnapshotError> {
        self.seal()?;
        let bytes = self.bytes;
        self.tail_seals(|upto| adler32(bytes.get(..upto.len()).unwrap_or_default()))
    }

    /// What may follow the first seal, read from `self.bytes` at `self.offset`; `sum_to`
    /// gives the checksum of the file up to the start of the slice it is given (the bytes
    /// from the current start of `self.bytes`).
    fn tail_seals(&mut self, sum_to: impl Fn(&[u8]) -> u32) -> Result<(), SnapshotError> {
        // A seal at `self.offset`, checked against the checksum of every byte before it.
        let seal = |me: &mut Self| -> Result<(), SnapshotError> {
            let start = me.offset;
            let mut r = Reader::new(me.rest());
            let stored = r.at("seal.val").i64().map_err(|e| me.decode_err(e))?;
            let slash = r.at("seal.path").string().map_err(|e| me.decode_err(e))?;
            let computed = sum_to(me.bytes.get(..start).unwrap_or_default());
            if stored != i64::from(computed) {
                return Err(SnapshotError::Checksum {
                    offset: start,
                    stored,
                    computed,
                });
            }
            if slash != "/" {
                return Err(SnapshotError::BadSeal { offset: start });
            }
            me.offset += r.offset();
            Ok(())
        };
        // A digest (20 bytes) and its seal (13), if present.
        const SEAL_LEN: usize = 8 + 4 + 1;
        if self.rest().len() >= 20 + SEAL_LEN {
            let digest = ZxidDigest::decode(&mut Reader::new(self.rest()))
                .map_err(|e| self.decode_err(e))?;
            self.offset += 20;
            seal(self)?;
            self.digest = Some(digest);
        }
        if self.rest().len() == 8 + SEAL_LEN {
            let zxid = Reader::new(self.rest())
                .at("lastProcessedZxid")
                .i64()
                .map_err(|e| self.decode_err(e))?;
            self.offset += 8;
            seal(self)?;
            self.last_zxid = Some(zxid);
        }
        match self.rest().len() {
            0 => Ok(()),
            extra => Err(SnapshotError::TrailingBytes {
                offset: self.offset,
                extra,
            }),
        }
    }

    fn step(&mut self) -> Result<Option<SnapshotNode<'a>>, SnapshotError> {
        let mut r = Reader::new(self.rest());
        let path = r.at("node.path").string().map_err(|e| self.decode_err(e))?;
        if path == "/" {
            self.offset += r.offset();
            self.seals()?;
            return Ok(None);
        }
        let data = r.at("node.data").buffer().map_err(|e| self.decode_err(e))?;
        let acl = r.at("node.acl").i64().map_err(|e| self.decode_err(e))?;
        let stat = StatPersisted::decode(&mut r).map_err(|e| self.decode_err(e))?;
        if !path.is_empty() {
            let parent = path.rfind('/').and_then(|i| path.get(..i)).unwrap_or("");
            let parent = if parent.is_empty() { "" } else { parent };
            if !self.seen.contains(parent) {
                return Err(SnapshotError::Orphan {
                    path: path.into_owned(),
                    offset: self.offset,
                });
            }
        }
        self.seen.insert(path.clone().into_owned());
        self.offset += r.offset();
        Ok(Some(SnapshotNode {
            path,
            data,
            acl,
            stat,
        }))
    }
}

impl<'a> Iterator for SnapshotReader<'a> {
    type Item = Result<SnapshotNode<'a>, SnapshotError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.state != State::Nodes {
            return None;
        }
        match self.step() {
            Ok(Some(node)) => Some(Ok(node)),
            Ok(None) => {
                self.state = State::Sealed;
                None
            }
            Err(e) => {
                self.state = State::Failed;
                Some(Err(e))
            }
        }
    }
}

impl std::iter::FusedIterator for SnapshotReader<'_> {}

/// The longest string or node data [`SnapshotStream`] accepts (ZooKeeper refuses data over
/// `jute.maxbuffer`, 1 MiB by default): a longer length is [`SnapshotError::TooLong`], so a
/// corrupt length allocates nothing.
pub const MAX_FIELD_LEN: usize = 64 << 20;

/// A node read by [`SnapshotStream`], owning its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedSnapshotNode {
    /// Its path; the root's is `""`.
    pub path: String,
    /// Its data (`None`: null).
    pub data: Option<Vec<u8>>,
    /// Its ACL's key in the snapshot's ACL cache (-1: open).
    pub acl: i64,
    /// Its metadata.
    pub stat: StatPersisted,
}

/// Reads a snapshot from any [`std::io::BufRead`], one node at a time: the same checks as
/// [`SnapshotReader`] (the seals' checksums computed as the bytes go by, each node's parent
/// before it), in the memory of the head (sessions, ACL cache), the paths read (for the
/// parent check) and one node, so a snapshot larger than memory streams.
///
/// [`SnapshotStream::next_node`] gives `Ok(None)` once the seals checked out; an error ends
/// it.
///
/// # Examples
///
/// ```
/// use zk_proto::snapshot::{SnapshotStream, StatPersisted, encode_snapshot};
///
/// let s = StatPersisted::default();
/// let bytes = encode_snapshot(&[(7, 4000)], &[("", &s), ("/a", &s)]);
/// let mut snap = SnapshotStream::new(&bytes[..]).unwrap();
/// assert_eq!(snap.sessions()[0].id, 7);
/// assert_eq!(snap.next_node().unwrap().unwrap().path, "");
/// assert_eq!(snap.next_node().unwrap().unwrap().path, "/a");
/// assert!(snap.next_node().unwrap().is_none());
/// assert!(snap.is_sealed());
/// // Cut short: an error, not a panic.
/// let mut cut = SnapshotStream::new(&bytes[..bytes.len() - 3]).unwrap();
/// assert!((0..3).any(|_| cut.next_node().is_err()));
/// ```
#[derive(Debug)]
pub struct SnapshotStream<R> {
    input: R,
    offset: usize,
    sum: crate::txnlog::Adler32,
    dbid: i64,
    sessions: Vec<SnapshotSession>,
    acls: Vec<(i64, Vec<Acl>)>,
    seen: std::collections::HashSet<String>,
    digest: Option<ZxidDigest>,
    last_zxid: Option<i64>,
    state: State,
}

impl<R: std::io::BufRead> SnapshotStream<R> {
    /// Reads the header, the sessions and the ACL cache.
    ///
    /// # Errors
    /// As [`SnapshotReader::new`], and [`SnapshotError::Io`] if the input fails.
    pub fn new(input: R) -> Result<Self, SnapshotError> {
        let mut s = SnapshotStream {
            input,
            offset: 0,
            sum: crate::txnlog::Adler32::new(),
            dbid: 0,
            sessions: Vec::new(),
            acls: Vec::new(),
            seen: Default::default(),
            digest: None,
            last_zxid: None,
            state: State::Nodes,
        };
        let magic = s.i32("FileHeader.magic")?;
        if magic != MAGIC {
            return Err(SnapshotError::BadMagic { found: magic });
        }
        let version = s.i32("FileHeader.version")?;
        if version != VERSION {
            return Err(SnapshotError::BadVersion { found: version });
        }
        s.dbid = s.i64("FileHeader.dbid")?;
        let n = s.count("sessions.count")?;
        for _ in 0..n {
            let id = s.i64("session.id")?;
            let timeout = s.i32("session.timeout")?;
            s.sessions.push(SnapshotSession { id, timeout });
        }
        let n = s.count("acls.map")?;
        for _ in 0..n {
            let key = s.i64("acls.long")?;
            let m = s.count("acls.acls")?;
            let mut acl = Vec::new();
            for _ in 0..m {
                let perms = s.i32("ACL.perms")?;
                let scheme = s.string("Id.scheme")?;
                let id = s.string("Id.id")?;
                acl.push(Acl {
                    perms: crate::records::Perms(perms),
                    id: crate::records::Id::new(&scheme, &id),
                });
            }
            s.acls.push((key, acl));
        }
        Ok(s)
    }

    /// The database id in the file header.
    pub fn dbid(&self) -> i64 {
        self.dbid
    }

    /// The sessions alive when the snapshot was taken.
    pub fn sessions(&self) -> &[SnapshotSession] {
        &self.sessions
    }

    /// The ACL cache.
    pub fn acls(&self) -> &[(i64, Vec<Acl>)] {
        &self.acls
    }

    /// The digest after the first seal, once the nodes have ended.
    pub fn digest(&self) -> Option<&ZxidDigest> {
        self.digest.as_ref()
    }

    /// The last processed zxid a 3.9+ server appends, once the nodes have ended.
    pub fn last_zxid(&self) -> Option<i64> {
        self.last_zxid
    }

    /// Whether every node was read and every seal checked out.
    pub fn is_sealed(&self) -> bool {
        self.state == State::Sealed
    }

    /// Bytes read so far.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// The next node; `Ok(None)` once the nodes ended and the seals checked out.
    ///
    /// # Errors
    /// As [`SnapshotReader`]'s items; after an error, every call gives `Ok(None)`.
    pub fn next_node(&mut self) -> Result<Option<OwnedSnapshotNode>, SnapshotError> {
        if self.state != State::Nodes {
            return Ok(None);
        }
        let step = self.step();
        match &step {
            Ok(None) => self.state = State::Sealed,
            Err(_) => self.state = State::Failed,
            Ok(Some(_)) => {}
        }
        step
    }

    fn step(&mut self) -> Result<Option<OwnedSnapshotNode>, SnapshotError> {
        let start = self.offset;
        let path = self.string("node.path")?;
        if path == "/" {
            self.seals()?;
            return Ok(None);
        }
        let data = self.buffer("node.data")?;
        let acl = self.i64("node.acl")?;
        let mut stat = [0u8; 60];
        self.read(&mut stat, "StatPersisted")?;
        let stat = StatPersisted::decode(&mut Reader::new(&stat)).map_err(|source| {
            SnapshotError::Decode {
                offset: start,
                source,
            }
        })?;
        if !path.is_empty() {
            let parent = path.rfind('/').and_then(|i| path.get(..i)).unwrap_or("");
            if !self.seen.contains(parent) {
                return Err(SnapshotError::Orphan {
                    path,
                    offset: start,
                });
            }
        }
        self.seen.insert(path.clone());
        Ok(Some(OwnedSnapshotNode {
            path,
            data,
            acl,
            stat,
        }))
    }

    fn seal(&mut self) -> Result<(), SnapshotError> {
        let start = self.offset;
        let computed = self.sum.value();
        let stored = self.i64("seal.val")?;
        let slash = self.string("seal.path")?;
        if stored != i64::from(computed) {
            return Err(SnapshotError::Checksum {
                offset: start,
                stored,
                computed,
            });
        }
        if slash != "/" {
            return Err(SnapshotError::BadSeal { offset: start });
        }
        Ok(())
    }

    fn seals(&mut self) -> Result<(), SnapshotError> {
        self.seal()?;
        // What follows, if anything: a digest and its seal (33 bytes), then a last zxid and
        // its seal (21), as in the slice reader.
        let mut rest = Vec::new();
        let mut limited = std::io::Read::take(&mut self.input, 64);
        std::io::Read::read_to_end(&mut limited, &mut rest).map_err(|e| self.io(&e))?;
        let base = self.offset;
        let mut tail = SnapshotReader {
            bytes: &rest,
            offset: 0,
            dbid: self.dbid,
            sessions: Vec::new(),
            acls: Vec::new(),
            seen: Default::default(),
            digest: None,
            last_zxid: None,
            state: State::Nodes,
        };
        let sum = self.sum;
        let result = tail.tail_seals(|upto| {
            let mut s = sum;
            s.update(upto);
            s.value()
        });
        self.offset = base + tail.offset;
        self.digest = tail.digest;
        self.last_zxid = tail.last_zxid;
        result.map_err(|e| shift(e, base))
    }

    fn io(&self, e: &std::io::Error) -> SnapshotError {
        SnapshotError::Io {
            offset: self.offset,
            kind: e.kind(),
            message: e.to_string(),
        }
    }

    fn read(&mut self, buf: &mut [u8], at: &'static str) -> Result<(), SnapshotError> {
        let mut got = 0;
        while let Some(rest) = buf.get_mut(got..) {
            if rest.is_empty() {
                break;
            }
            match self.input.read(rest) {
                Ok(0) => {
                    return Err(SnapshotError::Decode {
                        offset: self.offset,
                        source: DecodeError::UnexpectedEnd {
                            at,
                            offset: got,
                            needed: rest.len(),
                        },
                    });
                }
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.io(&e)),
            }
        }
        self.sum.update(buf);
        self.offset += buf.len();
        Ok(())
    }

    fn i32(&mut self, at: &'static str) -> Result<i32, SnapshotError> {
        let mut b = [0u8; 4];
        self.read(&mut b, at)?;
        Ok(i32::from_be_bytes(b))
    }

    fn i64(&mut self, at: &'static str) -> Result<i64, SnapshotError> {
        let mut b = [0u8; 8];
        self.read(&mut b, at)?;
        Ok(i64::from_be_bytes(b))
    }

    /// A vector's count; elements are read one by one, so it allocates nothing itself.
    fn count(&mut self, at: &'static str) -> Result<usize, SnapshotError> {
        let offset = self.offset;
        let n = self.i32(at)?;
        usize::try_from(n).map_err(|_| SnapshotError::TooLong { at, offset, len: n })
    }

    fn bytes(&mut self, at: &'static str, null: bool) -> Result<Option<Vec<u8>>, SnapshotError> {
        let offset = self.offset;
        let len = self.i32(at)?;
        if len == -1 && null {
            return Ok(None);
        }
        let n = match usize::try_from(len) {
            Ok(n) if n <= MAX_FIELD_LEN => n,
            _ => return Err(SnapshotError::TooLong { at, offset, len }),
        };
        // Grown as the bytes arrive, in pieces: a length past the end allocates little.
        let mut out = Vec::new();
        let mut piece = [0u8; 4096];
        while out.len() < n {
            let k = (n - out.len()).min(piece.len());
            let buf = piece.get_mut(..k).unwrap_or_default();
            self.read(buf, at)?;
            out.extend_from_slice(buf);
        }
        Ok(Some(out))
    }

    fn buffer(&mut self, at: &'static str) -> Result<Option<Vec<u8>>, SnapshotError> {
        self.bytes(at, true)
    }

    fn string(&mut self, at: &'static str) -> Result<String, SnapshotError> {
        let offset = self.offset;
        let bytes = self.bytes(at, false)?.unwrap_or_default();
        crate::java_utf8::decode(&bytes)
            .map(std::borrow::Cow::into_owned)
            .ok_or(SnapshotError::Decode {
                offset,
                source: DecodeError::BadUtf8 { at, offset: 0 },
            })
    }
}

/// `e` with its offsets counted from `base` bytes earlier.
fn shift(e: SnapshotError, base: usize) -> SnapshotError {
    use SnapshotError::*;
    match e {
        Decode { offset, source } => Decode {
            offset: offset + base,
            source,
        },
        Checksum {
            offset,
            stored,
            computed,
        } => Checksum {
            offset: offset + base,
            stored,
            computed,
        },
        BadSeal { offset } => BadSeal {
            offset: offset + base,
        },
        TrailingBytes { offset, extra } => TrailingBytes {
            offset: offset + base,
            extra,
        },
        other => other,
    }
}

/// The bytes of a snapshot holding `sessions` (id, timeout) and `nodes` (path, stat; root
/// `""` first, parents before children), with null data, the open ACL key -1, an empty ACL
/// cache, and a first seal: for tests of readers.
pub fn encode_snapshot(sessions: &[(i64, i32)], nodes: &[(&str, &StatPersisted)]) -> Vec<u8> {
    use crate::Encode;
    let mut out = bytes::BytesMut::new();
    let put_str = |out: &mut bytes::BytesMut, s: &str| {
        out.extend_from_slice(&i32::try_from(s.len()).unwrap_or(i32::MAX).to_be_bytes());
        out.extend_from_slice(s.as_bytes());
    };
    out.extend_from_slice(&MAGIC.to_be_bytes());
    out.extend_from_slice(&VERSION.to_be_bytes());
    out.extend_from_slice(&(-1i64).to_be_bytes());
    out.extend_from_slice(&i32::try_from(sessions.len()).unwrap_or(0).to_be_bytes());
    for (id, timeout) in sessions {
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&timeout.to_be_bytes());
    }
    out.extend_from_slice(&0i32.to_be_bytes()); // the ACL cache
    for (path, stat) in nodes {
        put_str(&mut out, path);
        out.extend_from_slice(&(-1i32).to_be_bytes()); // null data
        out.extend_from_slice(&(-1i64).to_be_bytes());
        // StatPersisted has fixed-size fields only: its encoding cannot fail.
        let _ = stat.encode(&mut out);
    }
    put_str(&mut out, "/");
    let crc = adler32(&out);
    out.extend_from_slice(&i64::from(crc).to_be_bytes());
    put_str(&mut out, "/");
    out.to_vec()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

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
}
