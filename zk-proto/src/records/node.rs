//! Requests and responses about nodes: create, delete, exists, data, children, sync.

use std::borrow::Cow;

use super::data::{Acl, Buffer, Stat};
use crate::CreateMode;
use crate::codec::record;

record! {
    /// `create`, `create2` and `createContainer` (the opcode picks the reply).
    CreateRequest "CreateRequest" {
        /// The node's path (for a sequential mode, the prefix of the name).
        path: String = "path",
        /// The node's data.
        data: Buffer = "data",
        /// Its ACL; must not be empty (a constant such as [`Acl::OPEN_UNSAFE`] is borrowed).
        acl: Cow<'static, [Acl]> = "acl",
        /// What kind of node.
        mode: CreateMode = "flags",
    }
}

record! {
    /// `createTTL`: a create whose mode is a TTL mode.
    CreateTtlRequest "CreateTTLRequest" {
        /// The node's path.
        path: String = "path",
        /// The node's data.
        data: Buffer = "data",
        /// Its ACL (a constant such as [`Acl::OPEN_UNSAFE`] is borrowed).
        acl: Cow<'static, [Acl]> = "acl",
        /// A TTL mode.
        mode: CreateMode = "flags",
        /// Time to live in ms.
        ttl: i64 = "ttl",
    }
}

record! {
    /// The reply to `create`.
    CreateResponse "CreateResponse" {
        /// The created path (with its sequence number, if any).
        path: String = "path",
    }
}

record! {
    /// The reply to `create2`, `createContainer` and `createTTL`.
    Create2Response "Create2Response" {
        /// The created path.
        path: String = "path",
        /// The new node's metadata.
        stat: Stat = "stat",
    }
}

record! {
    /// `delete`.
    DeleteRequest "DeleteRequest" {
        /// The node.
        path: String = "path",
        /// The expected version, or -1 for any.
        version: i32 = "version",
    }
}

record! {
    /// `exists`.
    ExistsRequest "ExistsRequest" {
        /// The node.
        path: String = "path",
        /// Leave a watch (fires on create, delete or data change).
        watch: bool = "watch",
    }
}

record! {
    /// The reply to `exists` when the node exists.
    ExistsResponse "ExistsResponse" {
        /// Its metadata.
        stat: Stat = "stat",
    }
}

record! {
    /// `getData`.
    GetDataRequest "GetDataRequest" {
        /// The node.
        path: String = "path",
        /// Leave a data watch.
        watch: bool = "watch",
    }
}

record! {
    /// The reply to `getData` (and to `reconfig`).
    GetDataResponse "GetDataResponse" {
        /// The data (null if the node was created with null data).
        data: Buffer = "data",
        /// The node's metadata.
        stat: Stat = "stat",
    }
}

record! {
    /// `setData`.
    SetDataRequest "SetDataRequest" {
        /// The node.
        path: String = "path",
        /// The new data.
        data: Buffer = "data",
        /// The expected version, or -1 for any.
        version: i32 = "version",
    }
}

record! {
    /// The reply to `setData`.
    SetDataResponse "SetDataResponse" {
        /// The node's new metadata.
        stat: Stat = "stat",
    }
}

record! {
    /// `getChildren`.
    GetChildrenRequest "GetChildrenRequest" {
        /// The parent.
        path: String = "path",
        /// Leave a child watch.
        watch: bool = "watch",
    }
}

record! {
    /// The reply to `getChildren`.
    GetChildrenResponse "GetChildrenResponse" {
        /// The children's names (not paths), in no particular order.
        children: Vec<String> = "children",
    }
}

record! {
    /// `getChildren2`: children and the parent's `Stat`.
    GetChildren2Request "GetChildren2Request" {
        /// The parent.
        path: String = "path",
        /// Leave a child watch.
        watch: bool = "watch",
    }
}

record! {
    /// The reply to `getChildren2`.
    GetChildren2Response "GetChildren2Response" {
        /// The children's names.
        children: Vec<String> = "children",
        /// The parent's metadata.
        stat: Stat = "stat",
    }
}

record! {
    /// `check` (in a multi): the node must have this version.
    CheckVersionRequest "CheckVersionRequest" {
        /// The node.
        path: String = "path",
        /// The expected version, or -1 for "exists".
        version: i32 = "version",
    }
}

record! {
    /// `sync`: the server catches up with the leader before answering.
    SyncRequest "SyncRequest" {
        /// The path.
        path: String = "path",
    }
}

record! {
    /// The reply to `sync`.
    SyncResponse "SyncResponse" {
        /// The path.
        path: String = "path",
    }
}

record! {
    /// `getAllChildrenNumber`.
    GetAllChildrenNumberRequest "GetAllChildrenNumberRequest" {
        /// The node.
        path: String = "path",
    }
}

record! {
    /// The reply to `getAllChildrenNumber`.
    GetAllChildrenNumberResponse "GetAllChildrenNumberResponse" {
        /// The number of descendants.
        total_number: i32 = "totalNumber",
    }
}

record! {
    /// `getEphemerals`.
    GetEphemeralsRequest "GetEphemeralsRequest" {
        /// Only ephemerals whose path starts with this.
        prefix_path: String = "prefixPath",
    }
}

record! {
    /// The reply to `getEphemerals`.
    GetEphemeralsResponse "GetEphemeralsResponse" {
        /// The session's ephemeral nodes' paths.
        ephemerals: Vec<String> = "ephemerals",
    }
}

record! {
    /// A failed op's result in a multi's reply.
    ErrorResponse "ErrorResponse" {
        /// Why it failed.
        err: crate::ErrorCode = "err",
    }
}
