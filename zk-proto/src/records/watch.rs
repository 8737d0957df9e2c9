//! Watch records: notifications, re-registration after reconnect, persistent watches.

use crate::codec::record;
use crate::{AddWatchMode, EventType, KeeperState, WatcherType};

record! {
    /// A watch notification, sent by the server with xid -1.
    WatcherEvent "WatcherEvent" {
        /// What happened.
        event_type: EventType = "type",
        /// The session's state.
        state: KeeperState = "state",
        /// The node it happened to (server-side path: the chroot is still on it).
        path: String = "path",
    }
}

record! {
    /// Re-registers one-shot watches after a reconnect (xid -8). The server fires at once those
    /// whose node changed after `relative_zxid`.
    SetWatches "SetWatches" {
        /// The last zxid the client saw.
        relative_zxid: i64 = "relativeZxid",
        /// Paths with a data watch.
        data_watches: Vec<String> = "dataWatches",
        /// Paths with an exists watch (node absent).
        exist_watches: Vec<String> = "existWatches",
        /// Paths with a child watch.
        child_watches: Vec<String> = "childWatches",
    }
}

record! {
    /// [`SetWatches`] with persistent watches too (3.6+).
    SetWatches2 "SetWatches2" {
        /// The last zxid the client saw.
        relative_zxid: i64 = "relativeZxid",
        /// Paths with a data watch.
        data_watches: Vec<String> = "dataWatches",
        /// Paths with an exists watch.
        exist_watches: Vec<String> = "existWatches",
        /// Paths with a child watch.
        child_watches: Vec<String> = "childWatches",
        /// Paths with a persistent watch.
        persistent_watches: Vec<String> = "persistentWatches",
        /// Paths with a persistent-recursive watch.
        persistent_recursive_watches: Vec<String> = "persistentRecursiveWatches",
    }
}

record! {
    /// `addWatch`: a persistent or persistent-recursive watch.
    AddWatchRequest "AddWatchRequest" {
        /// The node.
        path: String = "path",
        /// Which kind.
        mode: AddWatchMode = "mode",
    }
}

record! {
    /// `checkWatches`.
    CheckWatchesRequest "CheckWatchesRequest" {
        /// The node.
        path: String = "path",
        /// Which watches.
        watcher_type: WatcherType = "type",
    }
}

record! {
    /// `removeWatches`.
    RemoveWatchesRequest "RemoveWatchesRequest" {
        /// The node.
        path: String = "path",
        /// Which watches.
        watcher_type: WatcherType = "type",
    }
}
