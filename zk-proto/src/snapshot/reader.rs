//! [`SnapshotReader`]: a snapshot in memory, read as an iterator of borrowed nodes.

use super::decoder::{Decoder, State};
use super::source::{SliceSource, Source};
use super::{SnapshotError, SnapshotNode, SnapshotSession, ZxidDigest};
use crate::records::Acl;

/// Reads a snapshot's bytes: the header, the sessions and the ACL cache at once, then one
/// [`SnapshotNode`] per node as an iterator, then the seals.
///
/// The iterator yields the nodes in the file's order (each parent before its children), then
/// ends (`None`) once the seals checked out, or yields one error and ends. Until it has ended
/// without an error ([`SnapshotReader::is_sealed`]), nothing read is known to be intact.
#[derive(Debug, Clone)]
pub struct SnapshotReader<'a> {
    dec: Decoder<SliceSource<'a>>,
}

impl<'a> SnapshotReader<'a> {
    /// Reads the header, the sessions and the ACL cache.
    ///
    /// # Errors
    /// [`SnapshotError::BadMagic`], [`SnapshotError::BadVersion`], or
    /// [`SnapshotError::Decode`] for a head cut short or malformed.
    pub fn new(bytes: &'a [u8]) -> Result<Self, SnapshotError> {
        Ok(SnapshotReader {
            dec: Decoder::new(SliceSource::new(bytes))?,
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

    /// The ACL cache: each key the nodes refer to, with its ACL.
    pub fn acls(&self) -> &[(i64, Vec<Acl>)] {
        &self.dec.acls
    }

    /// The digest after the first seal, once the iterator has ended (3.6+ with digests on).
    pub fn digest(&self) -> Option<&ZxidDigest> {
        self.dec.digest.as_ref()
    }

    /// The last processed zxid a 3.9+ server appends, once the iterator has ended.
    pub fn last_zxid(&self) -> Option<i64> {
        self.dec.last_zxid
    }

    /// Whether every node was read and every seal checked out.
    pub fn is_sealed(&self) -> bool {
        self.dec.state == State::Sealed
    }

    /// Where the next record starts (once ended: where the file's bytes end, or where the bad
    /// record starts).
    pub fn offset(&self) -> usize {
        self.dec.end.unwrap_or(match self.dec.state {
            State::Failed => self.dec.src.record_start(),
            State::Nodes | State::Sealed => self.dec.src.offset(),
        })
    }
}

impl<'a> Iterator for SnapshotReader<'a> {
    type Item = Result<SnapshotNode<'a>, SnapshotError>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.dec.next_node() {
            Ok(Some((path, data, acl, stat))) => Some(Ok(SnapshotNode {
                path,
                data,
                acl,
                stat,
            })),
            Ok(None) => None,
            Err(e) => Some(Err(e)),
        }
    }
}

impl std::iter::FusedIterator for SnapshotReader<'_> {}
