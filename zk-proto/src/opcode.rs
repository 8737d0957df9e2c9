//! [`OpCode`]: the `type` of a `RequestHeader`, from Java's `ZooDefs.OpCode`.

use crate::codec::int_code;

int_code! {
    /// What a request asks the server to do (`ZooDefs.OpCode`). The reply's body is decided by
    /// the opcode of the request it answers: see [`crate::Response::decode`].
    OpCode "OpCode" {
        /// Watch notifications (never sent by a client).
        Notification = 0,
        /// `create`: replies with the created path.
        #[default]
        Create = 1,
        /// `delete`.
        Delete = 2,
        /// `exists`: replies with a `Stat`, or `NoNode`.
        Exists = 3,
        /// `getData`.
        GetData = 4,
        /// `setData`.
        SetData = 5,
        /// `getACL`.
        GetAcl = 6,
        /// `setACL`.
        SetAcl = 7,
        /// `getChildren`.
        GetChildren = 8,
        /// `sync`.
        Sync = 9,
        /// Heartbeat, sent with xid -2.
        Ping = 11,
        /// `getChildren` returning the parent's `Stat` too.
        GetChildren2 = 12,
        /// Version check (inside a multi).
        Check = 13,
        /// A transaction of writes.
        Multi = 14,
        /// `create` returning the node's `Stat` too.
        Create2 = 15,
        /// Dynamic reconfiguration.
        Reconfig = 16,
        /// Is a watch registered?
        CheckWatches = 17,
        /// Remove registered watches.
        RemoveWatches = 18,
        /// Create a container node.
        CreateContainer = 19,
        /// Server-internal.
        DeleteContainer = 20,
        /// Create a node with a time-to-live.
        CreateTtl = 21,
        /// A batch of reads.
        MultiRead = 22,
        /// `addAuth`, sent with xid -4.
        Auth = 100,
        /// Re-register watches after a reconnect, sent with xid -8.
        SetWatches = 101,
        /// SASL token exchange.
        Sasl = 102,
        /// List the session's ephemeral nodes.
        GetEphemerals = 103,
        /// Count all descendants of a node.
        GetAllChildrenNumber = 104,
        /// `SetWatches` including persistent watches, sent with xid -8.
        SetWatches2 = 105,
        /// Add a persistent or persistent-recursive watch.
        AddWatch = 106,
        /// Ask which identities the session has (ZooKeeper 3.9+).
        WhoAmI = 107,
        /// Server-internal.
        CreateSession = -10,
        /// End the session: its ephemeral nodes go at once.
        CloseSession = -11,
        /// Marks a failed operation in a multi's results.
        Error = -1,
    }
}
