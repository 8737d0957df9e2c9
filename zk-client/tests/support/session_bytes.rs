//! The session core fed what a server (and a driver) may do to it, from arbitrary bytes: the
//! body of the `session_bytes` fuzz target (`zk-client/fuzz`) and of the deterministic
//! `session_bytes` test, which runs it on the committed seeds and on seeded random inputs.
//!
//! The input is a script. Byte 0's low bit says whether the driver may report unsent bytes
//! (`handle_unsent`). Then each step is one byte of kind and its operands:
//! - a TCP connection comes up (`handle_connected`);
//! - a request is submitted: an opcode byte and a body decoded from the next bytes (any
//!   request the codec can decode), with or without a watch;
//! - a frame arrives with arbitrary bytes, a well-formed `ConnectResponse` built from the next
//!   bytes, or a reply to the oldest request written whose body is arbitrary (the harness reads
//!   what the session writes, like a server, so it knows the xids);
//! - time passes (`handle_timeout` at the session's own deadline or a little later);
//! - the connection drops (`handle_disconnect`), the driver reports bytes unsent, or the
//!   session is closed locally.
//!
//! After every step the session's output is drained, as its driver does. Checked: nothing
//! panics; every request the session accepted is answered exactly once (the script ends with a
//! local close, so all are); a request any byte of which was handed out is never failed as
//! "not sent" (`NotConnected`, `Closed`) unless the driver reported bytes unsent; replies carry
//! tokens the session was given, never one twice; and the deadlines due settle within three
//! rounds of `handle_timeout` (a driver would spin otherwise).

#![allow(dead_code, clippy::unwrap_used, clippy::indexing_slicing)]

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use zk_client::Error;
use zk_client::session::{Session, SessionConfig, SessionEvent, WatcherId};
use zk_proto::records::ConnectResponse;
use zk_proto::{Encode, ErrorCode, OpCode, Reader, ReplyHeader, Request, split_frame};

/// Reads the script's operands; past the end every read gives zeros.
struct Script<'a> {
    rest: &'a [u8],
}

impl<'a> Script<'a> {
    fn byte(&mut self) -> u8 {
        let Some((&b, rest)) = self.rest.split_first() else {
            return 0;
        };
        self.rest = rest;
        b
    }

    fn take(&mut self, n: usize) -> &'a [u8] {
        let n = n.min(self.rest.len());
        let (taken, rest) = self.rest.split_at(n);
        self.rest = rest;
        taken
    }

    fn u16(&mut self) -> u16 {
        u16::from_be_bytes([self.byte(), self.byte()])
    }
}

/// A request's fate as the harness sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    /// Accepted by `submit`, no byte of it handed out yet.
    Queued,
    /// Some byte of it handed out by `poll_transmit`.
    Written,
    /// Answered.
    Answered,
}

struct Harness {
    session: Session<u32>,
    now: Instant,
    /// Each accepted token's fate.
    fates: BTreeMap<u32, Fate>,
    /// Bytes handed out and not yet split into frames (the harness reads as a server does).
    written: BytesMut,
    /// Xids of the requests written and not yet replied to by the harness, in order.
    xids: VecDeque<(i32, OpCode)>,
    /// Whether the driver reported unsent bytes (then "not sent" may be true of written
    /// requests: the bytes never left).
    unsent_reported: bool,
    /// Whether a connection is up (the driver's contract: `handle_connected` only on a new
    /// connection, after `handle_disconnect` of the last; frames only over a live one).
    up: bool,
    /// The negative control: a careless driver that starts a new connection without ending
    /// the last, so requests written on it are later failed as never sent.
    careless: bool,
    next_token: u32,
    stats: Stats,
}

/// What a run reached, so a test can tell a deep run from a shallow one.
#[derive(Debug, Default, Clone, Copy)]
pub struct Stats {
    /// Requests the session accepted.
    pub accepted: u64,
    /// Replies that succeeded.
    pub ok: u64,
    /// Requests failed with a connection loss (written, outcome unknown).
    pub connection_loss: u64,
    /// Requests failed as not sent.
    pub not_sent: u64,
}

impl std::ops::AddAssign for Stats {
    fn add_assign(&mut self, o: Self) {
        self.accepted += o.accepted;
        self.ok += o.ok;
        self.connection_loss += o.connection_loss;
        self.not_sent += o.not_sent;
    }
}

impl Harness {
    fn new() -> Self {
        let cfg = SessionConfig {
            session_timeout: Duration::from_secs(6),
            connect_timeout: Duration::from_secs(2),
            max_frame_len: 64 * 1024,
            max_request_len: 64 * 1024,
            ..SessionConfig::default()
        };
        Self {
            session: Session::new(cfg),
            now: Instant::now(),
            fates: BTreeMap::new(),
            written: BytesMut::new(),
            xids: VecDeque::new(),
            unsent_reported: false,
            up: false,
            careless: false,
            stats: Stats::default(),
            next_token: 0,
        }
    }

    /// Drains the session as its driver does, checking every reply.
    fn drain(&mut self) {
        let mut handed = false;
        while let Some(out) = self.session.poll_transmit() {
            handed |= !out.is_empty();
            self.written.extend_from_slice(&out);
        }
        // `poll_transmit` hands out all it has queued, in order: every request queued so far.
        if handed {
            for fate in self.fates.values_mut() {
                if *fate == Fate::Queued {
                    *fate = Fate::Written;
                }
            }
        }
        while let Ok(Some(frame)) = split_frame(&mut self.written, usize::MAX) {
            if let Ok((header, _)) = Request::decode_frame(&frame) {
                if header.xid > 0 {
                    self.xids.push_back((header.xid, header.op));
                }
            }
        }
        while let Some(event) = self.session.poll_event() {
            if let SessionEvent::Reply { token, result } = event {
                let Some(fate) = self.fates.get_mut(&token) else {
                    panic!("a reply for token {token}, never given");
                };
                assert_ne!(*fate, Fate::Answered, "token {token} answered twice");
                if *fate == Fate::Written && !self.unsent_reported {
                    assert!(
                        !matches!(result, Err(Error::NotConnected | Error::Closed)),
                        "token {token}: written, yet failed as not sent: {result:?}"
                    );
                }
                *fate = Fate::Answered;
                match result {
                    Ok(_) => self.stats.ok += 1,
                    Err(Error::ConnectionLoss) => self.stats.connection_loss += 1,
                    Err(Error::NotConnected | Error::Closed) => self.stats.not_sent += 1,
                    Err(_) => {}
                }
            }
        }
    }

    fn submit(&mut self, s: &mut Script<'_>) {
        let op = OpCode::ALL[usize::from(s.byte()) % OpCode::ALL.len()];
        let len = usize::from(s.byte());
        let body = s.take(len);
        let Ok(request) = Request::decode(op, &mut Reader::new(body)) else {
            return;
        };
        let watch = (s.byte() & 1 == 1).then_some(WatcherId(u64::from(self.next_token)));
        let token = self.next_token;
        self.next_token += 1;
        if self.session.submit(self.now, request, token, watch).is_ok() {
            self.fates.insert(token, Fate::Queued);
            self.stats.accepted += 1;
        }
    }

    fn frame(&mut self, bytes: &[u8]) {
        if !self.up {
            return;
        }
        if self.session.handle_frame(self.now, bytes).is_err() {
            self.disconnect();
        }
    }

    fn disconnect(&mut self) {
        if !std::mem::replace(&mut self.up, false) {
            return;
        }
        self.session.handle_disconnect(self.now);
        self.written.clear();
        self.xids.clear();
    }

    fn step(&mut self, s: &mut Script<'_>, may_report_unsent: bool) {
        match s.byte() % 12 {
            0 => {
                if self.up && !self.careless {
                    self.disconnect();
                }
                self.up = true;
                self.session.handle_connected(self.now);
                self.written.clear();
                self.xids.clear();
            }
            1..=3 => self.submit(s),
            4 => {
                let len = usize::from(s.u16() % 2048);
                let bytes = s.take(len).to_vec();
                self.frame(&bytes);
            }
            5 => {
                let response = ConnectResponse {
                    protocol_version: 0,
                    time_out: i32::from(s.u16()) * 8,
                    session_id: i64::from(s.byte()),
                    passwd: Some(bytes::Bytes::copy_from_slice(s.take(16))),
                    read_only: Some(s.byte() & 1 == 1),
                };
                let mut out = BytesMut::new();
                response.encode(&mut out).unwrap();
                self.frame(&out);
            }
            6 | 7 => {
                // A reply to the oldest request written, or a ping/auth/set-watches reply.
                let pick = s.byte();
                let xid = match pick % 4 {
                    0 => -2,
                    1 => -4,
                    2 => -8,
                    _ => self.xids.front().map_or(1, |(xid, _)| *xid),
                };
                let op = match pick % 4 {
                    3 => self.xids.pop_front().map(|(_, op)| op),
                    _ => None,
                };
                let err = ErrorCode::ALL[usize::from(s.byte()) % ErrorCode::ALL.len()];
                let err = if s.byte() & 3 == 0 {
                    err
                } else {
                    ErrorCode::Ok
                };
                let mut out = BytesMut::new();
                let zxid = i64::from(s.u16());
                ReplyHeader { xid, zxid, err }.encode(&mut out).unwrap();
                let well_formed = s.byte() & 1 == 0;
                match op {
                    Some(op) if well_formed && err == ErrorCode::Ok => {
                        out.extend_from_slice(&reply_body(op, s));
                    }
                    _ => {
                        let len = usize::from(s.byte());
                        out.extend_from_slice(s.take(len));
                    }
                }
                self.frame(&out);
            }
            8 => {
                let at = match self.session.poll_timeout() {
                    Some(t) if t > self.now => t,
                    _ => self.now,
                };
                self.now = at + Duration::from_millis(u64::from(s.byte()) * 16);
                // As a driver does: while a deadline is due, handle it (closing the connection
                // on an error, which may arm the session-lost deadline, due too). It settles
                // within a few rounds, or the driver would spin.
                for _ in 0..3 {
                    if self.session.handle_timeout(self.now).is_err() {
                        self.disconnect();
                    }
                    if self.session.poll_timeout().is_none_or(|t| t > self.now) {
                        break;
                    }
                }
                assert!(
                    self.session.poll_timeout().is_none_or(|t| t > self.now),
                    "a timer still due after three rounds of handle_timeout"
                );
            }
            9 => self.disconnect(),
            // Reported when the connection goes away, before `handle_disconnect`.
            10 if may_report_unsent && self.up => {
                self.unsent_reported = true;
                self.session.handle_unsent(usize::from(s.u16()));
                self.disconnect();
            }
            10 => {}
            _ => {
                self.session.close_locally();
                self.up = false;
            }
        }
        self.drain();
    }
}

/// Runs one script (see the module docs); panics on a broken promise. Byte 0's bit 1 makes
/// the driver careless (the checker's negative control; the fuzz target clears it).
pub fn run(data: &[u8]) -> Stats {
    let Some((&flags, rest)) = data.split_first() else {
        return Stats::default();
    };
    let mut s = Script { rest };
    let mut h = Harness::new();
    h.careless = flags & 2 == 2;
    let mut steps = 0;
    while !s.rest.is_empty() && steps < 4096 {
        h.step(&mut s, flags & 1 == 1);
        steps += 1;
    }
    h.session.close_locally();
    h.drain();
    assert!(h.session.state().is_terminal(), "closed, yet not ended");
    for (token, fate) in &h.fates {
        assert_eq!(*fate, Fate::Answered, "token {token} never answered");
    }
    h.stats
}

/// A well-formed reply body for a request of kind `op`, its fields from the script.
fn reply_body(op: OpCode, s: &mut Script<'_>) -> Vec<u8> {
    let stat = |s: &mut Script<'_>| {
        let mut stat = s.take(68).to_vec();
        stat.resize(68, 0);
        stat
    };
    let string = |text: &[u8]| {
        let mut out = (text.len() as u32).to_be_bytes().to_vec();
        out.extend_from_slice(text);
        out
    };
    match op {
        OpCode::Exists | OpCode::SetData | OpCode::SetAcl => stat(s),
        OpCode::GetData => [string(b"data"), stat(s)].concat(),
        OpCode::Create | OpCode::CreateContainer | OpCode::Sync => string(b"/a0000000001"),
        OpCode::Create2 | OpCode::CreateTtl => [string(b"/a0000000001"), stat(s)].concat(),
        OpCode::GetChildren => [1_u32.to_be_bytes().to_vec(), string(b"x")].concat(),
        OpCode::GetChildren2 => [1_u32.to_be_bytes().to_vec(), string(b"x"), stat(s)].concat(),
        OpCode::GetAllChildrenNumber => s.take(4).to_vec(),
        _ => Vec::new(),
    }
}

/// A generator of scripts for the deterministic test: seeded xorshift, each step a
/// well-formed one most of the time (handshakes, common requests, replies matched to them),
/// so that runs reach the states a fuzzer finds only after a while.
pub fn random_script(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let index = |op: OpCode| OpCode::ALL.iter().position(|o| *o == op).unwrap_or(0) as u8;
    let path = |b: &mut Vec<u8>| b.extend_from_slice(&[0, 0, 0, 2, b'/', b'a']);
    let handshake = |byte: u8| {
        [
            5, 0x04, byte, byte, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        ]
    };
    let mut out = vec![(next() & 1) as u8, 0];
    out.extend(handshake(7));
    while out.len() < len {
        let r = next();
        let byte = (r >> 8) as u8;
        match r % 64 {
            0..=24 => {
                let (op, mut body) = match r % 5 {
                    0 => (OpCode::Exists, Vec::new()),
                    1 => (OpCode::GetData, Vec::new()),
                    2 => (OpCode::GetChildren, Vec::new()),
                    3 => (OpCode::Sync, Vec::new()),
                    _ => (OpCode::Delete, Vec::new()),
                };
                path(&mut body);
                match op {
                    OpCode::Delete => body.extend_from_slice(&[0xff; 4]),
                    OpCode::Sync => {}
                    _ => body.push(byte & 1),
                }
                out.extend([1, index(op), body.len() as u8]);
                out.extend(body);
                out.push(byte & 1);
            }
            25..=44 => out.extend([6, 3, byte, byte >> 4, 0, 9, byte & 2, 0x55]),
            45..=47 => out.extend([6, byte % 3, 0, 1, 0, 9, 0]),
            48..=53 => out.extend([8, byte >> 6]),
            54..=57 => {
                // The connection drops (or is reported with unsent bytes), and comes back.
                out.extend([9 + (byte % 2), 0, byte, 0]);
                out.extend(handshake(byte));
            }
            58 => out.extend([4, 0, 8, byte, byte, byte, byte, byte, byte, byte, byte]),
            59 => out.push(11),
            _ => out.push(byte),
        }
    }
    out
}
