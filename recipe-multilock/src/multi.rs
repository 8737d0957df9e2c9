//! [`InterProcessMultiLock`]: the members in canonical order, one deadline, all or nothing.

use std::sync::Arc;
use std::time::Duration;

use recipe_mutex::{InterProcessMutex, Lock, Owner};
use tokio::time::Instant;
use zk_client::Client;

use crate::guard::{MultiGuard, Taken};
use crate::{Error, MemberError};

/// Several locks taken as one: all or nothing, in one canonical order, released in reverse.
/// See the crate docs for what it does beyond Curator's.
///
/// Reentrancy and ownership come from the members: a member mutex taken twice by one task is
/// re-entered. Cancel-safe: dropping an acquire releases the members already taken (in the
/// background, in reverse order) and the member being taken leaves no node.
#[derive(Debug, Clone)]
pub struct InterProcessMultiLock {
    /// In canonical order.
    members: Vec<Arc<dyn Lock>>,
}

impl InterProcessMultiLock {
    /// One `InterProcessMutex` per path (Curator's convenience constructor).
    pub fn new(client: Client, paths: &[&str]) -> Result<Self, Error> {
        let members = paths
            .iter()
            .map(|path| {
                InterProcessMutex::new(client.clone(), path)
                    .map(|m| Arc::new(m) as Arc<dyn Lock>)
                    .map_err(|error| {
                        Error::Member(MemberError {
                            path: (*path).to_owned(),
                            kind: "mutex",
                            error,
                        })
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Self::from_locks(members)
    }

    /// Any of our locks, taken in canonical order (by path, then kind), whatever the order
    /// given.
    pub fn from_locks(mut members: Vec<Arc<dyn Lock>>) -> Result<Self, Error> {
        if members.is_empty() {
            return Err(Error::NoMembers);
        }
        members.sort_by(|a, b| (a.path(), a.kind()).cmp(&(b.path(), b.kind())));
        Ok(Self { members })
    }

    /// The members, in the order they are taken.
    pub fn members(&self) -> &[Arc<dyn Lock>] {
        &self.members
    }

    async fn take(&self, deadline: Option<Instant>) -> Result<Option<MultiGuard>, Error> {
        let mut taken = Taken::default();
        for member in &self.members {
            match member.lock_until(deadline).await {
                Ok(Some(guard)) => taken.push(member.clone(), guard),
                Ok(None) => {
                    taken.release_all().await;
                    return Ok(None);
                }
                Err(error) => {
                    taken.release_all().await;
                    return Err(Error::Member(MemberError {
                        path: member.path().to_owned(),
                        kind: member.kind(),
                        error,
                    }));
                }
            }
        }
        Ok(Some(MultiGuard::new(taken)))
    }

    /// Takes every member, waiting as long as it takes.
    pub async fn lock(&self) -> Result<MultiGuard, Error> {
        self.take(None).await?.ok_or_else(|| {
            Error::Member(MemberError {
                path: String::new(),
                kind: "multi",
                error: recipe_mutex::Error::SessionLost,
            })
        })
    }

    /// Takes every member within `timeout` in all (one deadline for the set); `None` if not,
    /// with the members taken released first.
    pub async fn try_lock_for(&self, timeout: Duration) -> Result<Option<MultiGuard>, Error> {
        self.take(Some(Instant::now() + timeout)).await
    }

    /// Curator's `acquire()`: takes every member for the calling task.
    pub async fn acquire(&self) -> Result<(), Error> {
        self.lock().await.map(MultiGuard::keep)
    }

    /// Curator's `acquire(time, unit)`: true if every member was taken within `timeout`.
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<bool, Error> {
        Ok(self
            .try_lock_for(timeout)
            .await?
            .map(MultiGuard::keep)
            .is_some())
    }

    /// Curator's `release()`: one count of the calling task's hold of every member, in reverse
    /// order; every member's error is reported.
    pub async fn release(&self) -> Result<(), Error> {
        let _owner = Owner::current();
        let mut errors = Vec::new();
        for member in self.members.iter().rev() {
            if let Err(error) = member.release_current().await {
                errors.push(MemberError {
                    path: member.path().to_owned(),
                    kind: member.kind(),
                    error,
                });
            }
        }
        match errors.is_empty() {
            true => Ok(()),
            false => Err(Error::Release(errors)),
        }
    }

    /// Whether every member is held in this process.
    pub fn is_acquired_in_this_process(&self) -> bool {
        self.members.iter().all(|m| m.is_acquired_in_this_process())
    }
}
