//! [`ConnTap`]: the counting of one tapped connection, bytes in, counts changed, no IO.

use bytes::BytesMut;
use zk_proto::{DEFAULT_MAX_FRAME_LEN, OpCode, Reader, split_frame, xid};

use super::counts::{TapCounts, is_fsync_write};

/// The longest frame the tap splits: above ZooKeeper's own default limit, so that a frame
/// the server or client accepts is never refused here. Anything longer (a four-letter word
/// reads as a length of over a gigabyte) stops the counting of its connection.
const MAX_FRAME: usize = 16 * DEFAULT_MAX_FRAME_LEN;

/// The counting of one connection through the tap: each direction's bytes split into jute
/// frames, and the requests outstanding on it.
///
/// Feed it every chunk each way, in the order read, with [`handle_client_bytes`] and
/// [`handle_server_bytes`], *before* the chunk is forwarded: then a reply is always counted
/// after the request it answers, and a request sent in answer to a reply after that reply,
/// which is what the round-trip count relies on. The first frame each way is the connect
/// handshake. A stream that does not split into frames (a four-letter word, or corrupt
/// bytes) stops the counting of this connection; its bytes are still counted as forwarded.
///
/// [`handle_client_bytes`]: ConnTap::handle_client_bytes
/// [`handle_server_bytes`]: ConnTap::handle_server_bytes
#[derive(Debug)]
pub(crate) struct ConnTap {
    /// Client to server.
    up: Half,
    /// Server to client.
    down: Half,
    /// False once the connection could not be parsed.
    counting: bool,
    /// Requests (and the handshake) sent and not answered yet; pings left out.
    outstanding: u64,
}

/// One direction of a connection.
#[derive(Debug, Default)]
struct Half {
    /// Bytes of a frame not complete yet.
    buf: BytesMut,
    /// Whether the handshake frame has gone by.
    past_handshake: bool,
}

/// A frame the tap cannot read as ZooKeeper's: its connection is not counted from then on.
#[derive(Debug)]
struct Unparsable;

impl ConnTap {
    /// A connection just accepted (counted in `counts`).
    pub(crate) fn open(counts: &mut TapCounts) -> ConnTap {
        counts.connections += 1;
        ConnTap {
            up: Half::default(),
            down: Half::default(),
            counting: true,
            outstanding: 0,
        }
    }

    /// Whether this connection is still being counted.
    #[cfg(test)]
    pub(crate) fn is_counting(&self) -> bool {
        self.counting
    }

    /// Bytes the client sent, about to be forwarded to the server.
    pub(crate) fn handle_client_bytes(&mut self, bytes: &[u8], counts: &mut TapCounts) {
        counts.forwarded_up += bytes.len() as u64;
        if !self.counting {
            return;
        }
        self.up.buf.extend_from_slice(bytes);
        loop {
            let frame = match split_frame(&mut self.up.buf, MAX_FRAME) {
                Ok(Some(frame)) => frame,
                Ok(None) => return,
                Err(_) => return self.stop(counts),
            };
            if self.on_client_frame(&frame, counts).is_err() {
                return self.stop(counts);
            }
        }
    }

    /// Bytes the server sent, about to be forwarded to the client.
    pub(crate) fn handle_server_bytes(&mut self, bytes: &[u8], counts: &mut TapCounts) {
        counts.forwarded_down += bytes.len() as u64;
        if !self.counting {
            return;
        }
        self.down.buf.extend_from_slice(bytes);
        loop {
            let frame = match split_frame(&mut self.down.buf, MAX_FRAME) {
                Ok(Some(frame)) => frame,
                Ok(None) => return,
                Err(_) => return self.stop(counts),
            };
            if self.on_server_frame(&frame, counts).is_err() {
                return self.stop(counts);
            }
        }
    }

    fn stop(&mut self, counts: &mut TapCounts) {
        self.counting = false;
        self.up.buf = BytesMut::new();
        self.down.buf = BytesMut::new();
        counts.uncounted_connections += 1;
    }

    fn on_client_frame(&mut self, frame: &[u8], counts: &mut TapCounts) -> Result<(), Unparsable> {
        let len = 4 + frame.len() as u64;
        if !self.up.past_handshake {
            self.up.past_handshake = true;
            counts.handshakes += 1;
            counts.handshake_bytes_sent += len;
            self.outstanding += 1;
            return Ok(());
        }
        let mut r = Reader::new(frame);
        let (this_xid, code) = match (r.i32(), r.i32()) {
            (Ok(x), Ok(op)) => (x, op),
            _ => return Err(Unparsable),
        };
        let op = OpCode::from_code(code);
        if this_xid == xid::PING || op == Some(OpCode::Ping) {
            counts.pings += 1;
            counts.ping_bytes_sent += len;
            return Ok(());
        }
        if self.outstanding == 0 {
            counts.round_trips += 1;
        }
        self.outstanding += 1;
        counts.bytes_sent += len;
        if matches!(
            op,
            Some(OpCode::Auth | OpCode::SetWatches | OpCode::SetWatches2)
        ) {
            counts.session_requests += 1;
            return Ok(());
        }
        counts.requests += 1;
        *counts.by_op.entry(code).or_default() += 1;
        if op.is_some_and(is_fsync_write) {
            counts.fsync_writes += 1;
        }
        Ok(())
    }

    fn on_server_frame(&mut self, frame: &[u8], counts: &mut TapCounts) -> Result<(), Unparsable> {
        let len = 4 + frame.len() as u64;
        if !self.down.past_handshake {
            self.down.past_handshake = true;
            counts.handshake_bytes_received += len;
            self.outstanding = self.outstanding.saturating_sub(1);
            return Ok(());
        }
        let this_xid = Reader::new(frame).i32().map_err(|_| Unparsable)?;
        match this_xid {
            xid::NOTIFICATION => {
                counts.notifications += 1;
                counts.bytes_received += len;
            }
            xid::PING => counts.ping_bytes_received += len,
            _ => {
                counts.replies += 1;
                counts.bytes_received += len;
                self.outstanding = self.outstanding.saturating_sub(1);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use bytes::BufMut;
    use zk_proto::records::{
        Acl, ConnectRequest, ConnectResponse, CreateRequest, DeleteRequest, GetChildrenRequest,
        WatcherEvent,
    };
    use zk_proto::{
        CreateMode, Encode, EventType, KeeperState, MultiOp, MultiRequest, ReplyHeader, Request,
        encode_frame,
    };

    use super::*;

    fn connect_request() -> BytesMut {
        let mut out = BytesMut::new();
        let req = ConnectRequest {
            protocol_version: 0,
            last_zxid_seen: 0,
            time_out: 10_000,
            session_id: 0,
            passwd: Some(vec![0u8; 16].into()),
            read_only: Some(false),
        };
        encode_frame(&req, &mut out, DEFAULT_MAX_FRAME_LEN).unwrap();
        out
    }

    fn connect_response() -> BytesMut {
        let mut out = BytesMut::new();
        let resp = ConnectResponse {
            protocol_version: 0,
            time_out: 10_000,
            session_id: 7,
            passwd: Some(vec![1u8; 16].into()),
            read_only: Some(false),
        };
        encode_frame(&resp, &mut out, DEFAULT_MAX_FRAME_LEN).unwrap();
        out
    }

    fn request(xid: i32, req: &Request) -> BytesMut {
        let mut out = BytesMut::new();
        req.encode_frame(xid, &mut out, DEFAULT_MAX_FRAME_LEN)
            .unwrap();
        out
    }

    fn create(path: &str) -> Request {
        Request::Create(CreateRequest {
            path: path.into(),
            data: Some(Vec::new().into()),
            acl: Acl::open_unsafe().into(),
            mode: CreateMode::EphemeralSequential,
        })
    }

    fn children(path: &str) -> Request {
        Request::GetChildren(GetChildrenRequest {
            path: path.into(),
            watch: false,
        })
    }

    fn delete(path: &str) -> Request {
        Request::Delete(DeleteRequest {
            path: path.into(),
            version: -1,
        })
    }

    /// A reply header alone (a reply without a body, as to a delete), `body` bytes after it.
    fn reply(xid: i32, body: &[u8]) -> BytesMut {
        let header = ReplyHeader {
            xid,
            zxid: 5,
            err: zk_proto::ErrorCode::Ok,
        };
        let mut out = BytesMut::new();
        out.put_i32(i32::try_from(header.encoded_len() + body.len()).unwrap());
        header.encode(&mut out).unwrap();
        out.extend_from_slice(body);
        out
    }

    fn notification() -> BytesMut {
        let event = WatcherEvent {
            event_type: EventType::NodeDeleted,
            state: KeeperState::SyncConnected,
            path: "/l/a".into(),
        };
        let mut body = BytesMut::new();
        event.encode(&mut body).unwrap();
        reply(xid::NOTIFICATION, &body)
    }

    /// A tapped connection past its handshake.
    fn connected(counts: &mut TapCounts) -> ConnTap {
        let mut tap = ConnTap::open(counts);
        tap.handle_client_bytes(&connect_request(), counts);
        tap.handle_server_bytes(&connect_response(), counts);
        tap
    }

    #[test]
    fn the_handshake_is_apart_and_pipelined_requests_ride_one_round_trip() {
        let mut counts = TapCounts::default();
        let mut tap = connected(&mut counts);
        assert_eq!(counts.handshakes, 1);
        assert_eq!(counts.handshake_bytes_sent, connect_request().len() as u64);
        assert_eq!(
            counts.handshake_bytes_received,
            connect_response().len() as u64
        );
        assert_eq!((counts.requests, counts.round_trips), (0, 0));

        // create + getChildren in one write: one round trip.
        let mut both = request(1, &create("/l/a-"));
        both.extend_from_slice(&request(2, &children("/l")));
        tap.handle_client_bytes(&both, &mut counts);
        assert_eq!((counts.requests, counts.round_trips), (2, 1));
        // The first reply is in; the second is still outstanding, so a third request rides.
        tap.handle_server_bytes(&reply(1, b"\0\0\0\x05/l/a-"), &mut counts);
        tap.handle_client_bytes(&request(3, &children("/l")), &mut counts);
        assert_eq!((counts.requests, counts.round_trips), (3, 1));
        tap.handle_server_bytes(&reply(2, &[0, 0, 0, 0]), &mut counts);
        tap.handle_server_bytes(&reply(3, &[0, 0, 0, 0]), &mut counts);
        // All answered: the delete is a new round trip.
        tap.handle_client_bytes(&request(4, &delete("/l/a-")), &mut counts);
        tap.handle_server_bytes(&reply(4, &[]), &mut counts);
        assert_eq!((counts.requests, counts.round_trips), (4, 2));
        assert_eq!(counts.fsync_writes, 2);
        assert_eq!(counts.op(OpCode::GetChildren), 2);
        assert_eq!(counts.op(OpCode::Create), 1);
        assert_eq!(counts.op(OpCode::Delete), 1);
        assert_eq!(counts.replies, 4);
        let sent =
            both.len() + request(3, &children("/l")).len() + request(4, &delete("/l/a-")).len();
        assert_eq!(counts.bytes_sent, sent as u64);
        assert_eq!(
            counts.forwarded_up,
            counts.bytes_sent + counts.handshake_bytes_sent
        );
        assert_eq!(
            counts.forwarded_down,
            counts.bytes_received + counts.handshake_bytes_received
        );
        assert_eq!(counts.uncounted_connections, 0);
    }

    #[test]
    fn requests_pipelined_behind_the_handshake_ride_on_it() {
        let mut counts = TapCounts::default();
        let mut tap = ConnTap::open(&mut counts);
        let mut early = connect_request();
        early.extend_from_slice(&request(1, &children("/")));
        tap.handle_client_bytes(&early, &mut counts);
        assert_eq!((counts.requests, counts.round_trips), (1, 0));
        tap.handle_server_bytes(&connect_response(), &mut counts);
        tap.handle_server_bytes(&reply(1, &[0, 0, 0, 0]), &mut counts);
        tap.handle_client_bytes(&request(2, &children("/")), &mut counts);
        assert_eq!((counts.requests, counts.round_trips), (2, 1));
    }

    #[test]
    fn frames_split_anywhere_are_counted_once_whole() {
        let mut counts = TapCounts::default();
        let mut tap = connected(&mut counts);
        let mut stream = request(1, &create("/l/a-"));
        stream.extend_from_slice(&request(2, &children("/l")));
        for byte in stream.chunks(1) {
            tap.handle_client_bytes(byte, &mut counts);
        }
        assert_eq!((counts.requests, counts.round_trips), (2, 1));
        assert_eq!(counts.bytes_sent, stream.len() as u64);
        let down = reply(1, b"\0\0\0\x05/l/a-");
        let (a, b) = down.split_at(7);
        tap.handle_server_bytes(a, &mut counts);
        assert_eq!(counts.replies, 0);
        tap.handle_server_bytes(b, &mut counts);
        assert_eq!(counts.replies, 1);
    }

    #[test]
    fn pings_notifications_and_session_requests_are_apart() {
        let mut counts = TapCounts::default();
        let mut tap = connected(&mut counts);
        // A ping outstanding does not make the next request ride on it.
        let ping = request(xid::PING, &Request::Ping);
        tap.handle_client_bytes(&ping, &mut counts);
        tap.handle_client_bytes(&request(1, &children("/l")), &mut counts);
        assert_eq!(
            (counts.pings, counts.requests, counts.round_trips),
            (1, 1, 1)
        );
        assert_eq!(counts.ping_bytes_sent, ping.len() as u64);
        let pong = reply(xid::PING, &[]);
        tap.handle_server_bytes(&pong, &mut counts);
        tap.handle_server_bytes(&notification(), &mut counts);
        assert_eq!(counts.notifications, 1);
        assert_eq!(counts.replies, 0, "a ping reply and a notification");
        assert_eq!(counts.ping_bytes_received, pong.len() as u64);
        assert_eq!(counts.bytes_received, notification().len() as u64);
        tap.handle_server_bytes(&reply(1, &[0, 0, 0, 0]), &mut counts);
        assert_eq!(counts.replies, 1);
        // setWatches after a reconnect: a round trip, not a request.
        let set_watches = Request::SetWatches(zk_proto::records::SetWatches {
            relative_zxid: 5,
            data_watches: vec!["/l/a".into()],
            exist_watches: Vec::new(),
            child_watches: Vec::new(),
        });
        tap.handle_client_bytes(&request(xid::SET_WATCHES, &set_watches), &mut counts);
        assert_eq!(
            (counts.session_requests, counts.requests, counts.round_trips),
            (1, 1, 2)
        );
    }

    #[test]
    fn a_multi_is_one_fsynced_write_and_reads_are_none() {
        let mut counts = TapCounts::default();
        let mut tap = connected(&mut counts);
        let multi = Request::Multi(MultiRequest {
            ops: vec![
                MultiOp::Create(CreateRequest {
                    path: "/m/0/a-".into(),
                    data: None,
                    acl: Acl::open_unsafe().into(),
                    mode: CreateMode::EphemeralSequential,
                }),
                MultiOp::Create(CreateRequest {
                    path: "/m/1/a-".into(),
                    data: None,
                    acl: Acl::open_unsafe().into(),
                    mode: CreateMode::EphemeralSequential,
                }),
            ],
        });
        tap.handle_client_bytes(&request(1, &multi), &mut counts);
        tap.handle_client_bytes(&request(2, &children("/m/0")), &mut counts);
        assert_eq!((counts.requests, counts.fsync_writes), (2, 1));
        assert_eq!(counts.op(OpCode::Multi), 1);
    }

    #[test]
    fn a_four_letter_word_passes_through_uncounted() {
        let mut counts = TapCounts::default();
        let mut tap = ConnTap::open(&mut counts);
        tap.handle_client_bytes(b"mntr", &mut counts);
        assert!(!tap.is_counting());
        tap.handle_server_bytes(b"zk_version\t3.8.4\n", &mut counts);
        assert_eq!(counts.uncounted_connections, 1);
        assert_eq!((counts.forwarded_up, counts.forwarded_down), (4, 17));
        assert_eq!((counts.handshakes, counts.requests), (0, 0));
        assert_eq!(counts.handshake_bytes_received, 0);
    }

    #[test]
    fn a_frame_too_short_for_a_header_stops_the_counting() {
        let mut counts = TapCounts::default();
        let mut tap = connected(&mut counts);
        tap.handle_client_bytes(&[0, 0, 0, 2, 0, 1], &mut counts);
        assert!(!tap.is_counting());
        // Later bytes are forwarded, not parsed.
        tap.handle_client_bytes(&request(1, &children("/")), &mut counts);
        assert_eq!((counts.requests, counts.uncounted_connections), (0, 1));
        let short_reply = [0, 0, 0, 1, 9];
        let mut other = connected(&mut counts);
        other.handle_server_bytes(&short_reply, &mut counts);
        assert!(!other.is_counting());
        assert_eq!(counts.uncounted_connections, 2);
    }
}
