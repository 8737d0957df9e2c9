//! [`Op`] and [`Reply`]: what a lock machine asks of ZooKeeper, and what it is told back.

use bytes::Bytes;

/// A ZooKeeper operation a machine asks its driver to run. The driver sends the ops of one
/// answer in order without waiting between them (ZooKeeper answers a session's requests in
/// order), and feeds each result back, in the same order, as a [`Reply`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// Create `path` (a node-name prefix) as `EPHEMERAL_SEQUENTIAL` with `data` and an open
    /// ACL, returning the created path and its creation zxid (`create2`).
    /// Reply: [`Reply::Created`].
    Create {
        /// `<base>/_c_<uuid>-<lockName>`.
        path: String,
        /// The node's data.
        data: Bytes,
    },
    /// List `path`'s children, without a watch. Reply: [`Reply::Children`].
    Children {
        /// The lock's base path.
        path: String,
    },
    /// Read `path` leaving a data watch (`getData`, never `exists`, so no watch lingers on a
    /// node already gone). Reply: [`Reply::Watching`]; the watch's event is
    /// [`crate::AcquireMachine::on_watch`].
    Watch {
        /// The node to wait on.
        path: String,
    },
    /// Read `path`'s creation zxid (for a node found again after a lost create reply).
    /// Reply: [`Reply::Stat`].
    Stat {
        /// Our node.
        path: String,
    },
    /// Create every missing ancestor of `path`, and `path` itself, as container nodes,
    /// ignoring `NodeExists`. Reply: [`Reply::Done`].
    CreateParents {
        /// The lock's base path.
        path: String,
    },
    /// Delete `path` (any version); `NoNode` counts as done. Reply: [`Reply::Done`].
    Delete {
        /// Our node.
        path: String,
    },
}

/// The result of an [`Op`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// The node was created.
    Created {
        /// Its full path, with the sequence number.
        path: String,
        /// Its creation zxid.
        czxid: i64,
    },
    /// The children's names.
    Children(Vec<String>),
    /// The watch is set.
    Watching,
    /// The node's creation zxid.
    Stat {
        /// The zxid.
        czxid: i64,
    },
    /// Done (parents created, node deleted).
    Done,
    /// The op failed.
    Failed(ZkError),
}

/// The failures a machine tells apart. The driver keeps the full error for anything reported
/// as [`ZkError::Other`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZkError {
    /// The node (or its parent) does not exist.
    NoNode,
    /// The connection was lost: the op may or may not have been applied.
    ConnectionLoss,
    /// The session expired: our ephemeral nodes are gone.
    SessionExpired,
    /// Anything else (no permission, read-only server, closed client, ...): the attempt fails
    /// with it.
    Other,
}

/// What a machine knows of the session, from the client's state changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Connection {
    /// Connected (again); ops can run.
    Connected,
    /// The connection is gone; the session may be alive.
    Disconnected,
    /// No server answered for the session timeout: the session is almost surely expired.
    Lost,
    /// The session expired (or was closed): every ephemeral node of ours is gone.
    Expired,
}
