//! A byte stream from a client. Byte 0 picks the frame length limit and how the stream is fed
//! to `split_frame`; the rest is split into frames until `split_frame` errs or has no whole
//! frame left. The first frame is decoded as a `ConnectRequest`, every later one by
//! `Request::decode_frame`. Nothing may panic, and whatever decodes must re-encode to bytes
//! that decode to the same value (with the header's opcode equal to the request's).

#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/support/mod.rs"]
mod support;

use support::{Kind, check_one, fuzz_params, split_stream};

fuzz_target!(|data: &[u8]| {
    let Some((&b0, stream)) = data.split_first() else {
        return;
    };
    let (max, chunk) = fuzz_params(b0);
    let (frames, _err) = split_stream(stream, max, chunk);
    for (i, frame) in frames.iter().enumerate() {
        let kind = if i == 0 {
            Kind::ConnectRequest
        } else {
            Kind::Request
        };
        check_one(kind, frame);
        if let Ok((header, request)) = zk_proto::Request::decode_frame(frame) {
            assert_eq!(header.op, request.op_code());
        }
    }
});
