//! [`WriteGuard`]: the proof of holding the write lock, and its downgrade to a read hold.

use std::sync::Arc;
use std::time::Duration;

use recipe_mutex::layer::driver;
use recipes_core::DowngradeMachine;
use tokio::time::Instant;

use crate::{Error, Hold, ReadGuard, Shared};

/// Proof of holding the write lock: a [`Hold`] (it dereferences to one: fencing token,
/// `check_op`, `lost()`, `reenter()`) that can also be [downgraded](WriteGuard::downgrade) to
/// a read hold.
#[derive(Debug)]
pub struct WriteGuard {
    guard: Hold,
    shared: Arc<Shared>,
}

impl std::ops::Deref for WriteGuard {
    type Target = Hold;

    fn deref(&self) -> &Hold {
        &self.guard
    }
}

impl recipe_mutex::Guard for WriteGuard {
    fn holds(&self) -> Vec<&Hold> {
        vec![&self.guard]
    }

    fn release(self: Box<Self>) -> recipe_mutex::LockFuture<'static, ()> {
        Box::pin(WriteGuard::release(*self))
    }
}

impl WriteGuard {
    pub(crate) fn new(guard: Hold, shared: Arc<Shared>) -> Self {
        Self { guard, shared }
    }

    /// The hold itself, for code that keeps holds of several kinds together (it can no longer
    /// be downgraded).
    pub fn into_hold(self) -> Hold {
        self.guard
    }

    /// Releases the write lock now (see [`Hold::release`]).
    pub async fn release(self) -> Result<(), Error> {
        self.guard.release().await
    }

    /// Turns this write hold into a read hold, on Curator 5.5's scheme: a read node with the
    /// write node's sequence (created `EPHEMERAL`), held once a listing shows both; then the
    /// write node is deleted. A writer queued behind stays out; readers may join. The read
    /// guard keeps the write hold's fencing token.
    ///
    /// On an error the write lock is released too (in the background, guaranteed) and nothing
    /// of the downgrade is left. A write hold whose node was seen gone (deleted by another
    /// client: [`is_gone`](recipe_mutex::Hold::is_gone)) is refused at once with
    /// [`Error::LockLost`], nothing sent. Waits as long as it takes (through outages the session
    /// survives); see [`WriteGuard::try_downgrade_for`] for a deadline. Dropped before it
    /// completes, it releases both: the read node in flight is cleaned up, the write lock
    /// released.
    pub async fn downgrade(self) -> Result<ReadGuard, Error> {
        match self.downgrade_until(None).await? {
            Ok(read) => Ok(read),
            Err(_write) => Err(Error::TimedOut),
        }
    }

    /// [`WriteGuard::downgrade`] within `timeout`: `Ok(Err(write))` gives the write hold back,
    /// still held, when it did not complete in time (the read node it may have made is
    /// deleted). Returns within one short grace of the deadline, also on a stalled
    /// connection. A timeout too long to be a deadline (`Duration::MAX`) means none, as in
    /// [`downgrade`](Self::downgrade).
    pub async fn try_downgrade_for(
        self,
        timeout: Duration,
    ) -> Result<Result<ReadGuard, WriteGuard>, Error> {
        self.downgrade_until(recipe_mutex::layer::driver::deadline_in(timeout))
            .await
    }

    async fn downgrade_until(
        self,
        deadline: Option<Instant>,
    ) -> Result<Result<ReadGuard, WriteGuard>, Error> {
        let shared = self.shared.clone();
        let (client, path) = (shared.client(), shared.path());
        if self.guard.is_gone() {
            // A read node made now would carry a dead write node's sequence and sort ahead of
            // the next writer until the downgrade saw its write node gone.
            let lost = Error::LockLost {
                lock: path.to_owned(),
                node: self.guard.node_path().to_owned(),
                why: "its node is gone; no read node was made",
            };
            drop(self.guard);
            return Err(lost);
        }
        let write = self.guard.node().clone();
        let name = write.path.rsplit('/').next().unwrap_or_default();
        let uuid = recipe_mutex::layer::random_uuid();
        let data = shared.data(&shared.read);
        let machine = DowngradeMachine::new(
            path,
            name,
            write.czxid,
            &uuid,
            data,
            deadline.map(Instant::into_std),
        )
        .ok_or(Error::NodeVanished)?;
        let Some(turn) = recipe_mutex::layer::turns::wait(client, path, deadline).await? else {
            return Ok(Err(self));
        };
        match driver::take_node(
            client,
            move || machine,
            driver::RecipeKind::Read,
            Some(turn),
            deadline,
        )
        .await?
        {
            Some(read) => {
                let read = ReadGuard::new(shared.read.adopt(read));
                // The write node goes now (sent ahead of whatever the caller sends next),
                // guaranteed; the read node keeps the writers out meanwhile.
                drop(self.guard);
                Ok(Ok(read))
            }
            None => Ok(Err(self)),
        }
    }
}
