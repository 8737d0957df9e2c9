//! [`Error`]: how a semaphore operation fails.

/// Why a semaphore operation failed: the lock layer's failures (the session, the path, the
/// server), or a semaphore's own. Each variant says what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A failure the semaphore shares with every lock of ours (its session expired, its path
    /// is invalid, no server answered, ...): the inner error says which and what to do.
    #[error(transparent)]
    Lock(#[from] recipe_mutex::Error),
    /// A semaphore was asked for no lease, or for more than
    /// [`MAX_LEASES_ASKED`](crate::MAX_LEASES_ASKED) at once. Nothing was sent. (Asking for
    /// more than the semaphore has now is not an error: the ask waits, within its deadline,
    /// for the count to grow, as Curator's does.)
    #[error("cannot take {asked} leases at once (1 to {max})")]
    BadLeaseCount {
        /// The leases asked for.
        asked: u32,
        /// The most that may be asked at once.
        max: u32,
    },
}

impl From<zk_client::Error> for Error {
    fn from(e: zk_client::Error) -> Self {
        Error::Lock(recipe_mutex::Error::Zk(e))
    }
}
