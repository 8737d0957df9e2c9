//! [`Error`]: how a lock operation fails.

/// Why a lock operation failed. Each variant says what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The lock path is not a valid ZooKeeper path; nothing was sent.
    #[error(transparent)]
    InvalidPath(#[from] zk_proto::PathError),
    /// `release` by a task that does not hold the lock (Curator's
    /// `IllegalMonitorStateException`). Release through the guard, or from the owning task.
    #[error("you do not own the lock: {path}")]
    NotOwner {
        /// The lock's path.
        path: String,
    },
    /// The session expired (or was closed) before the lock was taken: nothing of ours is left
    /// on the server. Build a new client to try again.
    #[error("session expired or closed")]
    SessionExpired,
    /// No server answered for the whole session timeout while we waited: the session is
    /// almost surely expired, so the attempt was given up.
    #[error("session lost (no server for the session timeout)")]
    SessionLost,
    /// Our lock node kept vanishing under us (deleted by someone else, or the base container
    /// was removed between the create and the listing) and the attempt gave up.
    #[error("the lock node vanished")]
    NodeVanished,
    /// A ZooKeeper operation failed (no permission, read-only server, ...).
    #[error(transparent)]
    Zk(#[from] zk_client::Error),
}
