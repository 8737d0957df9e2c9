//! [`Reader`]: a cursor over untrusted bytes that never panics and never over-allocates.

use std::borrow::Cow;

use crate::DecodeError;

/// A cursor over the bytes of one record or frame.
///
/// Every read is checked: a short input gives [`DecodeError::UnexpectedEnd`], a bad length
/// prefix [`DecodeError::BadLength`]. Nothing is allocated by a length until the bytes it
/// describes are known to be there. The reader keeps the name of the field being read (set by
/// [`Reader::at`]) and the offset from the start, only to make errors say where they happened.
///
/// # Examples
///
/// ```
/// use zk_proto::Reader;
///
/// let mut r = Reader::new(&[0, 0, 0, 7, 0xff]);
/// assert_eq!(r.i32().unwrap(), 7);
/// assert!(r.i32().is_err()); // only one byte left
/// ```
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    rest: &'a [u8],
    offset: usize,
    at: &'static str,
}

impl<'a> Reader<'a> {
    /// A reader over `bytes`, starting at offset 0.
    pub fn new(bytes: &'a [u8]) -> Self {
        Self {
            rest: bytes,
            offset: 0,
            at: "record",
        }
    }

    /// Names the field read next, for error messages (e.g. `"Stat.czxid"`).
    pub fn at(&mut self, field: &'static str) -> &mut Self {
        self.at = field;
        self
    }

    /// The name set by the last [`Reader::at`].
    pub fn field(&self) -> &'static str {
        self.at
    }

    /// Bytes consumed so far.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// Bytes not yet consumed.
    pub fn remaining(&self) -> usize {
        self.rest.len()
    }

    /// Takes the next `n` bytes.
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        match self.rest.split_at_checked(n) {
            Some((head, tail)) => {
                self.rest = tail;
                self.offset += n;
                Ok(head)
            }
            None => Err(DecodeError::UnexpectedEnd {
                at: self.at,
                offset: self.offset,
                needed: n - self.rest.len(),
            }),
        }
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        match self.rest.split_first_chunk::<N>() {
            Some((head, tail)) => {
                self.rest = tail;
                self.offset += N;
                Ok(*head)
            }
            None => Err(DecodeError::UnexpectedEnd {
                at: self.at,
                offset: self.offset,
                needed: N - self.rest.len(),
            }),
        }
    }

    /// A big-endian `int`.
    pub fn i32(&mut self) -> Result<i32, DecodeError> {
        self.array().map(i32::from_be_bytes)
    }

    /// A big-endian `long`.
    pub fn i64(&mut self) -> Result<i64, DecodeError> {
        self.array().map(i64::from_be_bytes)
    }

    /// A `boolean`: one byte, 0 or 1. Anything else is [`DecodeError::BadValue`].
    pub fn bool(&mut self) -> Result<bool, DecodeError> {
        let offset = self.offset;
        match self.array::<1>()? {
            [0] => Ok(false),
            [1] => Ok(true),
            [b] => Err(DecodeError::BadValue {
                at: self.at,
                offset,
                value: i64::from(b),
            }),
        }
    }

    /// A length prefix followed by that many bytes; `-1` is null (`None`).
    pub fn buffer(&mut self) -> Result<Option<&'a [u8]>, DecodeError> {
        let offset = self.offset;
        let len = self.i32()?;
        if len == -1 {
            return Ok(None);
        }
        let n = self.checked_len(offset, len, 1)?;
        self.take(n).map(Some)
    }

    /// A `ustring`: a length prefix and UTF-8 bytes, in which a character outside the Basic
    /// Multilingual Plane may also come as a surrogate pair, as Java writes it (see
    /// `java_utf8`). Null (`-1`) is refused: no record a ZooKeeper server sends carries a null
    /// string.
    pub fn string(&mut self) -> Result<Cow<'a, str>, DecodeError> {
        let offset = self.offset;
        let len = self.i32()?;
        let n = self.checked_len(offset, len, 1)?;
        let start = self.offset;
        let bytes = self.take(n)?;
        crate::java_utf8::decode(bytes).ok_or(DecodeError::BadUtf8 {
            at: self.at,
            offset: start,
        })
    }

    /// A vector's element count, checked against the bytes left given that each element takes
    /// at least `min_elem_len` bytes. The result is therefore safe to use as a capacity.
    pub fn vector_len(&mut self, min_elem_len: usize) -> Result<usize, DecodeError> {
        let offset = self.offset;
        let len = self.i32()?;
        self.checked_len(offset, len, min_elem_len)
    }

    fn checked_len(&self, offset: usize, len: i32, unit: usize) -> Result<usize, DecodeError> {
        let max = self.rest.len();
        match usize::try_from(len) {
            Ok(n) if n.saturating_mul(unit.max(1)) <= max => Ok(n),
            _ => Err(DecodeError::BadLength {
                at: self.at,
                offset,
                len,
                max,
            }),
        }
    }

    /// Ends a record that must use all its bytes: anything left is
    /// [`DecodeError::TrailingBytes`].
    pub fn finish(self, record: &'static str) -> Result<(), DecodeError> {
        match self.rest.len() {
            0 => Ok(()),
            extra => Err(DecodeError::TrailingBytes { record, extra }),
        }
    }
}
