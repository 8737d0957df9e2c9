//! The test fixture: [`encode_snapshot`], the bytes of a small snapshot for tests of readers.

use super::{MAGIC, StatPersisted, VERSION};
use crate::txnlog::adler32;

/// The bytes of a snapshot holding `sessions` (id, timeout) and `nodes` (path, stat; root
/// `""` first, parents before children), with null data, the open ACL key -1, an empty ACL
/// cache, and a first seal: for tests of readers.
pub fn encode_snapshot(sessions: &[(i64, i32)], nodes: &[(&str, &StatPersisted)]) -> Vec<u8> {
    use crate::Encode;
    let mut out = bytes::BytesMut::new();
    let put_str = |out: &mut bytes::BytesMut, s: &str| {
        out.extend_from_slice(&i32::try_from(s.len()).unwrap_or(i32::MAX).to_be_bytes());
        out.extend_from_slice(s.as_bytes());
    };
    out.extend_from_slice(&MAGIC.to_be_bytes());
    out.extend_from_slice(&VERSION.to_be_bytes());
    out.extend_from_slice(&(-1i64).to_be_bytes());
    out.extend_from_slice(&i32::try_from(sessions.len()).unwrap_or(0).to_be_bytes());
    for (id, timeout) in sessions {
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&timeout.to_be_bytes());
    }
    out.extend_from_slice(&0i32.to_be_bytes()); // the ACL cache
    for (path, stat) in nodes {
        put_str(&mut out, path);
        out.extend_from_slice(&(-1i32).to_be_bytes()); // null data
        out.extend_from_slice(&(-1i64).to_be_bytes());
        // StatPersisted has fixed-size fields only: its encoding cannot fail.
        let _ = stat.encode(&mut out);
    }
    put_str(&mut out, "/");
    let crc = adler32(&out);
    out.extend_from_slice(&i64::from(crc).to_be_bytes());
    put_str(&mut out, "/");
    out.to_vec()
}
