//! [`Op`] and [`Reply`]: what a machine asks of ZooKeeper, and what it is told back; the watch
//! events and connection changes it is fed.

use bytes::Bytes;

/// How a node is created.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NodeMode {
    /// `EPHEMERAL_SEQUENTIAL`: the server appends a 10-digit sequence (lock nodes, leases).
    EphemeralSequential,
    /// `EPHEMERAL` with the exact name given (the read/write lock's downgrade node).
    Ephemeral,
}

/// A ZooKeeper operation a machine asks its driver to run.
///
/// The driver sends the ops in the order the machine gives them, without waiting between
/// them (ZooKeeper answers a session's requests in order), and feeds each result back, in the
/// same order, as [`Input::Reply`](crate::Input::Reply). An op with `watch: true` leaves a
/// one-shot watch when it succeeds (and, for [`Op::Exists`], also when the node is missing);
/// its event comes back as [`Input::Watch`](crate::Input::Watch).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// Create `path` with `data` and an open ACL (`create2`, so the creation zxid comes back).
    /// For [`NodeMode::EphemeralSequential`] `path` is a name prefix. Reply:
    /// [`Reply::Created`].
    Create {
        /// The node's path, or its prefix for a sequential node.
        path: String,
        /// The mode.
        mode: NodeMode,
        /// The node's data.
        data: Bytes,
    },
    /// List `path`'s children, leaving a children watch if `watch`. Reply: [`Reply::Children`].
    Children {
        /// The parent.
        path: String,
        /// Leave a children watch.
        watch: bool,
    },
    /// Read `path`'s data, leaving a data watch if `watch` (`getData`, so no watch lingers on
    /// a node already gone). Reply: [`Reply::Data`].
    GetData {
        /// The node.
        path: String,
        /// Leave a data watch.
        watch: bool,
    },
    /// Whether `path` exists, leaving an exists watch if `watch` (set even when it does not).
    /// Reply: [`Reply::Exists`].
    Exists {
        /// The node.
        path: String,
        /// Leave an exists watch.
        watch: bool,
    },
    /// `sync(path)`: the server we talk to catches up with the leader before our next read, so
    /// a listing after it sees every write committed before it. Reply: [`Reply::Done`].
    Sync {
        /// The path to sync.
        path: String,
    },
    /// Delete `path` (any version). Reply: [`Reply::Done`], or `Failed(NoNode)`.
    Delete {
        /// The node.
        path: String,
    },
    /// Create every missing ancestor of `path`, and `path` itself, as container nodes,
    /// checking each one's existence first (so a client that may not create in `/` still
    /// works when the ancestors exist). Reply: [`Reply::Done`].
    CreateParents {
        /// The lock's base path.
        path: String,
    },
}

impl Op {
    /// Whether this op leaves a watch when it succeeds.
    pub fn watches(&self) -> bool {
        match self {
            Op::Children { watch, .. } | Op::GetData { watch, .. } | Op::Exists { watch, .. } => {
                *watch
            }
            _ => false,
        }
    }

    /// The kind of watch this op leaves, if it leaves one.
    pub fn watch_kind(&self) -> Option<(WatchKind, &str)> {
        match self {
            Op::Children { path, watch: true } => Some((WatchKind::Children, path)),
            Op::GetData { path, watch: true } => Some((WatchKind::Data, path)),
            Op::Exists { path, watch: true } => Some((WatchKind::Exists, path)),
            _ => None,
        }
    }
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
    /// The node's data and creation zxid.
    Data {
        /// Its data.
        data: Bytes,
        /// Its creation zxid.
        czxid: i64,
    },
    /// The node's creation zxid, or `None` if it does not exist.
    Exists(Option<i64>),
    /// Done (synced, parents created, node deleted).
    Done,
    /// The op failed.
    Failed(ZkError),
}

impl Reply {
    /// Whether the op that gave this reply left its watch (if it asked for one).
    pub fn leaves_watch(&self) -> bool {
        !matches!(self, Reply::Failed(_))
    }
}

/// The failures a machine tells apart. The driver keeps the full error for anything a machine
/// gives up with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ZkError {
    /// The node (or its parent) does not exist.
    NoNode,
    /// The node already exists.
    NodeExists,
    /// The connection was lost after the request left: it may or may not have been applied.
    ConnectionLoss,
    /// The request did not leave (no connection): it was surely not applied.
    NotSent,
    /// A failure worth trying again on the same session: the session moved, the server
    /// throttled or timed out the request, or it is read-only for now.
    Transient,
    /// The session expired (or was closed): our ephemeral nodes are gone.
    SessionExpired,
    /// Anything else (no permission, bad arguments, ...): the machine gives up with it.
    Other,
}

impl ZkError {
    /// Whether the op may have been applied although it failed.
    pub fn is_uncertain(self) -> bool {
        self == ZkError::ConnectionLoss
    }
}

/// Which kind of watch fired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WatchKind {
    /// Left by [`Op::GetData`].
    Data,
    /// Left by [`Op::Children`].
    Children,
    /// Left by [`Op::Exists`].
    Exists,
}

/// What a fired watch says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WatchEvent {
    /// The node was created.
    Created,
    /// The node was deleted.
    Deleted,
    /// The node's data changed.
    DataChanged,
    /// The node's children changed.
    ChildrenChanged,
    /// The watch ended with the session (expired or closed); no node event will come.
    SessionEnded,
}

/// What a machine knows of the session, from the client's state changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Connection {
    /// Connected to a read-write server; ops can run.
    Connected,
    /// Connected to a read-only server: reads work, writes fail. A holder cannot be sure.
    ReadOnly,
    /// The connection is gone; the session may be alive. The client reconnects by itself and
    /// reports `Connected`, `Lost` or `Expired` next.
    Disconnected,
    /// No server answered for the session timeout: the session is almost surely expired.
    Lost,
    /// The session expired (or was closed): every ephemeral node of ours is gone.
    Expired,
}
