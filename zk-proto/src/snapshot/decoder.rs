//! The snapshot's grammar, read once for both readers: the head (file header, sessions, ACL
//! cache), the nodes with their parent check, and the seals with what may follow them.
//!
//! - Each node's parent must come before it; the end of the nodes is the path `"/"`.
//! - A seal's checksum covers every byte of the file before it.
//! - After an error, or once sealed, nothing more is read.

use super::source::Source;
use super::{MAGIC, SnapshotError, SnapshotSession, StatPersisted, VERSION, ZxidDigest};
use crate::records::{Acl, Id, Perms};
use crate::txnlog::Adler32;
use crate::{Decode, Reader};

/// A node as a source reads it: path, data, ACL key, metadata.
pub(super) type Node<S> = (
    <S as Source>::Str,
    Option<<S as Source>::Buf>,
    i64,
    StatPersisted,
);

/// A snapshot being read from a [`Source`]: its head, and where the nodes are.
#[derive(Debug, Clone)]
pub(super) struct Decoder<S> {
    pub(super) src: S,
    pub(super) dbid: i64,
    pub(super) sessions: Vec<SnapshotSession>,
    pub(super) acls: Vec<(i64, Vec<Acl>)>,
    /// The paths read so far, to check each node's parent came before it.
    seen: std::collections::HashSet<String>,
    pub(super) digest: Option<ZxidDigest>,
    pub(super) last_zxid: Option<i64>,
    pub(super) state: State,
    /// Where the bytes after the first seal were read up to (or where the bad one starts).
    pub(super) end: Option<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum State {
    Nodes,
    Sealed,
    Failed,
}

impl<S: Source> Decoder<S> {
    /// Reads the header, the sessions and the ACL cache.
    pub(super) fn new(mut src: S) -> Result<Self, SnapshotError> {
        let magic = src.i32("FileHeader.magic")?;
        if magic != MAGIC {
            return Err(SnapshotError::BadMagic { found: magic });
        }
        let version = src.i32("FileHeader.version")?;
        if version != VERSION {
            return Err(SnapshotError::BadVersion { found: version });
        }
        let dbid = src.i64("FileHeader.dbid")?;
        let n = src.count("sessions.count", SnapshotSession::MIN_LEN)?;
        // `n` is bounded by the bytes present (slice) or read one by one (stream).
        let mut sessions = Vec::new();
        for _ in 0..n {
            let id = src.i64("session.id")?;
            let timeout = src.i32("session.timeout")?;
            sessions.push(SnapshotSession { id, timeout });
        }
        let n = src.count("acls.map", 12)?;
        let mut acls = Vec::new();
        for _ in 0..n {
            let key = src.i64("acls.long")?;
            let m = src.count("acls.acls", Acl::MIN_LEN)?;
            let mut acl = Vec::new();
            for _ in 0..m {
                let perms = src.i32("ACL.perms")?;
                let scheme = src.string("Id.scheme")?;
                let id = src.string("Id.id")?;
                acl.push(Acl {
                    perms: Perms(perms),
                    id: Id::new(scheme.as_ref(), id.as_ref()),
                });
            }
            acls.push((key, acl));
        }
        Ok(Decoder {
            src,
            dbid,
            sessions,
            acls,
            seen: Default::default(),
            digest: None,
            last_zxid: None,
            state: State::Nodes,
            end: None,
        })
    }

    /// The next node; `Ok(None)` once the seals checked out, and after an error.
    pub(super) fn next_node(&mut self) -> Result<Option<Node<S>>, SnapshotError> {
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

    fn step(&mut self) -> Result<Option<Node<S>>, SnapshotError> {
        self.src.begin_record();
        let start = self.src.offset();
        let path = self.src.string("node.path")?;
        if path.as_ref() == "/" {
            self.seals()?;
            return Ok(None);
        }
        let data = self.src.buffer("node.data")?;
        let acl = self.src.i64("node.acl")?;
        let stat = self.src.stat()?;
        let p = path.as_ref();
        if !p.is_empty() {
            let parent = p.rfind('/').and_then(|i| p.get(..i)).unwrap_or("");
            if !self.seen.contains(parent) {
                return Err(SnapshotError::Orphan {
                    path: p.to_owned(),
                    offset: start,
                });
            }
        }
        self.seen.insert(p.to_owned());
        Ok(Some((path, data, acl, stat)))
    }

    /// After the nodes' `"/"`: the seal, then what 3.6+ and 3.9+ servers append.
    fn seals(&mut self) -> Result<(), SnapshotError> {
        self.src.begin_record();
        let start = self.src.offset();
        let computed = self.src.checksum();
        let stored = self.src.i64("seal.val")?;
        let slash = self.src.string("seal.path")?;
        check_seal(start, stored, computed, slash.as_ref())?;
        let base = self.src.offset();
        let (rest, sum) = self.src.rest()?;
        let tail = Tail::read(&rest, base, sum);
        self.end = Some(tail.end);
        self.digest = tail.digest;
        self.last_zxid = tail.last_zxid;
        tail.result
    }
}

/// A seal read at `offset`: its checksum must be `computed`, its string `"/"`.
fn check_seal(offset: usize, stored: i64, computed: u32, slash: &str) -> Result<(), SnapshotError> {
    if stored != i64::from(computed) {
        return Err(SnapshotError::Checksum {
            offset,
            stored,
            computed,
        });
    }
    if slash != "/" {
        return Err(SnapshotError::BadSeal { offset });
    }
    Ok(())
}

/// What follows the first seal: a digest and its seal (3.6+), a last zxid and its seal (3.9+).
struct Tail {
    digest: Option<ZxidDigest>,
    last_zxid: Option<i64>,
    /// Where the last part read ends, or where the bad one starts.
    end: usize,
    result: Result<(), SnapshotError>,
}

impl Tail {
    /// Reads `rest`, the bytes from offset `base` on; `sum` is the checksum of those before.
    fn read(rest: &[u8], base: usize, sum: Adler32) -> Tail {
        let mut tail = Tail {
            digest: None,
            last_zxid: None,
            end: base,
            result: Ok(()),
        };
        let mut at = 0;
        tail.result = tail.parts(rest, &mut at, base, sum);
        tail.end = base + at;
        tail
    }

    fn parts(
        &mut self,
        rest: &[u8],
        at: &mut usize,
        base: usize,
        sum: Adler32,
    ) -> Result<(), SnapshotError> {
        let left = |at: usize| rest.get(at..).unwrap_or_default();
        let decode_err = |at: usize, source| SnapshotError::Decode {
            offset: base + at,
            source,
        };
        // A seal at `at`, checked against the checksum of every byte before it.
        let seal = |at: &mut usize| -> Result<(), SnapshotError> {
            let start = *at;
            let mut r = Reader::new(left(start));
            let stored = r.at("seal.val").i64().map_err(|e| decode_err(start, e))?;
            let slash = r
                .at("seal.path")
                .string()
                .map_err(|e| decode_err(start, e))?;
            let mut s = sum;
            s.update(rest.get(..start).unwrap_or_default());
            check_seal(base + start, stored, s.value(), &slash)?;
            *at += r.offset();
            Ok(())
        };
        // A digest (20 bytes) and its seal (13), if present.
        const SEAL_LEN: usize = 8 + 4 + 1;
        if left(*at).len() >= 20 + SEAL_LEN {
            let digest =
                ZxidDigest::decode(&mut Reader::new(left(*at))).map_err(|e| decode_err(*at, e))?;
            *at += 20;
            seal(at)?;
            self.digest = Some(digest);
        }
        if left(*at).len() == 8 + SEAL_LEN {
            let zxid = Reader::new(left(*at))
                .at("lastProcessedZxid")
                .i64()
                .map_err(|e| decode_err(*at, e))?;
            *at += 8;
            seal(at)?;
            self.last_zxid = Some(zxid);
        }
        match left(*at).len() {
            0 => Ok(()),
            extra => Err(SnapshotError::TrailingBytes {
                offset: base + *at,
                extra,
            }),
        }
    }
}
