//! A byte stream from a server. Byte 0 picks the frame length limit and how the stream is fed
//! to `split_frame` (all at once or in small chunks); the rest is split into frames until
//! `split_frame` errs or has no whole frame left. The first frame is decoded as a
//! `ConnectResponse`, every later one by `ServerFrame::decode`, whose `op_for` takes the
//! opcode from `OpCode::ALL` by the low byte of the xid (or none, past its end). Nothing may
//! panic, and whatever decodes must re-encode to bytes that decode to the same value.

#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/support/mod.rs"]
mod support;

use support::{Kind, check_one, fuzz_op_for, fuzz_params, split_stream};

fuzz_target!(|data: &[u8]| {
    let Some((&b0, stream)) = data.split_first() else {
        return;
    };
    let (max, chunk) = fuzz_params(b0);
    let (frames, _err) = split_stream(stream, max, chunk);
    for (i, frame) in frames.iter().enumerate() {
        let kind = if i == 0 {
            Kind::ConnectResponse
        } else {
            let xid = frame
                .first_chunk::<4>()
                .map_or(0, |b| i32::from_be_bytes(*b));
            Kind::Server(fuzz_op_for(xid))
        };
        check_one(kind, frame);
    }
});
