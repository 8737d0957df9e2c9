//! [`InterProcessMultiLock`]: the members in canonical order, one deadline, all or nothing.

use std::sync::Arc;
use std::time::Duration;

use recipe_mutex::{InterProcessMutex, IntoLock, Lock, LockKind};
use tokio::time::Instant;
use zk_client::Client;

use crate::guard::{MultiGuard, Taken};
use crate::{Error, MemberError};

/// Several locks taken as one: all or nothing, in one canonical order, released in reverse.
/// See the crate docs for what it does beyond Curator's. It is a [`Lock`] itself, so
/// multi-locks nest (their members are then taken in one canonical order).
///
/// Each member is its own lock, taken by its own recipe; every `lock()` of the multi-lock is
/// its own participant on each member, whatever task asks (two multi-locks over shared
/// members wait for each other, even in one task). Members must name distinct paths: a path
/// given twice, or a read and a write of one read/write lock (a downgrade is
/// `WriteGuard::downgrade`, not a member order), is refused at construction.
///
/// Cancel-safe: dropping an acquire releases the members already taken (in the background,
/// in reverse order) and the member being taken leaves no node.
///
/// A member whose node another client deletes while later members are being taken is not
/// kept: every member taken is released and the set is taken again from the first, within the
/// same deadline (up to 3 times, then the member's `NodeVanished`), so a guard never starts
/// out holding a dead member.
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
/// use recipe_multilock::{Error, InterProcessMultiLock, IntoLock};
///
/// # async fn f(client: zk_client::Client) -> Result<(), Box<dyn std::error::Error>> {
/// // Mutexes on two accounts, taken as one within 2 s in all.
/// let both = InterProcessMultiLock::new(client.clone(), &["/bank/acct/7", "/bank/acct/3"])?;
/// match both.try_lock_for(Duration::from_secs(2)).await? {
///     Some(guard) => guard.release().await?,
///     None => println!("one of them is busy; nothing is held"),
/// }
///
/// // Any of our locks; a path twice is refused before anything is sent.
/// let rw = recipe_rwlock::InterProcessReadWriteLock::new(client.clone(), "/catalog")?;
/// let members = [
///     rw.read_lock().clone().into_lock(),
///     rw.write_lock().clone().into_lock(),
/// ];
/// assert!(matches!(
///     InterProcessMultiLock::from_locks(members),
///     Err(Error::ReadAndWrite { .. })
/// ));
///
/// // Locks of one kind, as they are.
/// let a = recipe_mutex::InterProcessMutex::new(client.clone(), "/bank/acct/1")?;
/// let b = recipe_mutex::InterProcessMutex::new(client.clone(), "/bank/acct/2")?;
/// let pair = InterProcessMultiLock::from_locks([a, b])?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct InterProcessMultiLock {
    /// In canonical order.
    members: Vec<Arc<dyn Lock>>,
}

/// How many times a multi-lock whose member's node vanished (deleted by another client while
/// later members were taken) takes every member again, within the same deadline.
const RETAKES: u32 = 3;

/// How one pass over the members ended.
enum Taking {
    Held(MultiGuard),
    TimedOut,
    /// A member's node was seen gone: the member.
    Vanished(Arc<dyn Lock>),
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
                            kind: LockKind::Mutex,
                            error,
                        })
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Self::from_locks(members)
    }

    /// Any of our locks, taken in canonical order (by path), whatever the order given. A
    /// member that is itself a multi-lock gives its members, each taken in the one canonical
    /// order of the whole set (so nested multi-locks stay deadlock-free among ours). Two
    /// members on one path are refused: [`Error::ReadAndWrite`] for a read and a write lock of
    /// one read/write lock, [`Error::DuplicatePath`] otherwise (either would wait for itself).
    ///
    /// Takes what comes naturally: locks of one kind by value (`[mutex_a, mutex_b]`), `Arc`s
    /// of them, or [`IntoLock::into_lock`] on each when kinds are mixed.
    pub fn from_locks<I>(given: I) -> Result<Self, Error>
    where
        I: IntoIterator,
        I::Item: IntoLock,
    {
        let given = given.into_iter();
        let mut members = Vec::with_capacity(given.size_hint().0);
        for member in given.map(IntoLock::into_lock) {
            let parts = member.parts();
            match parts.is_empty() {
                true => members.push(member),
                false => members.extend(parts),
            }
        }
        if members.is_empty() {
            return Err(Error::NoMembers);
        }
        members.sort_by(|a, b| (a.path(), a.kind()).cmp(&(b.path(), b.kind())));
        for pair in members.windows(2) {
            if let [a, b] = pair {
                if a.path() == b.path() {
                    let path = a.path().to_owned();
                    let (a, b) = (a.kind(), b.kind());
                    return Err(
                        match (a.is_read() && b.is_write()) || (a.is_write() && b.is_read()) {
                            true => Error::ReadAndWrite { path },
                            false => Error::DuplicatePath { path },
                        },
                    );
                }
            }
        }
        Ok(Self { members })
    }

    /// The members, in the order they are taken.
    pub fn members(&self) -> &[Arc<dyn Lock>] {
        &self.members
    }

    async fn take(&self, deadline: Option<Instant>) -> Result<Option<MultiGuard>, Error> {
        let mut pass = 0;
        loop {
            match self.take_once(deadline).await? {
                Taking::Held(guard) => return Ok(Some(guard)),
                Taking::TimedOut => return Ok(None),
                // Released in the background, last first; taken again from the first, within
                // the same deadline.
                Taking::Vanished(member) if pass < RETAKES => {
                    pass += 1;
                    drop(member);
                }
                Taking::Vanished(member) => {
                    return Err(Error::Member(MemberError {
                        path: member.path().to_owned(),
                        kind: member.kind(),
                        error: recipe_mutex::Error::NodeVanished,
                    }));
                }
            }
        }
    }

    /// One pass over the members, in order. A member whose node is seen gone (deleted by
    /// another client) while a later one is waited for or taken ends the pass: the guard
    /// never holds a dead member.
    async fn take_once(&self, deadline: Option<Instant>) -> Result<Taking, Error> {
        let mut taken = Taken::default();
        for (i, member) in self.members.iter().enumerate() {
            // Planted (feature `plant`, the simulator's only): the last member is only tried,
            // and the multi-lock reports itself held whether or not it was taken.
            if i + 1 == self.members.len()
                && crate::plant::active(crate::plant::Plant::MultiSkipsLast)
            {
                if let Ok(Some(guard)) = member.lock_until(Some(Instant::now())).await {
                    taken.push(member.clone(), guard);
                }
                break;
            }
            // A member taken whose node is deleted while this one is waited for ends the
            // pass at once (the wait for this one is dropped: its node is cleaned up in the
            // background), rather than when this one is granted, which may be never.
            let attempt = tokio::select! {
                biased;
                gone = taken.first_gone() => {
                    drop(taken);
                    return Ok(Taking::Vanished(gone));
                }
                attempt = member.lock_until(deadline) => attempt,
            };
            match attempt {
                Ok(Some(guard)) => taken.push(member.clone(), guard),
                Ok(None) => {
                    // Released in the background, last first: the deadline is kept.
                    drop(taken);
                    return Ok(Taking::TimedOut);
                }
                Err(error) => {
                    drop(taken);
                    return Err(Error::Member(MemberError {
                        path: member.path().to_owned(),
                        kind: member.kind(),
                        error,
                    }));
                }
            }
            if let Some(gone) = taken.gone() {
                drop(taken);
                return Ok(Taking::Vanished(gone));
            }
        }
        Ok(Taking::Held(MultiGuard::new(taken)))
    }

    /// Takes every member, waiting as long as it takes.
    pub async fn lock(&self) -> Result<MultiGuard, Error> {
        self.take(None).await?.ok_or_else(|| {
            Error::Member(MemberError {
                path: String::new(),
                kind: LockKind::Multi,
                error: recipe_mutex::Error::TimedOut,
            })
        })
    }

    /// Takes every member within `timeout` in all (one deadline for the set); `None` if not
    /// (a member was busy), with the members taken released in the background (last first);
    /// a member's error (such as `Unavailable` for a deadline passed with no server) ends it
    /// the same way. Returns within one
    /// short grace of the deadline, also on a dead connection. A timeout too long to be a
    /// deadline (`Duration::MAX`) means none: it waits as [`lock`](Self::lock) does.
    pub async fn try_lock_for(&self, timeout: Duration) -> Result<Option<MultiGuard>, Error> {
        self.take(recipe_mutex::layer::driver::deadline_in(timeout))
            .await
    }

    /// Whether every member is held in this process.
    pub fn is_acquired_in_this_process(&self) -> bool {
        self.members.iter().all(|m| m.is_acquired_in_this_process())
    }
}

impl Lock for InterProcessMultiLock {
    fn path(&self) -> &str {
        self.members.first().map_or("", |m| m.path())
    }

    fn kind(&self) -> LockKind {
        LockKind::Multi
    }

    /// Takes every member (see [`InterProcessMultiLock::try_lock_for`]); a member's failure
    /// is its error (the member is named in [`InterProcessMultiLock::lock`]'s).
    fn lock_until(
        &self,
        deadline: Option<Instant>,
    ) -> recipe_mutex::LockFuture<'_, Option<Box<dyn recipe_mutex::Guard>>> {
        Box::pin(async move {
            match self.take(deadline).await {
                Ok(taken) => Ok(taken.map(|g| Box::new(g) as Box<dyn recipe_mutex::Guard>)),
                Err(Error::Member(member)) => Err(member.error),
                Err(_) => Err(recipe_mutex::Error::TimedOut),
            }
        })
    }

    fn is_acquired_in_this_process(&self) -> bool {
        InterProcessMultiLock::is_acquired_in_this_process(self)
    }

    fn parts(&self) -> Vec<Arc<dyn Lock>> {
        self.members.clone()
    }
}
