//! [`lock_surface!`](crate::lock_surface): the methods every lock kind of the workspace offers
//! (the mutex, the read and write locks, the semaphore mutex), written once.

/// What [`lock_surface!`](crate::lock_surface) expands with (not an API).
#[doc(hidden)]
pub mod __private {
    pub use std::time::Duration;
    pub use tokio::time::Instant;
}

/// Implements a lock kind's common surface from two methods of its own:
///
/// - `fn holds(&self) -> &Arc<recipe_mutex::hold::Holds>`: its holds in this process;
/// - `async fn take(&self, deadline: Option<tokio::time::Instant>) -> Result<Option<LockGuard>, Error>`:
///   one acquisition (re-entry included, where the kind allows it).
///
/// It adds `lock`, `try_lock_for`, `acquire`, `acquire_timeout`, `release`,
/// `is_acquired_in_this_process` and `is_owned_by_current_task`, and implements
/// [`Lock`](crate::Lock) (so multi-locks take the kind). `kind` is [`Lock::kind`]; `what`
/// names the lock in the docs ("the lock", "the read lock").
///
/// [`Lock::kind`]: crate::Lock::kind
#[macro_export]
macro_rules! lock_surface {
    ($ty:ty, kind = $kind:literal, what = $what:literal) => {
        impl $ty {
            #[doc = concat!("Takes ", $what, ", waiting as long as it takes; returns a guard that releases it.")]
            pub async fn lock(&self) -> ::std::result::Result<$crate::LockGuard, $crate::Error> {
                self.take(None).await?.ok_or($crate::Error::SessionLost)
            }

            #[doc = concat!("Takes ", $what, " if it can within `timeout`; `None` if not (what was created is deleted first, or, if that takes longer than a short grace, in the background). A free lock is taken even with a zero timeout. Returns within a short grace of the deadline, also while disconnected.")]
            pub async fn try_lock_for(
                &self,
                timeout: $crate::surface::__private::Duration,
            ) -> ::std::result::Result<::std::option::Option<$crate::LockGuard>, $crate::Error> {
                self.take(Some($crate::surface::__private::Instant::now() + timeout))
                    .await
            }

            #[doc = concat!("Curator's `acquire()`: takes ", $what, " for the calling task.")]
            pub async fn acquire(&self) -> ::std::result::Result<(), $crate::Error> {
                self.lock().await.map($crate::LockGuard::keep)
            }

            #[doc = concat!("Curator's `acquire(time, unit)`: true if ", $what, " was taken within `timeout`.")]
            pub async fn acquire_timeout(
                &self,
                timeout: $crate::surface::__private::Duration,
            ) -> ::std::result::Result<bool, $crate::Error> {
                Ok(self
                    .try_lock_for(timeout)
                    .await?
                    .map($crate::LockGuard::keep)
                    .is_some())
            }

            /// Curator's `release()`: one count of the calling task's hold; the last one
            /// deletes its node. `Error::NotOwner` if the
            /// task holds nothing. The delete, once started, finishes in the background even
            /// if this future is dropped; a delete that fails for a lost connection is retried
            /// once reconnected. On a session already lost or ended it returns that at once.
            pub async fn release(&self) -> ::std::result::Result<(), $crate::Error> {
                self.holds().release($crate::Owner::current()).await
            }

            #[doc = concat!("Whether any task of this process holds ", $what, " through this handle's lock (a release in progress counts until its node is deleted).")]
            pub fn is_acquired_in_this_process(&self) -> bool {
                self.holds().is_acquired_in_this_process()
            }

            #[doc = concat!("Whether the calling task holds ", $what, ".")]
            pub fn is_owned_by_current_task(&self) -> bool {
                self.holds().is_owned_by($crate::Owner::current())
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
            ) -> $crate::LockFuture<'_, ::std::option::Option<$crate::LockGuard>> {
                ::std::boxed::Box::pin(self.take(deadline))
            }

            fn release_current(&self) -> $crate::LockFuture<'_, ()> {
                ::std::boxed::Box::pin(self.release())
            }

            fn is_acquired_in_this_process(&self) -> bool {
                self.holds().is_acquired_in_this_process()
            }
        }
    };
}
