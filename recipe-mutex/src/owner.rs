//! [`Owner`]: who re-enters a lock. Curator counts per thread; we count per tokio task.

/// The owner of a reentrant hold: the current tokio task, or the current thread outside
/// any task. Futures joined inside one task (`join!`, `select!`) are one owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Owner {
    /// A tokio task.
    Task(tokio::task::Id),
    /// A thread outside any task.
    Thread(std::thread::ThreadId),
}

impl Owner {
    /// The caller.
    pub fn current() -> Owner {
        match tokio::task::try_id() {
            Some(id) => Owner::Task(id),
            None => Owner::Thread(std::thread::current().id()),
        }
    }
}
