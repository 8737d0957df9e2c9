//! Decoding is total: any bytes give a value or a `DecodeError`, never a panic, and a value
//! that decodes re-encodes to bytes that decode to the same value.
//!
//! Deterministic: every random choice comes from a fixed seed (override with
//! `DECODE_TOTAL_SEED=<u64>`), and a failing case prints its seed, case number and input.
//! Run `cargo test -p zk-proto --test decode_total -- --nocapture` to see the case counts;
//! `DECODE_TOTAL_SCALE=<n>` multiplies the random cases for a longer run.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod support;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use bytes::{BufMut, BytesMut};
use support::{Decoded, Kind, Sample, check_one, decode, encode, framed, hex};
use zk_proto::multi::{MultiOp, MultiResult};
use zk_proto::records::{
    GetAclResponse, GetChildrenResponse, GetDataResponse, SetWatches2, WhoAmIResponse,
};
use zk_proto::{
    DEFAULT_MAX_FRAME_LEN, DecodeError, FrameError, OpCode, Reader, Request, Response, ServerFrame,
    split_frame,
};

const SEED: u64 = 0x5eed_0f2b_a0c0_de01;

/// The base seed: `DECODE_TOTAL_SEED`, or [`SEED`].
fn base_seed() -> u64 {
    std::env::var("DECODE_TOTAL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(SEED)
}

/// The seed of one test, derived from the base seed.
fn seed(salt: u64) -> u64 {
    base_seed() ^ salt.wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// Multiplies the number of random cases (`DECODE_TOTAL_SCALE=<n>`, default 1), for longer
/// runs by hand.
fn scale(cases: usize) -> usize {
    let n: usize = std::env::var("DECODE_TOTAL_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    cases * n.max(1)
}

/// SplitMix64: small, fast, and good enough to drive mutations.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Self(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n`; `n` must not be 0.
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// Uniform in `0..=n`.
    fn upto(&mut self, n: usize) -> usize {
        self.below(n + 1)
    }

    fn byte(&mut self) -> u8 {
        self.next() as u8
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.byte()).collect()
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Prints what was being checked if the thread panics while this is alive.
struct OnPanic<'a> {
    test: &'static str,
    seed: u64,
    case: usize,
    input: &'a [u8],
}

impl Drop for OnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "decode_total::{} failed: rerun with DECODE_TOTAL_SEED={} (test seed {}), case {}, input ({} bytes): {}",
                self.test,
                base_seed(),
                self.seed,
                self.case,
                self.input.len(),
                hex(self.input)
            );
        }
    }
}

/// Decodes `input` as every kind (server reply to each opcode and to none, both handshake
/// records, request) and checks the round trip of whatever decodes. Returns how many kinds
/// decoded it.
fn check_all_kinds(input: &[u8]) -> usize {
    Kind::all()
        .into_iter()
        .filter(|&kind| check_one(kind, input))
        .count()
}

// ---------------------------------------------------------------------------------------
// Mutations.

const INTERESTING_BYTES: [u8; 10] = [0x00, 0x01, 0x02, 0x7f, 0x80, 0xff, 0xfe, 0xed, 0xf0, 0xc0];

fn interesting_i32(rng: &mut Rng, rem: usize) -> i32 {
    let rem = i32::try_from(rem).unwrap_or(i32::MAX);
    *rng.pick(&[
        -1,
        -2,
        i32::MIN,
        i32::MAX,
        0x7fff_fff0,
        0x0100_0000,
        0xffff,
        0,
        1,
        rem,
        rem.saturating_add(1),
        rem - 1,
        rem / 4,
        rem / 4 + 1,
        rem / 9,
        rem / 12 + 1,
    ])
}

/// Offsets of 4-byte values that look like a length prefix: non-negative and within the
/// bytes after them.
fn length_fields(frame: &[u8]) -> Vec<usize> {
    (0..frame.len().saturating_sub(3))
        .filter(|&p| {
            let v = i32::from_be_bytes(frame[p..p + 4].try_into().unwrap());
            usize::try_from(v).is_ok_and(|v| v <= frame.len() - p - 4)
        })
        .collect()
}

fn put_i32_at(frame: &mut [u8], p: usize, v: i32) {
    frame[p..p + 4].copy_from_slice(&v.to_be_bytes());
}

fn mutate_once(rng: &mut Rng, frame: &mut Vec<u8>, corpus: &[Sample]) {
    let len = frame.len();
    match rng.below(12) {
        // Flip a bit.
        0 if len > 0 => {
            let p = rng.below(len);
            frame[p] ^= 1 << rng.below(8);
        }
        // Overwrite a byte with an interesting value.
        1 if len > 0 => {
            let p = rng.below(len);
            frame[p] = *rng.pick(&INTERESTING_BYTES);
        }
        // Overwrite a byte with a random value.
        2 if len > 0 => {
            let p = rng.below(len);
            frame[p] = rng.byte();
        }
        // Overwrite 4 bytes anywhere with an interesting int.
        3 if len >= 4 => {
            let p = rng.upto(len - 4);
            let v = interesting_i32(rng, len - p - 4);
            put_i32_at(frame, p, v);
        }
        // Overwrite a length field with an interesting int (-1, -2, i32::MAX, huge counts,
        // off by one...).
        4 | 5 => {
            let fields = length_fields(frame);
            if !fields.is_empty() {
                let p = *rng.pick(&fields);
                let v = interesting_i32(rng, len - p - 4);
                put_i32_at(frame, p, v);
            }
        }
        // Truncate.
        6 => frame.truncate(rng.upto(len)),
        // Insert random or interesting bytes.
        7 => {
            let p = rng.upto(len);
            let ins = if rng.below(2) == 0 {
                let n = 1 + rng.below(8);
                rng.bytes(n)
            } else {
                interesting_i32(rng, len - p).to_be_bytes().to_vec()
            };
            frame.splice(p..p, ins);
        }
        // Delete a range.
        8 if len > 0 => {
            let a = rng.below(len);
            let b = a + 1 + rng.below((len - a).min(16));
            frame.drain(a..b);
        }
        // Splice: the start of this frame, the end of another.
        9 => {
            let other = &rng.pick(corpus).frame;
            let a = rng.upto(len);
            let b = rng.upto(other.len());
            frame.truncate(a);
            frame.extend_from_slice(&other[b..]);
        }
        // Duplicate a range in place.
        10 if len > 0 => {
            let a = rng.below(len);
            let b = a + 1 + rng.below((len - a).min(32));
            let copy = frame[a..b].to_vec();
            let p = rng.upto(len);
            frame.splice(p..p, copy);
        }
        // Replace the tail with the tail of another frame of the same length.
        _ => {
            let other = &rng.pick(corpus).frame;
            if !other.is_empty() {
                let p = rng.below(other.len());
                let q = p.min(len);
                frame.truncate(q);
                frame.extend_from_slice(&other[p..]);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// The corpus.

#[test]
fn corpus_covers_every_opcode_and_variant() {
    let server = support::server_samples();
    for &op in OpCode::ALL {
        assert!(
            server.iter().any(|s| s.kind == Kind::Server(Some(op))
                && matches!(s.value, Decoded::Server(ServerFrame::Reply(_, Some(_))))),
            "no successful reply sample for {op:?}"
        );
    }
    assert!(server.iter().any(|s| matches!(
        &s.value,
        Decoded::Server(ServerFrame::Reply(h, None)) if !h.err.is_ok()
    )));
    assert!(server.iter().any(|s| matches!(
        &s.value,
        Decoded::Server(ServerFrame::Notification(h, _)) if h.xid == -1
    )));

    // Every MultiResult kind appears in a MultiResponse, and every MultiOp in a request.
    let mut result_kinds = BTreeSet::new();
    for s in &server {
        if let Decoded::Server(ServerFrame::Reply(_, Some(Response::Multi(m)))) = &s.value {
            for r in &m.results {
                result_kinds.insert(match r {
                    MultiResult::Create(_) => 0,
                    MultiResult::Create2(_) => 1,
                    MultiResult::Delete => 2,
                    MultiResult::SetData(_) => 3,
                    MultiResult::Check => 4,
                    MultiResult::GetChildren(_) => 5,
                    MultiResult::GetData(_) => 6,
                    MultiResult::Error(_) => 7,
                });
            }
        }
    }
    assert_eq!(result_kinds.len(), 8, "MultiResult kinds: {result_kinds:?}");

    let requests = support::request_samples();
    let mut op_kinds = BTreeSet::new();
    for s in &requests {
        if let Decoded::Request(_, Request::Multi(m) | Request::MultiRead(m)) = &s.value {
            for op in &m.ops {
                op_kinds.insert(match op {
                    MultiOp::Create(_) => 0,
                    MultiOp::Create2(_) => 1,
                    MultiOp::CreateContainer(_) => 2,
                    MultiOp::CreateTtl(_) => 3,
                    MultiOp::Delete(_) => 4,
                    MultiOp::SetData(_) => 5,
                    MultiOp::Check(_) => 6,
                    MultiOp::GetChildren(_) => 7,
                    MultiOp::GetData(_) => 8,
                });
            }
        }
    }
    assert_eq!(op_kinds.len(), 9, "MultiOp kinds: {op_kinds:?}");

    // Every opcode that has a Request variant has a sample.
    let sampled: BTreeSet<i32> = requests
        .iter()
        .map(|s| match &s.value {
            Decoded::Request(h, r) => {
                assert_eq!(h.op, r.op_code());
                h.op.code()
            }
            other => panic!("not a request: {other:?}"),
        })
        .collect();
    let with_variant: BTreeSet<i32> = OpCode::ALL
        .iter()
        .filter(|&&op| {
            !matches!(
                Request::decode(op, &mut Reader::new(&[])),
                Err(DecodeError::UnknownCode {
                    at: "RequestHeader.type",
                    ..
                })
            )
        })
        .map(|op| op.code())
        .collect();
    assert_eq!(sampled, with_variant);

    let connect = support::connect_samples();
    for kind in [Kind::ConnectResponse, Kind::ConnectRequest] {
        for has_read_only in [false, true] {
            assert!(connect.iter().any(|s| s.kind == kind
                && match &s.value {
                    Decoded::ConnectResponse(c) => c.read_only.is_some() == has_read_only,
                    Decoded::ConnectRequest(c) => c.read_only.is_some() == has_read_only,
                    _ => false,
                }));
        }
    }
    println!(
        "corpus: {} server frames, {} handshake frames, {} request frames",
        server.len(),
        connect.len(),
        requests.len()
    );
}

#[test]
fn valid_frames_decode_to_their_value() {
    let corpus = support::all_samples();
    let mut stream = Vec::new();
    for (case, s) in corpus.iter().enumerate() {
        let _ctx = OnPanic {
            test: "valid_frames_decode_to_their_value",
            seed: 0,
            case,
            input: &s.frame,
        };
        assert_eq!(decode(s.kind, &s.frame).as_ref(), Ok(&s.value));
        assert_eq!(encode(&s.value), s.frame);
        support::check_round_trip(s.kind, &s.frame, &s.value);
        stream.extend(framed(&s.frame));
    }
    // The same frames, with their prefixes, through split_frame.
    let mut buf = BytesMut::from(&stream[..]);
    for s in &corpus {
        let frame = split_frame(&mut buf, DEFAULT_MAX_FRAME_LEN)
            .unwrap()
            .unwrap();
        assert_eq!(decode(s.kind, &frame).as_ref(), Ok(&s.value));
    }
    assert_eq!(split_frame(&mut buf, DEFAULT_MAX_FRAME_LEN), Ok(None));
    assert!(buf.is_empty());
}

/// The value a handshake record has without its trailing `readOnly`, if it has one.
fn without_read_only(value: &Decoded) -> Option<Decoded> {
    match value {
        Decoded::ConnectResponse(c) if c.read_only.is_some() => {
            let mut c = c.clone();
            c.read_only = None;
            Some(Decoded::ConnectResponse(c))
        }
        Decoded::ConnectRequest(c) if c.read_only.is_some() => {
            let mut c = c.clone();
            c.read_only = None;
            Some(Decoded::ConnectRequest(c))
        }
        _ => None,
    }
}

/// The value a handshake record without `readOnly` has with it.
fn with_read_only(value: &Decoded, b: bool) -> Option<Decoded> {
    match value {
        Decoded::ConnectResponse(c) if c.read_only.is_none() => {
            let mut c = c.clone();
            c.read_only = Some(b);
            Some(Decoded::ConnectResponse(c))
        }
        Decoded::ConnectRequest(c) if c.read_only.is_none() => {
            let mut c = c.clone();
            c.read_only = Some(b);
            Some(Decoded::ConnectRequest(c))
        }
        _ => None,
    }
}

#[test]
fn every_strict_prefix_is_an_error() {
    let corpus = support::all_samples();
    let mut cases = 0;
    for (case, s) in corpus.iter().enumerate() {
        for len in 0..s.frame.len() {
            let prefix = &s.frame[..len];
            let _ctx = OnPanic {
                test: "every_strict_prefix_is_an_error",
                seed: 0,
                case,
                input: prefix,
            };
            let got = decode(s.kind, prefix);
            cases += 1;
            // The handshake records' trailing readOnly is optional: without it they are
            // still whole.
            match without_read_only(&s.value) {
                Some(shorter) if len == s.frame.len() - 1 => assert_eq!(got, Ok(shorter)),
                _ => assert!(
                    got.is_err(),
                    "{:?} prefix of {len} decoded: {got:?}",
                    s.kind
                ),
            }
            // Whatever it is, decoding as any other kind must not panic either.
            check_all_kinds(prefix);
        }
    }
    println!("strict prefixes: {cases} cases, each also decoded as every kind");
    assert!(cases > 10_000);
}

#[test]
fn trailing_bytes_are_an_error() {
    let corpus = support::all_samples();
    let mut rng = Rng::new(seed(1));
    let mut cases = 0;
    for (case, s) in corpus.iter().enumerate() {
        let mut garbages: Vec<Vec<u8>> = vec![vec![0], vec![1], vec![0xff], vec![0, 0, 0, 0]];
        for _ in 0..8 {
            let n = 1 + rng.below(12);
            garbages.push(rng.bytes(n));
        }
        for garbage in garbages {
            let mut input = s.frame.clone();
            input.extend_from_slice(&garbage);
            let _ctx = OnPanic {
                test: "trailing_bytes_are_an_error",
                seed: seed(1),
                case,
                input: &input,
            };
            let got = decode(s.kind, &input);
            cases += 1;
            match (with_read_only(&s.value, garbage[0] == 1), garbage[0]) {
                // A handshake record without readOnly takes one more boolean byte.
                (Some(longer), 0 | 1) if garbage.len() == 1 => assert_eq!(got, Ok(longer)),
                (Some(_), 0 | 1) => assert!(
                    matches!(got, Err(DecodeError::TrailingBytes { extra, .. }) if extra == garbage.len() - 1),
                    "{got:?}"
                ),
                (Some(_), _) => {
                    assert!(matches!(got, Err(DecodeError::BadValue { .. })), "{got:?}")
                }
                (None, _) => assert!(
                    matches!(got, Err(DecodeError::TrailingBytes { extra, .. }) if extra == garbage.len()),
                    "{:?} with {} trailing bytes: {got:?}",
                    s.kind,
                    garbage.len()
                ),
            }
            check_all_kinds(&input);
        }
    }
    println!("trailing bytes: {cases} cases, each also decoded as every kind");
}

// ---------------------------------------------------------------------------------------
// Mutations and random bytes.

#[test]
fn mutated_frames_never_panic_and_round_trip() {
    let cases = scale(50_000);
    let corpus = support::all_samples();
    let seed = seed(2);
    let mut rng = Rng::new(seed);
    let (mut decoded, mut decoded_as_origin) = (0, 0);
    for case in 0..cases {
        let s = rng.pick(&corpus);
        let mut input = s.frame.clone();
        for _ in 0..1 + rng.below(4) {
            mutate_once(&mut rng, &mut input, &corpus);
        }
        let _ctx = OnPanic {
            test: "mutated_frames_never_panic_and_round_trip",
            seed,
            case,
            input: &input,
        };
        decoded += check_all_kinds(&input);
        if decode(s.kind, &input).is_ok() {
            decoded_as_origin += 1;
        }
    }
    println!(
        "mutations: {cases} mutants x {} kinds; {decoded} decodes succeeded and round-tripped, \
         {decoded_as_origin} mutants still decoded as their original kind",
        Kind::all().len()
    );
    // The mutator must not destroy everything: many mutants must still be valid.
    assert!(decoded_as_origin > cases / 20);
}

#[test]
fn random_bytes_never_panic() {
    let cases = scale(30_000);
    let seed = seed(3);
    let mut rng = Rng::new(seed);
    let mut decoded = 0;
    for case in 0..cases {
        let n = rng.upto(96);
        let input: Vec<u8> = match case % 4 {
            // Uniform bytes.
            0 => rng.bytes(n),
            // Bytes from a small alphabet, so lengths, booleans and codes are often valid.
            1 => (0..n)
                .map(|_| *rng.pick(&[0u8, 0, 0, 0, 1, 2, 0xff, b'/', b'a']))
                .collect(),
            // A valid reply header (xid not -1, err Ok) and then small-alphabet bytes.
            2 => {
                let mut v = vec![0, 0, 0, rng.byte(), 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0];
                v.extend((0..n).map(|_| *rng.pick(&[0u8, 0, 0, 1, 0xff, b'x'])));
                v
            }
            // A request header with a known opcode and then small-alphabet bytes.
            _ => {
                let op = rng.pick(OpCode::ALL).code();
                let mut v = vec![0, 0, 0, 7];
                v.extend(op.to_be_bytes());
                v.extend((0..n).map(|_| *rng.pick(&[0u8, 0, 0, 1, 2, 0xff, b'/'])));
                v
            }
        };
        let _ctx = OnPanic {
            test: "random_bytes_never_panic",
            seed,
            case,
            input: &input,
        };
        decoded += check_all_kinds(&input);
    }
    println!(
        "random bytes: {cases} inputs x {} kinds; {decoded} decodes succeeded and round-tripped",
        Kind::all().len()
    );
}

#[test]
fn unknown_xid_is_an_error_but_notifications_need_no_request() {
    let mut reply = BytesMut::new();
    reply.put_i32(5);
    reply.put_i64(9);
    reply.put_i32(0);
    assert_eq!(
        ServerFrame::decode(&reply, |_| None),
        Err(DecodeError::UnknownCode {
            at: "ReplyHeader.xid",
            offset: 0,
            value: 5
        })
    );
    let mut called = false;
    let notification = support::server_samples()
        .into_iter()
        .find(|s| matches!(s.value, Decoded::Server(ServerFrame::Notification(..))))
        .unwrap();
    let got = ServerFrame::decode(&notification.frame, |_| {
        called = true;
        None
    });
    assert_eq!(got.map(Decoded::Server), Ok(notification.value));
    assert!(!called, "op_for called for a notification");
}

// ---------------------------------------------------------------------------------------
// Framing.

#[test]
fn split_frame_gives_back_the_frames_of_any_chunking() {
    let corpus = support::all_samples();
    let seed = seed(4);
    let mut rng = Rng::new(seed);
    let mut cases = 0;
    for case in 0..scale(400) {
        let mut frames: Vec<Vec<u8>> = (0..1 + rng.below(12))
            .map(|_| rng.pick(&corpus).frame.clone())
            .collect();
        if rng.below(4) == 0 {
            frames.insert(rng.upto(frames.len()), Vec::new()); // an empty frame
        }
        let stream: Vec<u8> = frames.iter().flat_map(|f| framed(f)).collect();
        let _ctx = OnPanic {
            test: "split_frame_gives_back_the_frames_of_any_chunking",
            seed,
            case,
            input: &stream,
        };
        let chunk = *rng.pick(&[0, 1, 2, 3, 4, 5, 7, 16, 64, 1000]);
        let (got, err) = support::split_stream(&stream, DEFAULT_MAX_FRAME_LEN, chunk);
        assert_eq!(err, None);
        assert_eq!(got, frames);

        // Random chunk sizes, with empty reads, each followed by as many splits as possible.
        let mut buf = BytesMut::new();
        let mut got = Vec::new();
        let mut pos = 0;
        while pos < stream.len() {
            let n = rng.upto(20).min(stream.len() - pos);
            buf.extend_from_slice(&stream[pos..pos + n]);
            pos += n;
            while let Some(frame) = split_frame(&mut buf, DEFAULT_MAX_FRAME_LEN).unwrap() {
                got.push(frame.to_vec());
            }
        }
        assert_eq!(got, frames);
        assert!(buf.is_empty());

        // A limit equal to the longest frame accepts all; one less stops at that frame.
        let longest = frames.iter().map(Vec::len).max().unwrap();
        let (got, err) = support::split_stream(&stream, longest, chunk);
        assert_eq!(err, None);
        assert_eq!(got, frames);
        if longest > 0 {
            let first_long = frames.iter().position(|f| f.len() == longest).unwrap();
            let (got, err) = support::split_stream(&stream, longest - 1, chunk);
            assert_eq!(got, frames[..first_long]);
            assert_eq!(
                err,
                Some(FrameError::TooLarge {
                    len: longest,
                    max: longest - 1
                })
            );
        }
        cases += 1;
    }
    println!("split_frame: {cases} streams");
}

#[test]
fn bad_frame_lengths_are_errors_and_reserve_nothing() {
    let too_large = i32::try_from(DEFAULT_MAX_FRAME_LEN + 1).unwrap();
    for len in [
        -1,
        -2,
        i32::MIN,
        -0x7fff_fff0,
        i32::MAX,
        0x7fff_fff0,
        0x4000_0000,
        too_large,
    ] {
        // All four bytes at once, then byte by byte.
        for step in [4, 1] {
            let mut buf = BytesMut::with_capacity(8);
            let header = len.to_be_bytes();
            let mut result = Ok(None);
            for piece in header.chunks(step) {
                assert_eq!(result, Ok(None));
                buf.extend_from_slice(piece);
                result = split_frame(&mut buf, DEFAULT_MAX_FRAME_LEN);
                assert!(buf.capacity() <= 64, "reserved {} bytes", buf.capacity());
            }
            let expected = match usize::try_from(len) {
                Err(_) => FrameError::NegativeLength { len },
                Ok(n) => FrameError::TooLarge {
                    len: n,
                    max: DEFAULT_MAX_FRAME_LEN,
                },
            };
            assert_eq!(result, Err(expected));
            assert_eq!(&buf[..], &header, "the bad header must stay in the buffer");
            // Asking again gives the same error, still without reserving.
            assert!(split_frame(&mut buf, DEFAULT_MAX_FRAME_LEN).is_err());
            assert!(buf.capacity() <= 64);
        }
    }
    // A limit of 0 still allows empty frames.
    let mut buf = BytesMut::from(&[0, 0, 0, 0, 0, 0, 0, 1, 9][..]);
    assert_eq!(split_frame(&mut buf, 0).unwrap().unwrap().len(), 0);
    assert_eq!(
        split_frame(&mut buf, 0),
        Err(FrameError::TooLarge { len: 1, max: 0 })
    );
    // A valid length within the limit is waited for (and room for it reserved).
    let mut buf = BytesMut::from(&[0, 0, 0, 10, 1, 2][..]);
    assert_eq!(split_frame(&mut buf, 10), Ok(None));
    assert!(buf.capacity() >= 14);
    assert_eq!(&buf[..], &[0, 0, 0, 10, 1, 2]);
}

// ---------------------------------------------------------------------------------------
// Hostile lengths.

/// Runs `f` `n` times and returns the mean time per call.
fn time_per_call(n: u32, mut f: impl FnMut()) -> Duration {
    let start = Instant::now();
    for _ in 0..n {
        f();
    }
    start.elapsed() / n
}

fn assert_bad_length<T: std::fmt::Debug>(got: Result<T, DecodeError>, len: i32, max: usize) {
    assert!(
        matches!(got, Err(DecodeError::BadLength { len: l, max: m, .. }) if l == len && m == max),
        "expected BadLength {{ len: {len}, max: {max} }}, got {got:?}"
    );
}

#[test]
fn hostile_counts_fail_fast_without_allocating() {
    let hostile = |count: i32, tail: &[u8]| {
        let mut v = count.to_be_bytes().to_vec();
        v.extend_from_slice(tail);
        v
    };
    // GetChildrenResponse announcing i32::MAX children, with 4 bytes after the count.
    let body = hostile(i32::MAX, &[0, 0, 0, 0]);
    assert_bad_length(
        support::decode_record::<GetChildrenResponse>(&body),
        i32::MAX,
        4,
    );
    // Two strings need at least 8 bytes: 4 are not enough.
    assert_bad_length(
        support::decode_record::<GetChildrenResponse>(&hostile(2, &[0, 0, 0, 0])),
        2,
        4,
    );
    // One empty string fits.
    assert_eq!(
        support::decode_record::<GetChildrenResponse>(&hostile(1, &[0, 0, 0, 0])),
        Ok(GetChildrenResponse {
            children: vec![String::new()]
        })
    );
    // The same through a whole reply frame.
    let mut frame = vec![0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0];
    frame.extend_from_slice(&body);
    assert_bad_length(
        ServerFrame::decode(&frame, |_| Some(OpCode::GetChildren)),
        i32::MAX,
        4,
    );
    // Other vectors, strings and buffers with hostile lengths.
    assert_bad_length(
        support::decode_record::<GetAclResponse>(&hostile(0x7fff_fff0, &[0; 80])),
        0x7fff_fff0,
        80,
    );
    assert_bad_length(
        support::decode_record::<WhoAmIResponse>(&hostile(i32::MAX, &[0; 8])),
        i32::MAX,
        8,
    );
    let mut set_watches = 0i64.to_be_bytes().to_vec();
    set_watches.extend(hostile(i32::MAX, &[0; 20]));
    assert_bad_length(
        support::decode_record::<SetWatches2>(&set_watches),
        i32::MAX,
        20,
    );
    assert_bad_length(
        support::decode_record::<GetDataResponse>(&hostile(i32::MAX, &[0; 68])),
        i32::MAX,
        68,
    );
    assert_bad_length(
        support::decode_record::<GetDataResponse>(&hostile(-2, &[0; 68])),
        -2,
        68,
    );
    assert_bad_length(
        support::decode_record::<zk_proto::records::CreateResponse>(&hostile(-1, &[])),
        -1,
        0,
    );
    let mut request = vec![0, 0, 0, 1, 0, 0, 0, 101];
    request.extend_from_slice(&set_watches);
    assert_bad_length(Request::decode_frame(&request), i32::MAX, 20);

    // And fast: no 2 GB allocation or loop over the announced count (a generous bound for a
    // debug build on a loaded machine).
    let per_call = time_per_call(10_000, || {
        assert!(ServerFrame::decode(&frame, |_| Some(OpCode::GetChildren)).is_err());
        assert!(support::decode_record::<SetWatches2>(&set_watches).is_err());
    });
    println!("hostile counts: {per_call:?} per pair of decodes");
    assert!(per_call < Duration::from_micros(200), "{per_call:?}");
}

// ---------------------------------------------------------------------------------------
// Fuzz seeds.

/// The seed inputs of the fuzz targets, by target: `(target, file name, bytes)`. Each is
/// byte 0 (default limit, whole stream or chunks of 1..31 bytes), a handshake frame, then up
/// to 6 sample frames; server replies get an xid that `fuzz_op_for` maps to their opcode.
fn fuzz_seeds() -> Vec<(&'static str, String, Vec<u8>)> {
    let corpus = support::all_samples();
    let server: Vec<Vec<u8>> = corpus
        .iter()
        .filter_map(|s| match (&s.kind, &s.value) {
            (Kind::Server(Some(op)), Decoded::Server(ServerFrame::Reply(h, body))) => {
                let mut h = h.clone();
                h.xid = support::fuzz_xid_for(*op);
                Some(encode(&Decoded::Server(ServerFrame::Reply(
                    h,
                    body.clone(),
                ))))
            }
            (Kind::Server(_), Decoded::Server(f @ ServerFrame::Notification(..))) => {
                Some(encode(&Decoded::Server(f.clone())))
            }
            _ => None,
        })
        .collect();
    let requests: Vec<Vec<u8>> = corpus
        .iter()
        .filter(|s| s.kind == Kind::Request)
        .map(|s| s.frame.clone())
        .collect();
    let handshakes = |kind: Kind| -> Vec<Vec<u8>> {
        corpus
            .iter()
            .filter(|s| s.kind == kind)
            .map(|s| s.frame.clone())
            .collect()
    };
    let mut out = Vec::new();
    for (target, handshakes, frames) in [
        ("server_frames", handshakes(Kind::ConnectResponse), server),
        ("request_frames", handshakes(Kind::ConnectRequest), requests),
    ] {
        for (i, group) in frames.chunks(6).enumerate() {
            let b0 = if i % 3 == 0 {
                0
            } else {
                u8::try_from(i % 31 + 1).unwrap() << 3
            };
            let mut seed = vec![b0];
            seed.extend(framed(&handshakes[i % handshakes.len()]));
            for f in group {
                seed.extend(framed(f));
            }
            out.push((target, format!("seed-{i:03}"), seed));
        }
    }
    out
}

/// Runs a fuzz input the way its target does, and checks that every frame in it is whole
/// and decodes.
fn check_fuzz_seed(target: &str, input: &[u8]) {
    let (max, chunk) = support::fuzz_params(input[0]);
    let (frames, err) = support::split_stream(&input[1..], max, chunk);
    assert_eq!(err, None);
    let whole: usize = frames.iter().map(|f| f.len() + 4).sum();
    assert_eq!(whole, input.len() - 1, "{target}: incomplete frame");
    for (i, frame) in frames.iter().enumerate() {
        let kind = match (target, i) {
            ("server_frames", 0) => Kind::ConnectResponse,
            ("server_frames", _) => Kind::Server(support::fuzz_op_for(i32::from_be_bytes(
                frame[..4].try_into().unwrap(),
            ))),
            (_, 0) => Kind::ConnectRequest,
            _ => Kind::Request,
        };
        assert!(
            check_one(kind, frame),
            "{target}: frame {i} does not decode as {kind:?}"
        );
    }
}

#[test]
fn fuzz_seeds_are_valid_streams() {
    let seeds = fuzz_seeds();
    for (case, (target, _, input)) in seeds.iter().enumerate() {
        let _ctx = OnPanic {
            test: "fuzz_seeds_are_valid_streams",
            seed: 0,
            case,
            input,
        };
        check_fuzz_seed(target, input);
    }
    // The committed seeds too, if they are there.
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds");
    for target in ["server_frames", "request_frames"] {
        let Ok(entries) = std::fs::read_dir(dir.join(target)) else {
            continue;
        };
        for entry in entries {
            let input = std::fs::read(entry.unwrap().path()).unwrap();
            check_fuzz_seed(target, &input);
        }
    }
}

/// Writes [`fuzz_seeds`] to `fuzz/seeds/<target>/`. Run it with
/// `cargo test -p zk-proto --test decode_total -- --ignored write_fuzz_seeds`.
#[test]
#[ignore = "writes files; run by hand to refresh fuzz/seeds"]
fn write_fuzz_seeds() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds");
    for (target, name, input) in fuzz_seeds() {
        std::fs::create_dir_all(dir.join(target)).unwrap();
        std::fs::write(dir.join(target).join(name), input).unwrap();
    }
}
