//! How a driven machine ends without holding ([`Ended`]), and the crate's [`Error`] for it.

use recipes_core::{Failure, Stuck};
use zk_client::Client;

use crate::Error;
use crate::error::session_error;

/// How a driven machine ended without holding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    /// Its deadline passed while a server was connected: the lock was busy.
    TimedOut,
    /// Its deadline passed while no server was connected: busy or free, nobody can say.
    Unavailable(zk_client::Outage),
    /// It failed.
    Failed(Failure),
    /// It was left with nothing to wait for (a bug in the machine, caught).
    Stuck(Stuck),
}

/// The error for a machine that ended without holding; `error` is the client's error for the
/// last op that failed.
pub fn error_of(client: &Client, ended: Ended, error: Option<zk_client::Error>) -> Error {
    match ended {
        Ended::TimedOut => Error::TimedOut,
        Ended::Unavailable(outage) => Error::Unavailable(outage),
        Ended::Stuck(stuck) => Error::Stuck(stuck),
        Ended::Failed(failure) => match failure {
            Failure::SessionExpired => session_error(client.state()),
            Failure::NodeVanished => Error::NodeVanished,
            Failure::ParentMissing => Error::ParentMissing,
            Failure::SequenceWrapped => Error::SequenceWrapped,
            Failure::Abandoned => Error::SessionLost,
            Failure::Zk(_) => match error {
                Some(zk_client::Error::SessionExpired) => Error::SessionExpired,
                Some(e) => Error::Zk(e),
                None => session_error(client.state()),
            },
        },
    }
}
