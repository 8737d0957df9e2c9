//! How frames read and written appear in the server's trace ([`crate::MemServer::record`]).

/// A request frame (no length prefix) for the trace: decoded if it decodes as a request,
/// else its length and digest (a `ConnectRequest`).
pub(crate) fn describe_in(frame: &[u8]) -> String {
    match zk_proto::Request::decode_frame(frame) {
        Ok((header, request)) => format!("xid {} {request:?}", header.xid),
        Err(_) => format!("{} bytes #{:016x}", frame.len(), digest(frame)),
    }
}

/// A frame the server writes (length prefix included) for the trace: its reply header and
/// the digest of all of it.
pub(crate) fn describe_out(frame: &[u8]) -> String {
    let body = frame.get(4..).unwrap_or_default();
    let header = <zk_proto::ReplyHeader as zk_proto::Decode>::decode_exact(
        body.get(..16).unwrap_or_default(),
        "ReplyHeader",
    );
    match header {
        Ok(h) => format!(
            "xid {} zxid {} {:?} {} bytes #{:016x}",
            h.xid,
            h.zxid,
            h.err,
            frame.len(),
            digest(frame)
        ),
        Err(_) => format!("{} bytes #{:016x}", frame.len(), digest(frame)),
    }
}

/// FNV-1a over `bytes`: a digest for the trace.
pub(crate) fn digest(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}
