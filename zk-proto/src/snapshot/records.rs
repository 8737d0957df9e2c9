//! The snapshot's records: a node's [`StatPersisted`], a [`SnapshotSession`], the
//! [`ZxidDigest`] after the first seal, and a node as each reader yields it.

use std::borrow::Cow;

use crate::codec::record;

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
        /// [`CONTAINER_OWNER`](super::CONTAINER_OWNER) for a container, a TTL marker (top
        /// byte `0xff`) for a TTL node.
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

/// A node read by [`SnapshotStream`](super::SnapshotStream), owning its bytes.
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
