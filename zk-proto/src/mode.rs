//! Modes carried in requests: [`CreateMode`], [`AddWatchMode`], [`WatcherType`].

use crate::codec::int_code;

int_code! {
    /// The kind of node a create makes (`CreateMode`, the `flags` of a `CreateRequest`).
    CreateMode "CreateMode" {
        /// Stays until deleted.
        #[default]
        Persistent = 0,
        /// Deleted when the creating session ends.
        Ephemeral = 1,
        /// Persistent, with a 10-digit sequence number appended by the parent.
        PersistentSequential = 2,
        /// Ephemeral, with a sequence number.
        EphemeralSequential = 3,
        /// Deleted by the server some time after its last child goes (3.5+).
        Container = 4,
        /// Persistent, deleted when unchanged and childless for its TTL (needs the server's
        /// `extendedTypesEnabled`).
        PersistentWithTtl = 5,
        /// Persistent sequential with a TTL.
        PersistentSequentialWithTtl = 6,
    }
}

impl CreateMode {
    /// Whether the server appends a sequence number.
    pub const fn is_sequential(self) -> bool {
        matches!(
            self,
            Self::PersistentSequential
                | Self::EphemeralSequential
                | Self::PersistentSequentialWithTtl
        )
    }

    /// Whether the node dies with its session.
    pub const fn is_ephemeral(self) -> bool {
        matches!(self, Self::Ephemeral | Self::EphemeralSequential)
    }

    /// Whether the node has a time-to-live (and so is created with `CreateTtl`).
    pub const fn is_ttl(self) -> bool {
        matches!(
            self,
            Self::PersistentWithTtl | Self::PersistentSequentialWithTtl
        )
    }
}

int_code! {
    /// The mode of `addWatch` (`AddWatchMode`).
    AddWatchMode "AddWatchMode" {
        /// Fires for the node itself, every time, until removed.
        #[default]
        Persistent = 0,
        /// Fires for the node and every descendant, until removed.
        PersistentRecursive = 1,
    }
}

int_code! {
    /// Which watches `checkWatches`/`removeWatches` name (`Watcher.WatcherType`).
    WatcherType "WatcherType" {
        /// Child watches.
        Children = 1,
        /// Data and exists watches.
        Data = 2,
        /// Every kind.
        #[default]
        Any = 3,
        /// Persistent watches.
        Persistent = 4,
        /// Persistent-recursive watches.
        PersistentRecursive = 5,
    }
}
