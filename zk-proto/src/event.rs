//! Watch events: [`EventType`] and [`KeeperState`], from Java's `Watcher.Event`.

use crate::codec::int_code;

int_code! {
    /// What happened to a watched node (`Watcher.Event.EventType`).
    EventType "EventType" {
        /// A change of connection state, not of a node.
        #[default]
        None = -1,
        /// The node was created (exists watch).
        NodeCreated = 1,
        /// The node was deleted.
        NodeDeleted = 2,
        /// The node's data changed.
        NodeDataChanged = 3,
        /// The node's children changed.
        NodeChildrenChanged = 4,
        /// A data watch was removed.
        DataWatchRemoved = 5,
        /// A child watch was removed.
        ChildWatchRemoved = 6,
        /// A persistent watch was removed.
        PersistentWatchRemoved = 7,
    }
}

int_code! {
    /// The session's state as the server or client reports it (`Watcher.Event.KeeperState`).
    KeeperState "KeeperState" {
        /// Deprecated, unused.
        Unknown = -1,
        /// Not connected.
        Disconnected = 0,
        /// Deprecated, unused.
        NoSyncConnected = 1,
        /// Connected and serving.
        #[default]
        SyncConnected = 3,
        /// Authentication failed.
        AuthFailed = 4,
        /// Connected to a read-only server.
        ConnectedReadOnly = 5,
        /// SASL authentication succeeded.
        SaslAuthenticated = 6,
        /// The session expired.
        Expired = -112,
        /// The client closed the session.
        Closed = 7,
    }
}
