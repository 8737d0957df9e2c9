//! Frame headers ([`RequestHeader`], [`ReplyHeader`], [`MultiHeader`]) and the reserved xids.

use crate::codec::record;
use crate::{ErrorCode, OpCode};

/// The xids ZooKeeper reserves. Normal requests use positive xids; the server answers them in
/// the order they were sent.
pub mod xid {
    /// A watch notification (`WatcherEvent` body). See `ClientCnxn.SendThread.readResponse`.
    pub const NOTIFICATION: i32 = -1;
    /// A ping and its reply.
    pub const PING: i32 = -2;
    /// An `addAuth` request and its reply (which may carry `AuthFailed`).
    pub const AUTH: i32 = -4;
    /// A `SetWatches`/`SetWatches2` request and its reply.
    pub const SET_WATCHES: i32 = -8;
}

record! {
    /// Precedes every request body.
    RequestHeader "RequestHeader" {
        /// Matches the reply to the request (see [`xid`] for the reserved ones).
        xid: i32 = "xid",
        /// What the request asks.
        op: OpCode = "type",
    }
}

record! {
    /// Precedes every reply body. When `err` is not `Ok` no body follows.
    ReplyHeader "ReplyHeader" {
        /// The request's xid, or a reserved one.
        xid: i32 = "xid",
        /// The last zxid the server has seen (-1 for notifications on old servers).
        zxid: i64 = "zxid",
        /// The result.
        err: ErrorCode = "err",
    }
}

record! {
    /// Precedes each op (and ends the list) inside a multi request or response.
    MultiHeader "MultiHeader" {
        /// The op's opcode, -1 (error result) or -1 at the end.
        op: i32 = "type",
        /// True only on the end marker.
        done: bool = "done",
        /// -1 in requests; the op's result code in responses.
        err: i32 = "err",
    }
}
