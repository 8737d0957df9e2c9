//! Apache Curator's `InterProcessMultiLock` for Rust: several of our locks taken as one, all or
//! nothing, released in reverse order.
//!
//! Members are any of our locks through the [`Lock`] trait (`InterProcessMutex`, a read/write
//! lock's `ReadLock` or `WriteLock`, `InterProcessSemaphoreMutex`, another multi-lock, whose
//! members join the set); this crate depends on
//! `recipe-mutex` alone, so a user of multi-locks over mutexes compiles no read/write or
//! semaphore crate. It holds no lock logic of its own: each member is taken by its own recipe,
//! on its own nodes, exactly as Curator's members are, so Curator clients and ours exclude each
//! other member by member.
//!
//! Beyond Curator:
//! - **Deadlock-free among ours**: members are taken in one canonical order (by path),
//!   whatever order the caller gave, so two multi-locks of ours over overlapping sets
//!   cannot each hold what the other waits for. Curator takes members in the caller's order: a
//!   Curator multi-lock over `{b, a}` against ours over `{a, b}` can still deadlock (ours holds
//!   `a` and waits for `b`, Curator's holds `b` and waits for `a`) until one side's timeout.
//!   Give Curator peers the same order (sorted paths) to rule that out.
//! - **One deadline for the whole set** (Curator gives each member the full timeout).
//! - A member that fails stops the acquisition at once; the members taken are released, in
//!   reverse order, before the acquire returns (Curator keeps acquiring the rest after an
//!   exception, blocking if there is no timeout).
//! - Release reports every member's error (Curator keeps only the first).
//! - Never creates member k+1's node before member k is held.
//! - Members that would wait for each other are refused at construction: a path given twice
//!   (Curator's never completes) and a read and a write of one read/write lock (Curator grants
//!   [write, read] as a downgrade; here a downgrade is `WriteGuard::downgrade`).
//!
//! Ownership is explicit: the [`MultiGuard`] is the ownership of every member. Coming from
//! Curator: `acquire()` is `lock().await?`, `acquire(t, unit)` is `try_lock_for(t)`,
//! `release()` is `guard.release().await?` (or drop the guard); code that re-entered a member
//! in Curator takes the member's guard from [`MultiGuard::members`] and calls `reenter()`.
//!
//! # Examples
//!
//! ```no_run
//! use recipe_multilock::InterProcessMultiLock;
//!
//! # async fn f(client: zk_client::Client) -> Result<(), Box<dyn std::error::Error>> {
//! let accounts = InterProcessMultiLock::new(client.clone(), &["/bank/acct/7", "/bank/acct/3"])?;
//! let guard = accounts.lock().await?;            // takes /bank/acct/3, then /bank/acct/7
//! let mut ops = guard.check_ops();               // commits only while both are held
//! let set = |path: &str, data: &'static [u8]| zk_client::Op::SetData {
//!     path: path.into(),
//!     data: bytes::Bytes::from_static(data),
//!     version: None,
//! };
//! ops.push(set("/bank/acct/3/balance", b"90"));
//! ops.push(set("/bank/acct/7/balance", b"110"));
//! client.multi(&ops).await?;
//! guard.release().await?;                        // /bank/acct/7, then /bank/acct/3
//! # Ok(()) }
//! ```

mod error;
mod guard;
mod multi;
#[cfg(feature = "plant")]
pub mod plant;
#[cfg(not(feature = "plant"))]
mod plant;

pub use error::{Error, MemberError};
pub use guard::MultiGuard;
pub use multi::InterProcessMultiLock;
pub use recipe_mutex::{Guard, Hold, IntoLock, Lock, LockKind, Loss};
