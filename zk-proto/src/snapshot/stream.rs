//! [`SnapshotStream`]: a snapshot read from an [`std::io::BufRead`], one owned node at a time.

use super::decoder::{Decoder, State};
use super::source::{ReadSource, Source};
use super::{OwnedSnapshotNode, SnapshotError, SnapshotSession, ZxidDigest};
use crate::records::Acl;

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
///
/// [`SnapshotReader`]: super::SnapshotReader
#[derive(Debug)]
pub struct SnapshotStream<R> {
    dec: Decoder<ReadSource<R>>,
}

impl<R: std::io::BufRead> SnapshotStream<R> {
    /// Reads the header, the sessions and the ACL cache.
    ///
    /// # Errors
    /// As [`SnapshotReader::new`], and [`SnapshotError::Io`] if the input fails.
    ///
    /// [`SnapshotReader::new`]: super::SnapshotReader::new
    pub fn new(input: R) -> Result<Self, SnapshotError> {
        Ok(SnapshotStream {
            dec: Decoder::new(ReadSource::new(input))?,
        })
    }

    /// The database id in the file header.
    pub fn dbid(&self) -> i64 {
        self.dec.dbid
    }

    /// The sessions alive when the snapshot was taken.
    pub fn sessions(&self) -> &[SnapshotSession] {
        &self.dec.sessions
    }

    /// The ACL cache.
    pub fn acls(&self) -> &[(i64, Vec<Acl>)] {
        &self.dec.acls
    }

    /// The digest after the first seal, once the nodes have ended.
    pub fn digest(&self) -> Option<&ZxidDigest> {
        self.dec.digest.as_ref()
    }

    /// The last processed zxid a 3.9+ server appends, once the nodes have ended.
    pub fn last_zxid(&self) -> Option<i64> {
        self.dec.last_zxid
    }

    /// Whether every node was read and every seal checked out.
    pub fn is_sealed(&self) -> bool {
        self.dec.state == State::Sealed
    }

    /// Bytes read so far.
    pub fn offset(&self) -> usize {
        self.dec.end.unwrap_or(self.dec.src.offset())
    }

    /// The next node; `Ok(None)` once the nodes ended and the seals checked out.
    ///
    /// # Errors
    /// As [`SnapshotReader`]'s items; after an error, every call gives `Ok(None)`.
    ///
    /// [`SnapshotReader`]: super::SnapshotReader
    pub fn next_node(&mut self) -> Result<Option<OwnedSnapshotNode>, SnapshotError> {
        Ok(self
            .dec
            .next_node()?
            .map(|(path, data, acl, stat)| OwnedSnapshotNode {
                path,
                data,
                acl,
                stat,
            }))
    }
}
