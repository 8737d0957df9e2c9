//! Shared by `tests/decode_total.rs` and the fuzz targets in `fuzz/` (which include this file
//! with `#[path]`): sample values of every frame kind, decoding a frame as a given kind,
//! re-encoding what was decoded, the round-trip check, and the fuzz input format.

#![allow(dead_code)]

use bytes::{Bytes, BytesMut};
use zk_proto::multi::{MultiOp, MultiRequest, MultiResponse, MultiResult};
use zk_proto::records::{
    Acl, AddWatchRequest, AuthPacket, CheckVersionRequest, CheckWatchesRequest, ClientInfo,
    ConnectRequest, ConnectResponse, Create2Response, CreateRequest, CreateResponse,
    CreateTtlRequest, DeleteRequest, ErrorResponse, ExistsRequest, ExistsResponse, GetAclRequest,
    GetAclResponse, GetAllChildrenNumberRequest, GetAllChildrenNumberResponse, GetChildren2Request,
    GetChildren2Response, GetChildrenRequest, GetChildrenResponse, GetDataRequest, GetDataResponse,
    GetEphemeralsRequest, GetEphemeralsResponse, GetSaslRequest, Id, Perms, ReconfigRequest,
    RemoveWatchesRequest, SetAclRequest, SetAclResponse, SetDataRequest, SetDataResponse,
    SetSaslResponse, SetWatches, SetWatches2, Stat, SyncRequest, SyncResponse, WhoAmIResponse,
};
use zk_proto::{
    AddWatchMode, CreateMode, DEFAULT_MAX_FRAME_LEN, Decode, DecodeError, Encode, ErrorCode,
    EventType, FrameError, KeeperState, OpCode, Reader, ReplyHeader, Request, RequestHeader,
    Response, ServerFrame, WatcherEvent, WatcherType, split_frame,
};

/// How a frame is decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A frame from the server after the handshake; `op_for` answers every xid with this.
    Server(Option<OpCode>),
    /// The server's handshake reply, `ConnectResponse::decode_exact`.
    ConnectResponse,
    /// The client's handshake, `ConnectRequest::decode_exact`.
    ConnectRequest,
    /// A client request after the handshake, `Request::decode_frame`.
    Request,
}

impl Kind {
    /// Every way a frame can be decoded: as a reply to each opcode, to no pending request, as
    /// either handshake record, and as a request.
    pub fn all() -> Vec<Kind> {
        OpCode::ALL
            .iter()
            .map(|&op| Kind::Server(Some(op)))
            .chain([
                Kind::Server(None),
                Kind::ConnectResponse,
                Kind::ConnectRequest,
                Kind::Request,
            ])
            .collect()
    }
}

/// A decoded frame of any kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decoded {
    /// From `ServerFrame::decode`.
    Server(ServerFrame),
    /// From `ConnectResponse::decode_exact`.
    ConnectResponse(ConnectResponse),
    /// From `ConnectRequest::decode_exact`.
    ConnectRequest(ConnectRequest),
    /// From `Request::decode_frame`.
    Request(RequestHeader, Request),
}

/// Decodes `frame` (without its length prefix) as `kind`.
pub fn decode(kind: Kind, frame: &[u8]) -> Result<Decoded, DecodeError> {
    match kind {
        Kind::Server(op) => ServerFrame::decode(frame, |_| op).map(Decoded::Server),
        Kind::ConnectResponse => {
            ConnectResponse::decode_exact(frame, "ConnectResponse").map(Decoded::ConnectResponse)
        }
        Kind::ConnectRequest => {
            ConnectRequest::decode_exact(frame, "ConnectRequest").map(Decoded::ConnectRequest)
        }
        Kind::Request => Request::decode_frame(frame).map(|(h, r)| Decoded::Request(h, r)),
    }
}

/// Encodes a value as the frame it was decoded from (without the length prefix).
pub fn encode(value: &Decoded) -> Vec<u8> {
    let mut out = BytesMut::new();
    match value {
        Decoded::Server(ServerFrame::Notification(header, event)) => {
            header.encode(&mut out).expect("encode header");
            event.encode(&mut out).expect("encode event");
        }
        Decoded::Server(ServerFrame::Reply(header, body)) => {
            header.encode(&mut out).expect("encode header");
            if let Some(body) = body {
                encode_response(body, &mut out);
            }
        }
        Decoded::ConnectResponse(r) => r.encode(&mut out).expect("encode ConnectResponse"),
        Decoded::ConnectRequest(r) => r.encode(&mut out).expect("encode ConnectRequest"),
        Decoded::Request(header, request) => {
            request
                .encode_frame(header.xid, &mut out, i32::MAX as usize)
                .expect("encode request");
            let _prefix = out.split_to(4);
        }
    }
    out.to_vec()
}

/// Encodes the body of a reply.
pub fn encode_response(body: &Response, out: &mut BytesMut) {
    let written = match body {
        Response::Empty => Ok(()),
        Response::AddWatch(b) => b.encode(out),
        Response::Create(b) => b.encode(out),
        Response::Create2(b) => b.encode(out),
        Response::Exists(b) => b.encode(out),
        Response::GetData(b) => b.encode(out),
        Response::SetData(b) => b.encode(out),
        Response::GetAcl(b) => b.encode(out),
        Response::SetAcl(b) => b.encode(out),
        Response::GetChildren(b) => b.encode(out),
        Response::GetChildren2(b) => b.encode(out),
        Response::Sync(b) => b.encode(out),
        Response::Multi(b) => b.encode(out),
        Response::Sasl(b) => b.encode(out),
        Response::GetEphemerals(b) => b.encode(out),
        Response::GetAllChildrenNumber(b) => b.encode(out),
        Response::WhoAmI(b) => b.encode(out),
        other => panic!("a Response variant this test does not know: {other:?}"),
    };
    written.expect("encode response");
}

/// The property every successful decode must have: re-encoding the value and decoding that
/// as the same kind gives the same value, re-encoding is stable, and the re-encoded bytes
/// equal the input unless the input held a 4-byte UTF-8 character (which is re-encoded as a
/// Java-style surrogate pair).
pub fn check_round_trip(kind: Kind, input: &[u8], value: &Decoded) {
    let bytes = encode(value);
    let again = match decode(kind, &bytes) {
        Ok(again) => again,
        Err(e) => panic!(
            "{kind:?}: re-encoded value does not decode: {e}\n value: {value:?}\n input: {}\n re-encoded: {}",
            hex(input),
            hex(&bytes)
        ),
    };
    assert_eq!(
        &again,
        value,
        "{kind:?}: round trip changed the value\n input: {}\n re-encoded: {}",
        hex(input),
        hex(&bytes)
    );
    assert_eq!(encode(&again), bytes, "{kind:?}: encoding is not stable");
    if bytes != input {
        assert!(
            input.iter().any(|&b| b >= 0xf0),
            "{kind:?}: decoded a non-canonical input that has no 4-byte UTF-8\n value: {value:?}\n input: {}\n re-encoded: {}",
            hex(input),
            hex(&bytes)
        );
    }
}

/// Decodes `input` as `kind` and, on success, checks the round trip. Returns whether it
/// decoded.
pub fn check_one(kind: Kind, input: &[u8]) -> bool {
    match decode(kind, input) {
        Ok(value) => {
            check_round_trip(kind, input, &value);
            true
        }
        Err(_) => false,
    }
}

/// Lower-case hex, for failure messages.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `body` with its 4-byte length prefix.
pub fn framed(body: &[u8]) -> Vec<u8> {
    let len = i32::try_from(body.len()).expect("frame length");
    let mut out = len.to_be_bytes().to_vec();
    out.extend_from_slice(body);
    out
}

// ---------------------------------------------------------------------------------------
// The fuzz input format, shared with the seed writer.

/// The frame length limits a fuzz input's first byte picks from (its low 3 bits).
pub const FUZZ_MAX_LENS: [usize; 8] = [DEFAULT_MAX_FRAME_LEN, 0, 9, 16, 64, 256, 1024, 4096];

/// What the first byte of a fuzz input means: the frame length limit (low 3 bits) and the
/// size of the chunks the stream is fed in (high 5 bits; 0 feeds the whole stream at once).
pub fn fuzz_params(b0: u8) -> (usize, usize) {
    let max = FUZZ_MAX_LENS
        .get(usize::from(b0 & 7))
        .copied()
        .unwrap_or(DEFAULT_MAX_FRAME_LEN);
    (max, usize::from(b0 >> 3))
}

/// The fuzz targets' `op_for`: the low byte of the xid picks an opcode from `OpCode::ALL`,
/// or, past its end, no pending request.
pub fn fuzz_op_for(xid: i32) -> Option<OpCode> {
    let i = usize::from(xid.to_be_bytes()[3]) % (OpCode::ALL.len() + 1);
    OpCode::ALL.get(i).copied()
}

/// An xid that [`fuzz_op_for`] maps to `op`.
pub fn fuzz_xid_for(op: OpCode) -> i32 {
    let i = OpCode::ALL
        .iter()
        .position(|&o| o == op)
        .expect("op in ALL");
    i32::try_from(i).expect("small index") + 0x100
}

/// Splits a byte stream into frames as a connection would: fed into a `BytesMut` in chunks
/// of `chunk` bytes (0: all at once), `split_frame` called until it has no whole frame.
/// Returns the frames and the error that stopped the stream, if any. Checks that each frame
/// is within `max` and that the frames, with their prefixes, are the start of the stream.
pub fn split_stream(stream: &[u8], max: usize, chunk: usize) -> (Vec<Bytes>, Option<FrameError>) {
    let mut buf = BytesMut::new();
    let mut frames = Vec::new();
    let mut consumed = 0;
    let pieces: Vec<&[u8]> = if chunk == 0 {
        vec![stream]
    } else {
        stream.chunks(chunk).collect()
    };
    for piece in pieces {
        buf.extend_from_slice(piece);
        loop {
            match split_frame(&mut buf, max) {
                Ok(Some(frame)) => {
                    assert!(frame.len() <= max, "frame over the limit");
                    let whole = framed(&frame);
                    assert_eq!(
                        stream.get(consumed..consumed + whole.len()),
                        Some(&whole[..]),
                        "split_frame returned bytes that are not the next frame"
                    );
                    consumed += whole.len();
                    frames.push(frame.freeze());
                }
                Ok(None) => break,
                Err(e) => return (frames, Some(e)),
            }
        }
    }
    assert_eq!(
        stream.get(consumed..),
        Some(&buf[..]),
        "split_frame lost bytes"
    );
    (frames, None)
}

// ---------------------------------------------------------------------------------------
// Sample values.

/// One valid frame (without its length prefix), how to decode it, and what it decodes to.
#[derive(Debug, Clone)]
pub struct Sample {
    pub kind: Kind,
    pub frame: Vec<u8>,
    pub value: Decoded,
}

impl Sample {
    fn new(kind: Kind, value: Decoded) -> Self {
        Self {
            kind,
            frame: encode(&value),
            value,
        }
    }
}

fn pick<T: Clone>(items: &[T], i: usize) -> T {
    items
        .get(i % items.len())
        .cloned()
        .expect("non-empty sample list")
}

/// Strings: empty, ASCII, 2- and 3-byte UTF-8, supplementary characters (sent as surrogate
/// pairs), NUL, and a long one.
pub fn strings() -> Vec<String> {
    vec![
        String::new(),
        "/".into(),
        "/zookeeper/quota".into(),
        "/app/lock-0000000042".into(),
        "/中文/ü/é".into(),
        "emoji 😀 and 𝄞".into(),
        "nul\u{0}byte".into(),
        "/long/".to_owned() + &"x".repeat(200),
    ]
}

fn buffers() -> Vec<Option<Bytes>> {
    vec![
        None,
        Some(Bytes::new()),
        Some(Bytes::from_static(b"hello")),
        Some((0..=255u8).collect::<Vec<u8>>().into()),
        Some(Bytes::from_static(&[0xff, 0xff, 0xff, 0xff])),
    ]
}

fn stats() -> Vec<Stat> {
    vec![
        Stat::default(),
        Stat {
            czxid: 0x1_0000_0001,
            mzxid: 0x1_0000_0002,
            ctime: 1_700_000_000_000,
            mtime: 1_700_000_000_123,
            version: 3,
            cversion: -1,
            aversion: i32::MAX,
            ephemeral_owner: 0x1234_5678_9abc_def0,
            data_length: 5,
            num_children: 2,
            pzxid: i64::MIN,
        },
    ]
}

fn acls() -> Vec<Vec<Acl>> {
    vec![
        Vec::new(),
        Acl::open_unsafe(),
        vec![
            Acl {
                perms: Perms::READ | Perms::WRITE,
                id: Id::new("digest", "user:hash="),
            },
            Acl {
                perms: Perms(-1),
                id: Id::new("ip", "10.0.0.0/8"),
            },
            Acl::creator_all().remove(0),
        ],
    ]
}

fn string_lists() -> Vec<Vec<String>> {
    vec![
        Vec::new(),
        vec!["a".into()],
        strings(),
        vec![String::new(); 3],
    ]
}

fn multi_results() -> Vec<MultiResult> {
    let stat = pick(&stats(), 1);
    vec![
        MultiResult::Create(CreateResponse { path: "/a".into() }),
        MultiResult::Create2(Create2Response {
            path: "/b-0000000001".into(),
            stat: stat.clone(),
        }),
        MultiResult::Delete,
        MultiResult::SetData(SetDataResponse { stat: stat.clone() }),
        MultiResult::Check,
        MultiResult::GetChildren(GetChildrenResponse {
            children: vec!["x".into(), "y😀".into()],
        }),
        MultiResult::GetData(GetDataResponse {
            data: Some(Bytes::from_static(b"d")),
            stat,
        }),
        MultiResult::GetData(GetDataResponse {
            data: None,
            stat: Stat::default(),
        }),
        MultiResult::Error(ErrorCode::Ok),
        MultiResult::Error(ErrorCode::NoNode),
        MultiResult::Error(ErrorCode::RuntimeInconsistency),
        MultiResult::Error(ErrorCode::Unknown(-4242)),
    ]
}

/// Sample reply bodies of every kind. Which opcodes each answers is found by decoding it
/// ([`ops_answered_by`]), so the samples follow the codec's mapping.
pub fn responses() -> Vec<Response> {
    let mut out = vec![Response::Empty];
    for err in [ErrorCode::Ok, ErrorCode::NoNode, ErrorCode::Unknown(-4242)] {
        out.push(Response::AddWatch(ErrorResponse { err }));
    }
    let (strings, buffers, stats, acls, lists) =
        (strings(), buffers(), stats(), acls(), string_lists());
    for (i, path) in strings.iter().enumerate() {
        let path = path.clone();
        out.push(Response::Create(CreateResponse { path: path.clone() }));
        out.push(Response::Create2(Create2Response {
            path: path.clone(),
            stat: pick(&stats, i),
        }));
        out.push(Response::Sync(SyncResponse { path }));
    }
    for stat in &stats {
        out.push(Response::Exists(ExistsResponse { stat: stat.clone() }));
        out.push(Response::SetData(SetDataResponse { stat: stat.clone() }));
        out.push(Response::SetAcl(SetAclResponse { stat: stat.clone() }));
    }
    for (i, data) in buffers.iter().enumerate() {
        out.push(Response::GetData(GetDataResponse {
            data: data.clone(),
            stat: pick(&stats, i),
        }));
        out.push(Response::Sasl(SetSaslResponse {
            token: data.clone(),
        }));
    }
    for (i, acl) in acls.iter().enumerate() {
        out.push(Response::GetAcl(GetAclResponse {
            acl: acl.clone(),
            stat: pick(&stats, i),
        }));
    }
    for (i, list) in lists.iter().enumerate() {
        out.push(Response::GetChildren(GetChildrenResponse {
            children: list.clone(),
        }));
        out.push(Response::GetChildren2(GetChildren2Response {
            children: list.clone(),
            stat: pick(&stats, i + 1),
        }));
        out.push(Response::GetEphemerals(GetEphemeralsResponse {
            ephemerals: list.clone(),
        }));
        out.push(Response::WhoAmI(WhoAmIResponse {
            client_info: list
                .iter()
                .zip(strings.iter().rev())
                .map(|(a, b)| ClientInfo {
                    auth_scheme: a.clone(),
                    user: b.clone(),
                })
                .collect(),
        }));
    }
    for total_number in [0, 1, -1, i32::MAX, i32::MIN] {
        out.push(Response::GetAllChildrenNumber(
            GetAllChildrenNumberResponse { total_number },
        ));
    }
    let results = multi_results();
    let mut multis = vec![MultiResponse::default()];
    multis.push(MultiResponse {
        results: results.clone(),
    });
    multis.extend(
        results
            .into_iter()
            .map(|r| MultiResponse { results: vec![r] }),
    );
    for multi in multis {
        out.push(Response::Multi(multi));
    }
    out
}

/// The opcodes whose successful reply `body` is: those as which its bytes decode to it.
pub fn ops_answered_by(body: &Response) -> Vec<OpCode> {
    let mut bytes = BytesMut::new();
    encode_response(body, &mut bytes);
    OpCode::ALL
        .iter()
        .copied()
        .filter(|&op| {
            let mut r = Reader::new(&bytes);
            Response::decode(op, &mut r).as_ref() == Ok(body) && r.remaining() == 0
        })
        .collect()
}

const XIDS: [i32; 9] = [1, 2, 0x7fff_ffff, -2, -4, -8, 0, i32::MIN, 0x100];
const ZXIDS: [i64; 5] = [0, 1, -1, i64::MAX, 0x1_0000_0005];

/// Valid frames from a server after the handshake: a reply with a body to every opcode,
/// error replies without a body, and notifications with every event type and state.
pub fn server_samples() -> Vec<Sample> {
    let mut out = Vec::new();
    let mut n = 0;
    let mut header = |err: ErrorCode| {
        n += 1;
        ReplyHeader {
            xid: pick(&XIDS, n),
            zxid: pick(&ZXIDS, n / 2),
            err,
        }
    };
    for body in responses() {
        let ops = ops_answered_by(&body);
        assert!(!ops.is_empty(), "no opcode decodes {body:?}");
        for op in ops {
            let frame = ServerFrame::Reply(header(ErrorCode::Ok), Some(body.clone()));
            out.push(Sample::new(Kind::Server(Some(op)), Decoded::Server(frame)));
        }
    }
    let errors = ErrorCode::ALL
        .iter()
        .copied()
        .filter(|e| !e.is_ok())
        .chain([ErrorCode::Unknown(-4242), ErrorCode::Unknown(1)]);
    for (i, err) in errors.enumerate() {
        let op = pick(OpCode::ALL, i * 7);
        let frame = ServerFrame::Reply(header(err), None);
        out.push(Sample::new(Kind::Server(Some(op)), Decoded::Server(frame)));
    }
    let strings = strings();
    let mut i = 0;
    for &event_type in EventType::ALL {
        for &state in KeeperState::ALL {
            i += 1;
            let header = ReplyHeader {
                xid: -1,
                zxid: pick(&ZXIDS, i),
                err: if i == 5 {
                    ErrorCode::NoNode
                } else {
                    ErrorCode::Ok
                },
            };
            let event = WatcherEvent {
                event_type,
                state,
                path: pick(&strings, i),
            };
            // A notification does not depend on the pending request.
            let op = if i % 3 == 0 {
                None
            } else {
                Some(pick(OpCode::ALL, i))
            };
            out.push(Sample::new(
                Kind::Server(op),
                Decoded::Server(ServerFrame::Notification(header, event)),
            ));
        }
    }
    out
}

/// Valid handshake frames: `ConnectResponse` and `ConnectRequest`, with and without a
/// password and the trailing `readOnly`.
pub fn connect_samples() -> Vec<Sample> {
    let passwds = [
        None,
        Some(Bytes::new()),
        Some(Bytes::from_static(&[0x5a; 16])),
    ];
    let mut out = Vec::new();
    for (i, passwd) in passwds.iter().enumerate() {
        for read_only in [None, Some(false), Some(true)] {
            let session_id = 0x0100_0000_0000_0001 * i64::try_from(i).expect("small");
            out.push(Sample::new(
                Kind::ConnectResponse,
                Decoded::ConnectResponse(ConnectResponse {
                    protocol_version: 0,
                    time_out: 30_000 - 1000 * i32::try_from(i).expect("small"),
                    session_id,
                    passwd: passwd.clone(),
                    read_only,
                }),
            ));
            out.push(Sample::new(
                Kind::ConnectRequest,
                Decoded::ConnectRequest(ConnectRequest {
                    protocol_version: 0,
                    last_zxid_seen: pick(&ZXIDS, i),
                    time_out: 40_000,
                    session_id,
                    passwd: passwd.clone(),
                    read_only,
                }),
            ));
        }
    }
    out
}

/// One sample of every `Request` variant (several of some).
pub fn requests() -> Vec<Request> {
    let (strings, buffers, acls, lists) = (strings(), buffers(), acls(), string_lists());
    let path = |i: usize| pick(&strings, i);
    let create = |i: usize| CreateRequest {
        path: path(i),
        data: pick(&buffers, i),
        acl: pick(&acls, i + 1).into(),
        mode: pick(CreateMode::ALL, i),
    };
    let ttl = |i: usize| CreateTtlRequest {
        path: path(i),
        data: pick(&buffers, i + 1),
        acl: pick(&acls, i).into(),
        mode: pick(CreateMode::ALL, i + 5),
        ttl: [1, 0, -1, i64::MAX][i % 4],
    };
    let mut out = Vec::new();
    for i in 0..CreateMode::ALL.len() {
        out.push(Request::Create(create(i)));
    }
    out.extend([
        Request::Create2(create(2)),
        Request::CreateContainer(create(4)),
        Request::CreateTtl(ttl(0)),
        Request::CreateTtl(ttl(1)),
        Request::Delete(DeleteRequest {
            path: path(3),
            version: -1,
        }),
        Request::Exists(ExistsRequest {
            path: path(4),
            watch: true,
        }),
        Request::GetData(GetDataRequest {
            path: path(5),
            watch: false,
        }),
        Request::SetData(SetDataRequest {
            path: path(6),
            data: pick(&buffers, 3),
            version: 7,
        }),
        Request::GetAcl(GetAclRequest { path: path(7) }),
        Request::SetAcl(SetAclRequest {
            path: path(1),
            acl: pick(&acls, 2),
            version: i32::MIN,
        }),
        Request::GetChildren(GetChildrenRequest {
            path: path(2),
            watch: true,
        }),
        Request::GetChildren2(GetChildren2Request {
            path: path(5),
            watch: false,
        }),
        Request::Sync(SyncRequest { path: path(1) }),
        Request::Ping,
        Request::Check(CheckVersionRequest {
            path: path(2),
            version: 0,
        }),
        Request::Multi(MultiRequest::default()),
        Request::Multi(MultiRequest {
            ops: vec![
                MultiOp::Create(create(0)),
                MultiOp::Create2(create(3)),
                MultiOp::CreateContainer(create(4)),
                MultiOp::CreateTtl(ttl(2)),
                MultiOp::Delete(DeleteRequest {
                    path: path(2),
                    version: 3,
                }),
                MultiOp::SetData(SetDataRequest {
                    path: path(3),
                    data: None,
                    version: -1,
                }),
                MultiOp::Check(CheckVersionRequest {
                    path: path(4),
                    version: 9,
                }),
            ],
        }),
        Request::MultiRead(MultiRequest {
            ops: vec![
                MultiOp::GetChildren(GetChildrenRequest {
                    path: path(1),
                    watch: false,
                }),
                MultiOp::GetData(GetDataRequest {
                    path: path(5),
                    watch: true,
                }),
            ],
        }),
        Request::Reconfig(ReconfigRequest {
            joining_servers: Some("server.4=h4:2888:3888;2181".into()),
            leaving_servers: Some("1,2".into()),
            new_members: None,
            cur_config_id: -1,
        }),
        Request::Auth(AuthPacket {
            auth_type: 0,
            scheme: "digest".into(),
            auth: Some(Bytes::from_static(b"user:password")),
        }),
        Request::SetWatches(SetWatches {
            relative_zxid: 0x1_0000_0042,
            data_watches: pick(&lists, 1),
            exist_watches: pick(&lists, 0),
            child_watches: pick(&lists, 2),
        }),
        Request::SetWatches2(SetWatches2 {
            relative_zxid: -1,
            data_watches: pick(&lists, 2),
            exist_watches: pick(&lists, 1),
            child_watches: pick(&lists, 3),
            persistent_watches: pick(&lists, 0),
            persistent_recursive_watches: pick(&lists, 1),
        }),
        Request::Sasl(GetSaslRequest {
            token: pick(&buffers, 2),
        }),
        Request::Sasl(GetSaslRequest { token: None }),
        Request::GetEphemerals(GetEphemeralsRequest {
            prefix_path: path(0),
        }),
        Request::GetAllChildrenNumber(GetAllChildrenNumberRequest { path: path(3) }),
        Request::WhoAmI,
        Request::CloseSession,
    ]);
    for (i, &watcher_type) in WatcherType::ALL.iter().enumerate() {
        out.push(Request::CheckWatches(CheckWatchesRequest {
            path: path(i),
            watcher_type,
        }));
        out.push(Request::RemoveWatches(RemoveWatchesRequest {
            path: path(i + 1),
            watcher_type,
        }));
    }
    for (i, &mode) in AddWatchMode::ALL.iter().enumerate() {
        out.push(Request::AddWatch(AddWatchRequest {
            path: path(i + 2),
            mode,
        }));
    }
    out
}

/// Valid request frames of every `Request` variant, via `Request::encode_frame`.
pub fn request_samples() -> Vec<Sample> {
    requests()
        .into_iter()
        .enumerate()
        .map(|(i, request)| {
            let header = RequestHeader {
                xid: pick(&XIDS, i),
                op: request.op_code(),
            };
            Sample::new(Kind::Request, Decoded::Request(header, request))
        })
        .collect()
}

/// Every sample frame.
pub fn all_samples() -> Vec<Sample> {
    let mut out = server_samples();
    out.extend(connect_samples());
    out.extend(request_samples());
    out
}

/// Decodes one value of type `T` from the whole of `bytes` (for hostile-input checks).
pub fn decode_record<T: Decode>(bytes: &[u8]) -> Result<T, DecodeError> {
    T::decode_exact(bytes, "record")
}
