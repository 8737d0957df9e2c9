//! `cargo xtask bench queue`'s pieces: N waiters queued on one mutex behind a hold, drained
//! one by one. [`ours`] is our worker (`zk-worker queue`; Curator's is
//! `java/CuratorQueue.java`, `CuratorWorker queue`), [`lines`] the lines both print, and
//! [`drain`] the arithmetic of a drained queue (hand-offs across processes, memory per
//! waiter).

pub mod drain;
pub mod lines;
pub mod ours;
