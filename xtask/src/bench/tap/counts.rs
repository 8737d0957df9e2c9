//! [`TapCounts`]: what a [`Tap`](super::Tap) has counted, a plain snapshot with a difference.

use std::collections::BTreeMap;

use zk_proto::OpCode;

/// Totals over every connection a [`Tap`](super::Tap) has carried so far (a snapshot; take
/// two and [`since`](TapCounts::since) for a window).
///
/// A request is a client frame after the connection's handshake. Pings (xid -2) and the
/// session's own requests (`auth`, `setWatches`, `setWatches2`) are counted apart from
/// [`requests`](Self::requests); the handshakes' and pings' bytes are apart from
/// [`bytes_sent`](Self::bytes_sent) and [`bytes_received`](Self::bytes_received). Byte counts
/// include each frame's 4-byte length prefix.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TapCounts {
    /// Connections accepted.
    pub connections: u64,
    /// Connections whose bytes could not be split into jute frames (a four-letter-word probe,
    /// or a corrupt stream): passed through, and not counted from then on.
    pub uncounted_connections: u64,
    /// Connect handshakes sent (a new or resumed session each).
    pub handshakes: u64,
    /// Requests, pings and the session's own requests left out.
    pub requests: u64,
    /// [`requests`](Self::requests) by opcode (its wire code; [`TapCounts::op`] reads it).
    pub by_op: BTreeMap<i32, u64>,
    /// Pings sent.
    pub pings: u64,
    /// `auth`, `setWatches` and `setWatches2` requests sent (after a reconnect, or an
    /// `addAuth`).
    pub session_requests: u64,
    /// Requests that the server logs as one transaction each, and so writes to its log and
    /// `fsync`s before it replies: `create`, `create2`, `createContainer`, `createTTL`,
    /// `delete`, `setData`, `setACL`, `reconfig`, `check`, `multi` (one transaction however
    /// many ops it holds), and `closeSession`. A write that fails is logged too (as an error
    /// transaction), so it counts.
    pub fsync_writes: u64,
    /// Awaited round trips: requests (the session's own included, pings not) sent while their
    /// connection had no request and no handshake outstanding. A request pipelined behind an
    /// outstanding one rides on its round trip.
    pub round_trips: u64,
    /// Replies to requests (and to the session's own requests), not to pings or handshakes.
    pub replies: u64,
    /// Watch notifications (server frames with xid -1).
    pub notifications: u64,
    /// Bytes of requests (and the session's own requests), client to server.
    pub bytes_sent: u64,
    /// Bytes of replies and notifications, server to client.
    pub bytes_received: u64,
    /// Bytes of pings, client to server.
    pub ping_bytes_sent: u64,
    /// Bytes of ping replies, server to client.
    pub ping_bytes_received: u64,
    /// Bytes of connect requests.
    pub handshake_bytes_sent: u64,
    /// Bytes of connect responses.
    pub handshake_bytes_received: u64,
    /// Every byte forwarded client to server, counted or not (partial frames included).
    pub forwarded_up: u64,
    /// Every byte forwarded server to client, counted or not.
    pub forwarded_down: u64,
}

impl TapCounts {
    /// The requests of opcode `op`.
    pub fn op(&self, op: OpCode) -> u64 {
        self.by_op.get(&op.code()).copied().unwrap_or(0)
    }

    /// What was counted after `earlier` (an older snapshot of the same tap): each count minus
    /// its earlier value (never below zero).
    pub fn since(&self, earlier: &TapCounts) -> TapCounts {
        let by_op = self
            .by_op
            .iter()
            .map(|(&op, &n)| {
                (
                    op,
                    n.saturating_sub(earlier.by_op.get(&op).copied().unwrap_or(0)),
                )
            })
            .filter(|&(_, n)| n > 0)
            .collect();
        let d = |now: u64, then: u64| now.saturating_sub(then);
        TapCounts {
            connections: d(self.connections, earlier.connections),
            uncounted_connections: d(self.uncounted_connections, earlier.uncounted_connections),
            handshakes: d(self.handshakes, earlier.handshakes),
            requests: d(self.requests, earlier.requests),
            by_op,
            pings: d(self.pings, earlier.pings),
            session_requests: d(self.session_requests, earlier.session_requests),
            fsync_writes: d(self.fsync_writes, earlier.fsync_writes),
            round_trips: d(self.round_trips, earlier.round_trips),
            replies: d(self.replies, earlier.replies),
            notifications: d(self.notifications, earlier.notifications),
            bytes_sent: d(self.bytes_sent, earlier.bytes_sent),
            bytes_received: d(self.bytes_received, earlier.bytes_received),
            ping_bytes_sent: d(self.ping_bytes_sent, earlier.ping_bytes_sent),
            ping_bytes_received: d(self.ping_bytes_received, earlier.ping_bytes_received),
            handshake_bytes_sent: d(self.handshake_bytes_sent, earlier.handshake_bytes_sent),
            handshake_bytes_received: d(
                self.handshake_bytes_received,
                earlier.handshake_bytes_received,
            ),
            forwarded_up: d(self.forwarded_up, earlier.forwarded_up),
            forwarded_down: d(self.forwarded_down, earlier.forwarded_down),
        }
    }
}

/// Whether a request of opcode `op` becomes one logged (and `fsync`ed) transaction.
pub(crate) fn is_fsync_write(op: OpCode) -> bool {
    matches!(
        op,
        OpCode::Create
            | OpCode::Create2
            | OpCode::CreateContainer
            | OpCode::CreateTtl
            | OpCode::Delete
            | OpCode::SetData
            | OpCode::SetAcl
            | OpCode::Reconfig
            | OpCode::Check
            | OpCode::Multi
            | OpCode::CloseSession
    )
}

/// The opcode's name as ZooKeeper's `ZooDefs.OpCode` spells it (`create`, `getChildren`), or
/// its number when unknown.
pub fn op_name(code: i32) -> String {
    let Some(op) = OpCode::from_code(code) else {
        return format!("op {code}");
    };
    let debug = format!("{op:?}");
    let mut chars = debug.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => debug,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_subtracts_field_by_field_and_drops_empty_ops() {
        let mut a = TapCounts {
            requests: 3,
            round_trips: 2,
            ..TapCounts::default()
        };
        a.by_op.insert(OpCode::Create.code(), 1);
        a.by_op.insert(OpCode::Delete.code(), 2);
        let mut b = a.clone();
        b.requests = 7;
        b.bytes_sent = 100;
        b.by_op.insert(OpCode::Delete.code(), 5);
        b.by_op.insert(OpCode::GetChildren.code(), 1);
        let d = b.since(&a);
        assert_eq!((d.requests, d.round_trips, d.bytes_sent), (4, 0, 100));
        assert_eq!(d.op(OpCode::Delete), 3);
        assert_eq!(d.op(OpCode::GetChildren), 1);
        assert_eq!(d.op(OpCode::Create), 0);
        assert_eq!(d.by_op.len(), 2, "{d:?}");
        assert_eq!(a.since(&b).requests, 0, "never below zero");
    }

    #[test]
    fn names_follow_zoodefs() {
        assert_eq!(op_name(OpCode::GetChildren.code()), "getChildren");
        assert_eq!(op_name(OpCode::Create.code()), "create");
        assert_eq!(op_name(4242), "op 4242");
        assert!(is_fsync_write(OpCode::Multi));
        assert!(!is_fsync_write(OpCode::MultiRead));
        assert!(!is_fsync_write(OpCode::Sync));
    }
}
