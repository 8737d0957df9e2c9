//! Where a snapshot's bytes come from: [`Source`], the reads the decoder asks for, over a
//! whole slice ([`SliceSource`], borrowing) or any [`std::io::BufRead`] ([`ReadSource`],
//! owning).
//!
//! - A source says where each failure is, in its own way: the slice as the record's start
//!   with offsets from it, the stream as the field's start with offsets into the field.
//! - A length is bounded before anything is allocated: by the bytes present in a slice, by
//!   [`MAX_FIELD_LEN`] in a stream (which then grows its buffer as the bytes arrive).
//! - The checksum covers every byte before the current offset.

use std::borrow::Cow;

use super::{MAX_FIELD_LEN, SnapshotError, StatPersisted};
use crate::txnlog::{Adler32, adler32};
use crate::{Decode, DecodeError, Reader};

/// The reads [`super::decoder::Decoder`] makes, each failing with a [`SnapshotError`].
pub(super) trait Source {
    /// A string as read (a node's path).
    type Str: AsRef<str>;
    /// A buffer as read (a node's data).
    type Buf;

    /// Marks the start of a record: the slice counts its errors' offsets from here.
    fn begin_record(&mut self);
    /// Where the current record started.
    fn record_start(&self) -> usize;
    /// Bytes read so far.
    fn offset(&self) -> usize;
    /// The Adler-32 of every byte before [`Source::offset`].
    fn checksum(&self) -> u32;

    fn i32(&mut self, at: &'static str) -> Result<i32, SnapshotError>;
    fn i64(&mut self, at: &'static str) -> Result<i64, SnapshotError>;
    /// A vector's count, each element at least `min_elem_len` bytes long.
    fn count(&mut self, at: &'static str, min_elem_len: usize) -> Result<usize, SnapshotError>;
    fn string(&mut self, at: &'static str) -> Result<Self::Str, SnapshotError>;
    /// A buffer; `None` for null.
    fn buffer(&mut self, at: &'static str) -> Result<Option<Self::Buf>, SnapshotError>;
    fn stat(&mut self) -> Result<StatPersisted, SnapshotError>;
    /// What follows the first seal (a stream gives at most 64 bytes of it), with the
    /// checksum of every byte before it.
    fn rest(&mut self) -> Result<(Cow<'_, [u8]>, Adler32), SnapshotError>;
}

/// A whole snapshot in memory: strings and data are borrowed from it.
#[derive(Debug, Clone)]
pub(super) struct SliceSource<'a> {
    bytes: &'a [u8],
    /// Where the current record starts.
    record: usize,
    /// A reader over the bytes from `record` on.
    r: Reader<'a>,
}

impl<'a> SliceSource<'a> {
    pub(super) fn new(bytes: &'a [u8]) -> Self {
        SliceSource {
            bytes,
            record: 0,
            r: Reader::new(bytes),
        }
    }

    fn err(&self, source: DecodeError) -> SnapshotError {
        SnapshotError::Decode {
            offset: self.record,
            source,
        }
    }
}

impl<'a> Source for SliceSource<'a> {
    type Str = Cow<'a, str>;
    type Buf = &'a [u8];

    fn begin_record(&mut self) {
        self.record += self.r.offset();
        self.r = Reader::new(self.bytes.get(self.record..).unwrap_or_default());
    }

    fn record_start(&self) -> usize {
        self.record
    }

    fn offset(&self) -> usize {
        self.record + self.r.offset()
    }

    fn checksum(&self) -> u32 {
        adler32(self.bytes.get(..self.offset()).unwrap_or_default())
    }

    fn i32(&mut self, at: &'static str) -> Result<i32, SnapshotError> {
        self.r.at(at).i32().map_err(|e| self.err(e))
    }

    fn i64(&mut self, at: &'static str) -> Result<i64, SnapshotError> {
        self.r.at(at).i64().map_err(|e| self.err(e))
    }

    fn count(&mut self, at: &'static str, min_elem_len: usize) -> Result<usize, SnapshotError> {
        self.r
            .at(at)
            .vector_len(min_elem_len)
            .map_err(|e| self.err(e))
    }

    fn string(&mut self, at: &'static str) -> Result<Cow<'a, str>, SnapshotError> {
        self.r.at(at).string().map_err(|e| self.err(e))
    }

    fn buffer(&mut self, at: &'static str) -> Result<Option<&'a [u8]>, SnapshotError> {
        self.r.at(at).buffer().map_err(|e| self.err(e))
    }

    fn stat(&mut self) -> Result<StatPersisted, SnapshotError> {
        StatPersisted::decode(&mut self.r).map_err(|e| self.err(e))
    }

    fn rest(&mut self) -> Result<(Cow<'_, [u8]>, Adler32), SnapshotError> {
        let (before, rest) = self
            .bytes
            .split_at_checked(self.offset())
            .unwrap_or((self.bytes, &[]));
        let mut sum = Adler32::new();
        sum.update(before);
        Ok((Cow::Borrowed(rest), sum))
    }
}

/// A snapshot read from an [`std::io::BufRead`]: each string and buffer is copied out, the
/// checksum kept as the bytes go by.
#[derive(Debug)]
pub(super) struct ReadSource<R> {
    input: R,
    offset: usize,
    record: usize,
    sum: Adler32,
}

impl<R: std::io::BufRead> ReadSource<R> {
    pub(super) fn new(input: R) -> Self {
        ReadSource {
            input,
            offset: 0,
            record: 0,
            sum: Adler32::new(),
        }
    }

    fn io(&self, e: &std::io::Error) -> SnapshotError {
        if let Some(source) = super::DecompressError::from_io(e) {
            return SnapshotError::Decompress {
                offset: self.offset,
                source: source.clone(),
            };
        }
        SnapshotError::Io {
            offset: self.offset,
            kind: e.kind(),
            message: e.to_string(),
        }
    }

    fn read(&mut self, buf: &mut [u8], at: &'static str) -> Result<(), SnapshotError> {
        let mut got = 0;
        while let Some(rest) = buf.get_mut(got..) {
            if rest.is_empty() {
                break;
            }
            match self.input.read(rest) {
                Ok(0) => {
                    return Err(SnapshotError::Decode {
                        offset: self.offset,
                        source: DecodeError::UnexpectedEnd {
                            at,
                            offset: got,
                            needed: rest.len(),
                        },
                    });
                }
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.io(&e)),
            }
        }
        self.sum.update(buf);
        self.offset += buf.len();
        Ok(())
    }

    fn bytes(&mut self, at: &'static str, null: bool) -> Result<Option<Vec<u8>>, SnapshotError> {
        let offset = self.offset;
        let len = self.i32(at)?;
        if len == -1 && null {
            return Ok(None);
        }
        let n = match usize::try_from(len) {
            Ok(n) if n <= MAX_FIELD_LEN => n,
            _ => return Err(SnapshotError::TooLong { at, offset, len }),
        };
        // Grown as the bytes arrive, in pieces: a length past the end allocates little.
        let mut out = Vec::new();
        let mut piece = [0u8; 4096];
        while out.len() < n {
            let k = (n - out.len()).min(piece.len());
            let buf = piece.get_mut(..k).unwrap_or_default();
            self.read(buf, at)?;
            out.extend_from_slice(buf);
        }
        Ok(Some(out))
    }
}

impl<R: std::io::BufRead> Source for ReadSource<R> {
    type Str = String;
    type Buf = Vec<u8>;

    fn begin_record(&mut self) {
        self.record = self.offset;
    }

    fn record_start(&self) -> usize {
        self.record
    }

    fn offset(&self) -> usize {
        self.offset
    }

    fn checksum(&self) -> u32 {
        self.sum.value()
    }

    fn i32(&mut self, at: &'static str) -> Result<i32, SnapshotError> {
        let mut b = [0u8; 4];
        self.read(&mut b, at)?;
        Ok(i32::from_be_bytes(b))
    }

    fn i64(&mut self, at: &'static str) -> Result<i64, SnapshotError> {
        let mut b = [0u8; 8];
        self.read(&mut b, at)?;
        Ok(i64::from_be_bytes(b))
    }

    /// Elements are read one by one, so the count allocates nothing itself.
    fn count(&mut self, at: &'static str, _min_elem_len: usize) -> Result<usize, SnapshotError> {
        let offset = self.offset;
        let n = self.i32(at)?;
        usize::try_from(n).map_err(|_| SnapshotError::TooLong { at, offset, len: n })
    }

    fn string(&mut self, at: &'static str) -> Result<String, SnapshotError> {
        let offset = self.offset;
        let bytes = self.bytes(at, false)?.unwrap_or_default();
        crate::java_utf8::decode(&bytes)
            .map(Cow::into_owned)
            .ok_or(SnapshotError::Decode {
                offset,
                source: DecodeError::BadUtf8 { at, offset: 0 },
            })
    }

    fn buffer(&mut self, at: &'static str) -> Result<Option<Vec<u8>>, SnapshotError> {
        self.bytes(at, true)
    }

    fn stat(&mut self) -> Result<StatPersisted, SnapshotError> {
        let mut stat = [0u8; 60];
        self.read(&mut stat, "StatPersisted")?;
        StatPersisted::decode(&mut Reader::new(&stat)).map_err(|source| SnapshotError::Decode {
            offset: self.record,
            source,
        })
    }

    fn rest(&mut self) -> Result<(Cow<'_, [u8]>, Adler32), SnapshotError> {
        // A digest and its seal (33 bytes), then a last zxid and its seal (21), if anything.
        let mut rest = Vec::new();
        let mut limited = std::io::Read::take(&mut self.input, 64);
        std::io::Read::read_to_end(&mut limited, &mut rest).map_err(|e| self.io(&e))?;
        Ok((Cow::Owned(rest), self.sum))
    }
}
