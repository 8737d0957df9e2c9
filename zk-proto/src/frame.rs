//! Framing: every ZooKeeper message is a 4-byte big-endian length followed by that many bytes.

use bytes::{Buf, BufMut, BytesMut};

use crate::{Encode, EncodeError, FrameError};

/// The Java client's default limit on a frame's length (`jute.maxbuffer`, `0xfffff`).
pub const DEFAULT_MAX_FRAME_LEN: usize = 0xfffff;

/// Splits the first whole frame off `buf`.
///
/// Returns `Ok(None)` while `buf` holds less than a whole frame (and then reserves room for the
/// rest of it, once its length is known to be within `max`), `Ok(Some(frame))` without the
/// length prefix, or an error if the length is negative or over `max`: the stream is then
/// corrupt and the connection must close. The length is checked before anything is reserved.
///
/// # Examples
///
/// ```
/// use bytes::BytesMut;
/// use zk_proto::split_frame;
///
/// let mut buf = BytesMut::from(&[0, 0, 0, 2, 7][..]);
/// assert_eq!(split_frame(&mut buf, 1024).unwrap(), None); // one byte short
/// buf.extend_from_slice(&[8, 0]);
/// assert_eq!(&split_frame(&mut buf, 1024).unwrap().unwrap()[..], &[7, 8]);
/// assert_eq!(&buf[..], &[0]); // the start of the next frame stays
///
/// let mut big = BytesMut::from(&[0, 1, 0, 0][..]); // a 65,536-byte frame's length
/// assert_eq!(split_frame(&mut big, 1 << 20).unwrap(), None);
/// assert!(big.capacity() >= 4 + 65_536); // room for all of it, reserved at once
///
/// let mut bad = BytesMut::from(&[0x7f, 0xff, 0xff, 0xff][..]);
/// assert!(split_frame(&mut bad, 1024).is_err());
/// ```
pub fn split_frame(buf: &mut BytesMut, max: usize) -> Result<Option<BytesMut>, FrameError> {
    let Some(head) = buf.first_chunk::<4>() else {
        return Ok(None);
    };
    let len = i32::from_be_bytes(*head);
    let n = usize::try_from(len).map_err(|_| FrameError::NegativeLength { len })?;
    if n > max {
        return Err(FrameError::TooLarge { len: n, max });
    }
    let total = 4 + n;
    if buf.len() < total {
        buf.reserve(total - buf.len());
        return Ok(None);
    }
    let mut frame = buf.split_to(total);
    frame.advance(4);
    Ok(Some(frame))
}

/// Appends `record` to `out` as one frame (length prefix, then the record), refusing a frame
/// longer than `max`. On error nothing is appended.
pub fn encode_frame(
    record: &impl Encode,
    out: &mut BytesMut,
    max: usize,
) -> Result<(), EncodeError> {
    let len = record.encoded_len();
    let prefix = frame_prefix(len, max)?;
    out.reserve(4 + len);
    let start = out.len();
    out.put_i32(prefix);
    record.encode(out).inspect_err(|_| out.truncate(start))
}

pub(crate) fn frame_prefix(len: usize, max: usize) -> Result<i32, EncodeError> {
    if len > max {
        return Err(EncodeError::FrameTooLarge { len, max });
    }
    crate::codec::len_prefix("frame", len)
}
