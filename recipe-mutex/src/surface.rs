//! [`lock_surface!`](crate::lock_surface): the methods every lock kind of the workspace offers
//! (the mutex, the read and write locks, the semaphore mutex), written once.

/// What [`lock_surface!`](crate::lock_surface) expands with (not an API).
#[doc(hidden)]
pub mod __private {
    pub use crate::driver::deadline_in;
    pub use std::time::Duration;
    pub use tokio::time::Instant;

    /// The acquisition's future, boxed: `lock()` and `try_lock_for()` stay a few hundred bytes
    /// of code at each call site (the acquisition's state machine is compiled once, behind the
    /// box, instead of inlined into every caller's future), for one allocation per call.
    pub fn boxed<'a, T>(
        take: impl std::future::Future<Output = Result<T, crate::Error>> + Send + 'a,
    ) -> crate::LockFuture<'a, T> {
        Box::pin(take)
    }
}

/// Implements a lock kind's common surface from three methods of its own:
///
/// - `fn holds(&self) -> &Arc<recipe_mutex::hold::Holds>`: its holds in this process;
/// - `async fn take(&self, deadline: Option<tokio::time::Instant>) -> Result<Option<LockGuard>, Error>`:
///   one acquisition, its own participant;
/// - `fn wrap(&self, guard: LockGuard) -> G`: the guard users get (`G` is `guard`: `LockGuard`
///   itself, or a wrapper such as the write lock's).
///
/// It adds `lock`, `try_lock_for` and `is_acquired_in_this_process`, and implements
/// [`Lock`](crate::Lock) (so multi-locks take the kind; `G` must implement
/// [`Guard`](crate::Guard)). `kind` is [`Lock::kind`]; `what` names the lock in the docs ("the lock", "the
/// read lock").
///
/// [`Lock::kind`]: crate::Lock::kind
#[doc(hidden)]
#[macro_export]
macro_rules! lock_surface {
    ($ty:ty, guard = $guard:ty, kind = $kind:literal, what = $what:literal) => {
        impl $ty {
            #[doc = concat!("Takes ", $what, ", waiting as long as it takes (through outages the session survives: it says so once at `warn` with the `tracing` feature when the client has had no server for the session timeout; the session's expiry ends it with `Error::SessionExpired`), and returns the guard that owns it. Each call is its own participant: it queues like another process's, whatever task or handle it comes from, so two calls joined in one task wait for each other. To re-enter while holding, pass the guard down and use `reenter()`. Cancel-safe: dropped at any point, it leaves no node behind.")]
            pub async fn lock(&self) -> ::std::result::Result<$guard, $crate::Error> {
                match $crate::surface::__private::boxed(self.take(None)).await? {
                    ::std::option::Option::Some(guard) => ::std::result::Result::Ok(self.wrap(guard)),
                    ::std::option::Option::None => ::std::result::Result::Err($crate::Error::TimedOut),
                }
            }

            #[doc = concat!("Takes ", $what, " if it can within `timeout`; `None` if not because it was busy (what was created is deleted first, or, if that takes longer, in the background); `Err(Error::Unavailable)` if the deadline passed with no server connected (an outage, not a busy lock: the error says how long and which servers were tried). A free lock is taken even with a zero timeout. Returns within one short grace (`recipes_core::DEADLINE_GRACE`) of the deadline, also while disconnected. A timeout too long to be a deadline (`Duration::MAX`) means none: it waits as `lock()` does.")]
            pub async fn try_lock_for(
                &self,
                timeout: $crate::surface::__private::Duration,
            ) -> ::std::result::Result<::std::option::Option<$guard>, $crate::Error> {
                let deadline = $crate::surface::__private::deadline_in(timeout);
                let taken = $crate::surface::__private::boxed(self.take(deadline)).await?;
                ::std::result::Result::Ok(taken.map(|g| self.wrap(g)))
            }

            #[doc = concat!("Whether a guard taken through this handle (or a clone of it) holds ", $what, " (a release in progress counts until its node is deleted), as Curator's `isAcquiredInThisProcess` of its lock object.")]
            pub fn is_acquired_in_this_process(&self) -> bool {
                self.holds().is_acquired_in_this_process()
            }
        }

        impl $crate::Lock for $ty {
            fn path(&self) -> &str {
                self.holds().path()
            }

            fn kind(&self) -> &'static str {
                $kind
            }

            fn lock_until(
                &self,
                deadline: ::std::option::Option<$crate::surface::__private::Instant>,
            ) -> $crate::LockFuture<
                '_,
                ::std::option::Option<::std::boxed::Box<dyn $crate::Guard>>,
            > {
                ::std::boxed::Box::pin(async move {
                    let taken = self.take(deadline).await?;
                    ::std::result::Result::Ok(taken.map(|guard| {
                        ::std::boxed::Box::new(self.wrap(guard))
                            as ::std::boxed::Box<dyn $crate::Guard>
                    }))
                })
            }

            fn is_acquired_in_this_process(&self) -> bool {
                self.holds().is_acquired_in_this_process()
            }
        }
    };
}
