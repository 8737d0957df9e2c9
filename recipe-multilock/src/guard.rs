//! [`MultiGuard`]: proof of holding every member; releases them in reverse order.

use std::sync::Arc;
use std::task::Poll;

use recipe_mutex::{Guard, Hold, Lock, Loss};

use crate::{Error, MemberError};

/// The members taken so far, in order; dropped, they release in reverse order (each in the
/// background, guaranteed).
#[derive(Debug, Default)]
pub(crate) struct Taken {
    members: Vec<(Arc<dyn Lock>, Box<dyn Guard>)>,
}

impl Taken {
    pub(crate) fn push(&mut self, member: Arc<dyn Lock>, guard: Box<dyn Guard>) {
        self.members.push((member, guard));
    }

    /// The first member one of whose nodes was seen gone (deleted by another client).
    pub(crate) fn gone(&self) -> Option<Arc<dyn Lock>> {
        self.members
            .iter()
            .find(|(_, guard)| guard.holds().iter().any(|h| h.is_gone()))
            .map(|(member, _)| member.clone())
    }

    /// Resolves with the first member one of whose nodes is seen gone (never if none is).
    pub(crate) async fn first_gone(&self) -> Arc<dyn Lock> {
        let mut waits: Vec<_> = self
            .members
            .iter()
            .flat_map(|(member, guard)| {
                guard
                    .holds()
                    .into_iter()
                    .map(move |hold| (member, Box::pin(hold.gone())))
            })
            .collect();
        std::future::poll_fn(|cx| {
            for (member, wait) in &mut waits {
                if wait.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(Arc::clone(member));
                }
            }
            Poll::Pending
        })
        .await
    }

    /// Releases every member, last first, and reports each one's error. The deletes leave in
    /// that order without waiting for one another (ZooKeeper applies a session's requests in
    /// order, so others see the same deletes in the same order as with one round trip each),
    /// and all their replies are awaited: one round trip in all, where Curator spends one per
    /// member.
    pub(crate) async fn release_all(&mut self) -> Vec<MemberError> {
        let mut releasing = Vec::new();
        while let Some((member, guard)) = self.members.pop() {
            releasing.push((member, guard.release()));
        }
        // Every future is polled in order before any is awaited again: the first poll of each
        // sends its delete.
        let mut results: Vec<Option<Result<(), recipe_mutex::Error>>> =
            releasing.iter().map(|_| None).collect();
        std::future::poll_fn(|cx| {
            let mut pending = false;
            for ((_, future), result) in releasing.iter_mut().zip(results.iter_mut()) {
                if result.is_none() {
                    match future.as_mut().poll(cx) {
                        Poll::Ready(r) => *result = Some(r),
                        Poll::Pending => pending = true,
                    }
                }
            }
            if pending {
                Poll::Pending
            } else {
                Poll::Ready(())
            }
        })
        .await;
        releasing
            .into_iter()
            .zip(results)
            .filter_map(|((member, _), result)| match result {
                Some(Err(error)) => Some(MemberError {
                    path: member.path().to_owned(),
                    kind: member.kind(),
                    error,
                }),
                _ => None,
            })
            .collect()
    }
}

impl Drop for Taken {
    fn drop(&mut self) {
        // Last first.
        while let Some(taken) = self.members.pop() {
            drop(taken);
        }
    }
}

/// Proof of holding every member of an `InterProcessMultiLock`.
///
/// Dropping it releases every member in reverse order (in the background);
/// [`MultiGuard::release`] does it now and reports every member's error. Like a member's guard,
/// [`MultiGuard::is_valid`] and [`MultiGuard::lost`] are advisory: the fence is
/// [`MultiGuard::check_ops`] in a `multi` (or the fencing tokens, checked by the resource).
///
/// # Examples
///
/// ```no_run
/// use recipe_multilock::{InterProcessMultiLock, Loss};
///
/// # async fn f(client: zk_client::Client) -> Result<(), Box<dyn std::error::Error>> {
/// let both = InterProcessMultiLock::new(client.clone(), &["/bank/acct/3", "/bank/acct/7"])?;
/// let guard = both.lock().await?;
/// // A transfer that commits only while both accounts are still held.
/// let mut ops = guard.check_ops();
/// ops.push(zk_client::Op::set_data("/bank/acct/3/balance", "90", None));
/// ops.push(zk_client::Op::set_data("/bank/acct/7/balance", "110", None));
/// tokio::select! {
///     done = client.multi(&ops) => { done?; }
///     Loss::Lost = guard.lost() => eprintln!("a member's session is gone: nothing written"),
/// }
/// guard.release().await?; // /bank/acct/7, then /bank/acct/3
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct MultiGuard {
    taken: Taken,
}

impl MultiGuard {
    pub(crate) fn new(taken: Taken) -> Self {
        Self { taken }
    }

    /// Each member's hold, in the order they were taken.
    pub fn members(&self) -> impl Iterator<Item = &Hold> {
        self.taken.members.iter().flat_map(|(_, g)| g.holds())
    }

    /// Each member's fencing token (its lock node's creation zxid), in the order taken.
    pub fn fencing_tokens(&self) -> Vec<i64> {
        self.members().map(Hold::fencing_token).collect()
    }

    /// Each member's place among its node's local holders, in the order taken: a cohort
    /// member's local sequence (from 1), 0 for a member whose node is its own. Paired with
    /// [`fencing_tokens`](Self::fencing_tokens), it orders every holder of each member.
    pub fn local_sequences(&self) -> Vec<u64> {
        self.taken
            .members
            .iter()
            .flat_map(|(_, guard)| guard.local_sequences())
            .collect()
    }

    /// `multi` ops that hold only while every member's node exists: put them in a transaction
    /// with the writes that must happen under the locks, and it commits only if every member is
    /// still held. (All members must be on the client that runs the `multi`.)
    pub fn check_ops(&self) -> Vec<zk_client::Op> {
        self.members().map(Hold::check_op).collect()
    }

    /// Applies `ops` as one transaction that commits only while every member is held (their
    /// check ops first, through the first member's client): a refusal because a member's
    /// node is gone is `recipe_mutex::Error::LockLost` naming that member's lock and node; a
    /// failure of one of `ops` is reported at its index in `ops`. The results are `ops`' own.
    pub async fn fenced_multi(
        &self,
        ops: &[zk_client::Op],
    ) -> Result<Vec<zk_client::OpResult>, recipe_mutex::Error> {
        Guard::fenced_multi(self, ops).await
    }

    /// Whether every member is surely still held, as far as this process knows.
    pub fn is_valid(&self) -> bool {
        self.members().all(Hold::is_valid)
    }

    /// Resolves when any member can no longer be trusted, with that member's [`Loss`].
    pub async fn lost(&self) -> Loss {
        Guard::lost(self).await
    }

    /// Releases every member now, last first, and reports every member's error. Each delete,
    /// once started, finishes in the background even if this future is dropped.
    pub async fn release(mut self) -> Result<(), Error> {
        let errors = self.taken.release_all().await;
        match errors.is_empty() {
            true => Ok(()),
            false => Err(Error::Release(errors)),
        }
    }
}

impl Guard for MultiGuard {
    fn holds(&self) -> Vec<&Hold> {
        self.members().collect()
    }

    fn local_sequences(&self) -> Vec<u64> {
        MultiGuard::local_sequences(self)
    }

    fn release(self: Box<Self>) -> recipe_mutex::LockFuture<'static, ()> {
        Box::pin(async move {
            match MultiGuard::release(*self).await {
                Ok(()) => Ok(()),
                Err(Error::Release(errors)) => match errors.into_iter().next() {
                    Some(first) => Err(first.error),
                    None => Ok(()),
                },
                Err(_) => Ok(()),
            }
        })
    }
}
