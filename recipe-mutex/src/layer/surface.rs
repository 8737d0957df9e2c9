//! [`lock_surface!`](crate::lock_surface): the methods every lock kind of the workspace offers
//! (the mutex, the read and write locks, the semaphore mutex), written once.

/// What [`lock_surface!`](crate::lock_surface) expands with (not an API).
#[doc(hidden)]
pub mod __private {
    pub use crate::layer::driver::deadline_in;
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
/// - `fn holds(&self) -> &Arc<recipe_mutex::layer::hold::Holds>`: its holds in this process;
/// - `async fn take(&self, deadline: Option<tokio::time::Instant>) -> Result<Option<Hold>, Error>`:
///   one acquisition, its own participant;
/// - `fn wrap(&self, guard: Hold) -> G`: the guard users get (`G` is `guard`: `Hold`
///   itself, or a wrapper such as the write lock's).
///
/// It adds `lock`, `try_lock_for` and `is_acquired_in_this_process`, and implements
/// [`Lock`](crate::Lock) (so multi-locks take the kind; `G` must implement
/// [`Guard`](crate::Guard)). `kind` is [`Lock::kind`]; `what` names the lock in the docs ("the lock", "the
/// read lock").
///
/// [`Lock::kind`]: crate::Lock::kind
#[macro_export]
macro_rules! lock_surface {
    ($ty:ty, guard = $guard:ty, kind = $kind:ident, what = $what:literal) => {
        impl $ty {
            #[doc = concat!("Takes ", $what, ", waiting as long as it takes, and returns the guard that owns it: [`Lock::lock`](", stringify!($crate), "::Lock::lock) says how it waits, fails and cancels.")]
            pub async fn lock(&self) -> ::std::result::Result<$guard, $crate::Error> {
                match $crate::layer::surface::__private::boxed(self.take(None)).await? {
                    ::std::option::Option::Some(guard) => ::std::result::Result::Ok(self.wrap(guard)),
                    ::std::option::Option::None => ::std::result::Result::Err($crate::Error::TimedOut),
                }
            }

            #[doc = concat!("Takes ", $what, " if it can within `timeout`, `None` if it stayed busy: [`Lock::try_lock_for`](", stringify!($crate), "::Lock::try_lock_for) says how the deadline is kept.")]
            pub async fn try_lock_for(
                &self,
                timeout: $crate::layer::surface::__private::Duration,
            ) -> ::std::result::Result<::std::option::Option<$guard>, $crate::Error> {
                let deadline = $crate::layer::surface::__private::deadline_in(timeout);
                let taken = $crate::layer::surface::__private::boxed(self.take(deadline)).await?;
                ::std::result::Result::Ok(taken.map(|g| self.wrap(g)))
            }

            #[doc = concat!("Whether a guard taken through this handle (or a clone of it) holds ", $what, ": [`Lock::is_acquired_in_this_process`](", stringify!($crate), "::Lock::is_acquired_in_this_process).")]
            pub fn is_acquired_in_this_process(&self) -> bool {
                self.holds().is_acquired_in_this_process()
            }
        }

        impl $crate::Lock for $ty {
            fn path(&self) -> &str {
                self.holds().path()
            }

            fn kind(&self) -> $crate::LockKind {
                $crate::LockKind::$kind
            }

            fn lock_until(
                &self,
                deadline: ::std::option::Option<$crate::layer::surface::__private::Instant>,
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
