//! What a lock node of ours is to the layer: the node an attempt took and holds
//! ([`Acquired`]), and the kind of recipe it belongs to ([`RecipeKind`]). The driver, the
//! holds and the metrics all speak of it; it depends on none of them.

/// A lock node we hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Acquired {
    /// Its full path, shared with the hold's watch on it (one copy per hold).
    pub path: std::sync::Arc<str>,
    /// Its creation zxid (the fencing token).
    pub czxid: i64,
    /// The session it belongs to.
    pub session_id: i64,
}

impl Acquired {
    /// The node's [`Sequencer`](crate::Sequencer), as a lock of `kind` (the path came from
    /// the server: not checked again).
    pub fn sequencer(&self, kind: crate::NodeKind) -> crate::Sequencer {
        crate::Sequencer::held(kind, &self.path, self.czxid, self.session_id)
    }
}

/// Which recipe a lock node or an attempt is of: the `recipe` label of the lock metrics
/// (feature `metrics`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RecipeKind {
    /// A mutex (`InterProcessMutex`, and the semaphore-mutex's inner lock).
    #[default]
    Mutex,
    /// A read lock (`__READ__` nodes).
    Read,
    /// A write lock (`__WRIT__` nodes).
    Write,
    /// A semaphore's leases (`lease-` nodes).
    Semaphore,
}

impl RecipeKind {
    /// The label's value: `mutex`, `read`, `write` or `semaphore`.
    pub fn as_str(self) -> &'static str {
        match self {
            RecipeKind::Mutex => "mutex",
            RecipeKind::Read => "read",
            RecipeKind::Write => "write",
            RecipeKind::Semaphore => "semaphore",
        }
    }

    /// The kind of the fair lock whose lock name (Curator's) is `lock_name`.
    pub fn of_lock_name(lock_name: &str) -> Self {
        match lock_name {
            recipes_core::rwlock::READ_LOCK_NAME => RecipeKind::Read,
            recipes_core::rwlock::WRITE_LOCK_NAME => RecipeKind::Write,
            _ => RecipeKind::Mutex,
        }
    }

    /// The kind of lock node `path` (by the lock name in its last segment).
    pub fn of_node(path: &str) -> Self {
        let name = path.rsplit('/').next().unwrap_or(path);
        if name.contains(recipes_core::rwlock::READ_LOCK_NAME) {
            RecipeKind::Read
        } else if name.contains(recipes_core::rwlock::WRITE_LOCK_NAME) {
            RecipeKind::Write
        } else if name.contains("-lease-") {
            RecipeKind::Semaphore
        } else {
            RecipeKind::Mutex
        }
    }
}
