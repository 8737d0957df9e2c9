//! [`Error`]: how a lock operation fails.

/// Why a lock operation failed. Each variant says what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The lock path is not a valid ZooKeeper path; nothing was sent.
    #[error(transparent)]
    InvalidPath(#[from] zk_proto::PathError),
    /// The session expired (or was closed) before the lock was taken: nothing of ours is left
    /// on the server. Build a new client to try again.
    #[error("session expired or closed")]
    SessionExpired,
    /// No server answered for the whole session timeout: the session is almost surely
    /// expired. (Waiters and releases wait on through this state, which the session may
    /// survive; only calls that cannot wait report it.)
    #[error("session lost (no server for the session timeout)")]
    SessionLost,
    /// Our lock node kept vanishing under us (deleted by someone else, or the base container
    /// was removed between the create and the listing) and the attempt gave up.
    #[error("the lock node vanished")]
    NodeVanished,
    /// A node above the lock path is missing and could not be created. With a chroot, the
    /// chroot node itself must exist: create it (or fix the connect string).
    #[error("a parent of the lock path is missing and cannot be created (does the chroot exist?)")]
    ParentMissing,
    /// The lock path is under `/zookeeper`, which the server reserves for itself.
    #[error("lock path {path} is under /zookeeper, which the server reserves")]
    ReservedPath {
        /// The lock's path.
        path: String,
    },
    /// The lock directory's 32-bit sequence counter wrapped (over 2^31 nodes were created
    /// under it while it was never empty): in Curator's order a new node would sort before
    /// older ones and two clients could hold. The attempt was given up and its node deleted;
    /// the counter resets once the directory (a container) is empty and removed.
    #[error("the lock directory's sequence counter wrapped; refusing to hold")]
    SequenceWrapped,
    /// A guard or lease was dropped outside any tokio runtime and was taken outside one too,
    /// so nothing can run its delete: its node goes only when the session ends. Drop guards
    /// on the runtime, or take them on one (then their release runs there).
    #[error("no tokio runtime to run the release on; the node goes with the session")]
    NoRuntime,
    /// A fenced write (`fenced_multi` of a guard) was refused because the lock is no longer
    /// held: `node`, which proved the hold, is gone (deleted, or its session expired). When a
    /// check refused it, nothing of the transaction was applied. Stop the work the lock
    /// protected; take the lock again to go on.
    #[error("the lock {lock} is no longer held: {why} (node {node})")]
    LockLost {
        /// The lock's path.
        lock: String,
        /// The lock node that went.
        node: String,
        /// How it went.
        why: &'static str,
    },
    /// A cohort's shared attempt on the lock (the one acquire its local waiters wait on) was
    /// dropped before it finished: the runtime it ran on shut down, or it panicked. What it
    /// created is deleted if a runtime is left to run its cleanup, else goes with the session.
    /// Take the lock again.
    #[error(
        "the cohort's attempt on the lock was dropped before it finished (its runtime shut down?)"
    )]
    AttemptDropped,
    /// A deadline passed before the operation could finish.
    #[error("timed out")]
    TimedOut,
    /// The acquire's deadline passed while the client had no server: whether the lock was
    /// busy or free nobody can say (a busy lock is `Ok(None)`, never this). The outage says
    /// how long and which servers were tried. What the attempt created is deleted once a
    /// server answers (or goes with the session); the session may well survive the outage.
    #[error("the deadline passed with no server to ask: {0}")]
    Unavailable(zk_client::Outage),
    /// A lock machine was left with nothing to wait for: a bug in this library, caught before
    /// it could hang or spin. Its cleanups ran. Please report it with the message.
    #[error(transparent)]
    Stuck(#[from] recipes_core::Stuck),
    /// A ZooKeeper operation failed (no permission, read-only server, ...).
    #[error(transparent)]
    Zk(#[from] zk_client::Error),
}

/// The error for a session in `state` that can no longer be used (or is lost).
pub fn session_error(state: zk_client::SessionState) -> Error {
    match state {
        zk_client::SessionState::Lost => Error::SessionLost,
        zk_client::SessionState::AuthFailed => Error::Zk(zk_client::Error::AuthFailed),
        _ => Error::SessionExpired,
    }
}
