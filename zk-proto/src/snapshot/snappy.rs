//! [`SnappyDecoder`]: a snappy-java `SnappyOutputStream` stream decompressed as it is read,
//! the way ZooKeeper's `SnapStream` reads a `snapshot.<zxid>.snappy` file.
//!
//! The framing (snappy-java's `SnappyCodec` and `SnappyOutputStream`):
//!
//! ```text
//! stream = header block*
//! header = 82 'S' 'N' 'A' 'P' 'P' 'Y' 00, version (i32, at least 1), compatible version (i32)
//! block  = length (i32, big-endian), that many bytes of one raw snappy block
//!        | header                                     (streams concatenated)
//! raw    = decompressed length (varint), then literals and copies
//! ```
//!
//! - Memory is one block, compressed and decompressed; ZooKeeper's blocks hold 32 KiB. A
//!   length over [`MAX_SNAPPY_BLOCK`] is refused before anything is allocated for it.
//! - Total: a malformed or cut input gives a [`DecompressError`] with the compressed offset,
//!   and every later read the same error.

use std::io::{self, BufRead, Read};

use super::compression::Sticky;
use super::{Compression, DecompressError, MAX_SNAPPY_BLOCK};

/// snappy-java's magic, the first 8 bytes of its stream header.
const MAGIC: [u8; 8] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];

/// The longest a raw block of [`MAX_SNAPPY_BLOCK`] bytes compresses to
/// (snappy's `MaxCompressedLength`).
const MAX_COMPRESSED: usize = 32 + MAX_SNAPPY_BLOCK + MAX_SNAPPY_BLOCK / 6;

/// Reads a snappy-java stream (`SnappyOutputStream`'s framing over raw snappy blocks) and
/// gives its decompressed bytes, as an [`std::io::BufRead`] over the compressed
/// [`std::io::BufRead`].
///
/// Errors come as [`std::io::Error`]s carrying a [`DecompressError`]
/// ([`DecompressError::from_io`]); an error is sticky. Raw snappy blocks carry no checksum:
/// the snapshot's own seals check what comes out.
///
/// # Examples
///
/// ```
/// use std::io::Read;
/// use zk_proto::snapshot::{DecompressError, SnappyDecoder};
///
/// let mut stream = vec![0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1];
/// // One block: decompressed length 6, a 2-byte literal "ab", then a copy of 4 from 2 back.
/// stream.extend_from_slice(&[0, 0, 0, 6, 6, 0x04, b'a', b'b', 0x01, 2]);
/// let mut out = String::new();
/// SnappyDecoder::new(&stream[..]).read_to_string(&mut out).unwrap();
/// assert_eq!(out, "ababab");
///
/// // The copy reaching 3 back, before the block's start: an error, not a panic.
/// let last = stream.len() - 1;
/// stream[last] = 3;
/// let err = SnappyDecoder::new(&stream[..]).read_to_end(&mut Vec::new()).unwrap_err();
/// let err = DecompressError::from_io(&err).unwrap();
/// assert!(matches!(err, DecompressError::SnappyBlock { offset: 20, at: 4, .. }), "{err}");
/// ```
#[derive(Debug)]
pub struct SnappyDecoder<R> {
    input: R,
    /// Compressed bytes read.
    offset: u64,
    started: bool,
    done: bool,
    /// The current block, compressed.
    block: Vec<u8>,
    /// The current block, decompressed, read from `pos`.
    out: Vec<u8>,
    pos: usize,
    failed: Sticky,
}

impl<R: BufRead> SnappyDecoder<R> {
    /// Decompresses `input`, which starts with snappy-java's stream header.
    pub fn new(input: R) -> Self {
        SnappyDecoder {
            input,
            offset: 0,
            started: false,
            done: false,
            block: Vec::new(),
            out: Vec::new(),
            pos: 0,
            failed: Sticky::default(),
        }
    }

    /// Compressed bytes read so far.
    pub fn compressed_offset(&self) -> u64 {
        self.offset
    }

    fn truncated(&self) -> io::Error {
        DecompressError::Truncated {
            format: Compression::Snappy,
            offset: self.offset,
        }
        .into_io()
    }

    /// Fills `buf` from the input, short only at its end; how many bytes were read.
    fn read_full(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut got = 0;
        while let Some(rest) = buf.get_mut(got..).filter(|r| !r.is_empty()) {
            match self.input.read(rest) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        self.offset += got as u64;
        Ok(got)
    }

    /// The rest of a stream header whose first four bytes, `head`, were read.
    fn read_header(&mut self, head: [u8; 4]) -> io::Result<()> {
        let start = self.offset - 4;
        let mut rest = [0u8; 12];
        if self.read_full(&mut rest)? < rest.len() {
            return Err(self.truncated());
        }
        let bad = |what| DecompressError::SnappyHeader {
            offset: start,
            what,
        };
        let (magic, versions) = rest.split_at(4);
        if head.iter().chain(magic).ne(MAGIC.iter()) {
            return Err(bad("not a snappy-java stream (magic 82 \"SNAPPY\" 00)").into_io());
        }
        let version = versions.first_chunk::<4>().copied().map(i32::from_be_bytes);
        if version.is_none_or(|v| v < 1) {
            return Err(bad("version below 1").into_io());
        }
        Ok(())
    }

    /// Reads blocks until one decompresses to some bytes, or the stream ends.
    fn next_block(&mut self) -> io::Result<()> {
        self.out.clear();
        self.pos = 0;
        loop {
            let mut head = [0u8; 4];
            let got = self.read_full(&mut head)?;
            if !self.started {
                if got < head.len() {
                    return Err(self.truncated());
                }
                self.read_header(head)?;
                self.started = true;
                continue;
            }
            if got == 0 {
                self.done = true;
                return Ok(());
            }
            if got < head.len() {
                return Err(self.truncated());
            }
            if head.first_chunk::<4>() == MAGIC.first_chunk::<4>() {
                // Another stream's header: streams concatenated.
                self.read_header(head)?;
                continue;
            }
            let at = self.offset - 4;
            let len = i32::from_be_bytes(head);
            let Some(n) = usize::try_from(len).ok().filter(|&n| n <= MAX_COMPRESSED) else {
                return Err(DecompressError::TooLong {
                    offset: at,
                    what: "block",
                    len: i64::from(len),
                    max: MAX_COMPRESSED,
                }
                .into_io());
            };
            // Grown as the bytes arrive: a length past the end allocates little.
            self.block.clear();
            let read = (&mut self.input)
                .take(n as u64)
                .read_to_end(&mut self.block)?;
            self.offset += read as u64;
            if read < n {
                return Err(self.truncated());
            }
            decode_block(&self.block, &mut self.out, self.offset - n as u64)?;
            if !self.out.is_empty() {
                return Ok(());
            }
        }
    }
}

impl<R: BufRead> BufRead for SnappyDecoder<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.pos >= self.out.len() && !self.done {
            self.failed.check()?;
            self.next_block().map_err(|e| self.failed.record(e))?;
        }
        Ok(self.out.get(self.pos..).unwrap_or_default())
    }

    fn consume(&mut self, amt: usize) {
        self.pos = (self.pos + amt).min(self.out.len());
    }
}

impl<R: BufRead> Read for SnappyDecoder<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        super::compression::read_via_fill(self, buf)
    }
}

/// Decompresses one raw snappy block `src` (which starts at compressed offset `offset`)
/// into `out`.
fn decode_block(src: &[u8], out: &mut Vec<u8>, offset: u64) -> io::Result<()> {
    let bad = |at, what| DecompressError::SnappyBlock { offset, at, what }.into_io();
    // The decompressed length: a little-endian base-128 varint of at most 5 bytes.
    let mut len: u64 = 0;
    let mut rest = src;
    for shift in (0..35).step_by(7) {
        let Some((&b, after)) = rest.split_first() else {
            return Err(bad(src.len(), "block ends in its length"));
        };
        rest = after;
        len |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            break;
        }
        if shift == 28 {
            return Err(bad(4, "length longer than 5 bytes"));
        }
    }
    let Some(len) = usize::try_from(len).ok().filter(|&n| n <= MAX_SNAPPY_BLOCK) else {
        return Err(DecompressError::TooLong {
            offset,
            what: "decompressed",
            len: i64::try_from(len).unwrap_or(i64::MAX),
            max: MAX_SNAPPY_BLOCK,
        }
        .into_io());
    };
    out.reserve(len);
    while let Some((&tag, after)) = rest.split_first() {
        let at = src.len() - rest.len();
        let (copy, after) = match tag & 3 {
            0 => {
                let mut n = usize::from(tag >> 2);
                let mut after = after;
                if n >= 60 {
                    // The length - 1 in the next 1 to 4 bytes, little-endian.
                    let (le, a) = after
                        .split_at_checked(n - 59)
                        .ok_or_else(|| bad(at, "literal length runs past the block"))?;
                    n = le.iter().rev().fold(0, |v, &b| (v << 8) | usize::from(b));
                    after = a;
                }
                let (lit, a) = after
                    .split_at_checked(n.saturating_add(1))
                    .ok_or_else(|| bad(at, "literal runs past the block"))?;
                if out.len() + lit.len() > len {
                    return Err(bad(at, "more bytes than the block's length"));
                }
                out.extend_from_slice(lit);
                rest = a;
                continue;
            }
            1 => {
                let (&low, a) = after
                    .split_first()
                    .ok_or_else(|| bad(at, "copy runs past the block"))?;
                let n = 4 + usize::from((tag >> 2) & 7);
                ((n, (usize::from(tag >> 5) << 8) | usize::from(low)), a)
            }
            2 => {
                let (off, a) = after
                    .split_first_chunk::<2>()
                    .ok_or_else(|| bad(at, "copy runs past the block"))?;
                let n = 1 + usize::from(tag >> 2);
                ((n, usize::from(u16::from_le_bytes(*off))), a)
            }
            _ => {
                let (off, a) = after
                    .split_first_chunk::<4>()
                    .ok_or_else(|| bad(at, "copy runs past the block"))?;
                let n = 1 + usize::from(tag >> 2);
                let off = usize::try_from(u32::from_le_bytes(*off)).unwrap_or(usize::MAX);
                ((n, off), a)
            }
        };
        let (n, distance) = copy;
        if distance == 0 || distance > out.len() {
            return Err(bad(at, "copy offset 0 or before the block's start"));
        }
        if out.len() + n > len {
            return Err(bad(at, "more bytes than the block's length"));
        }
        // Copied in pieces no longer than the offset: each piece's source is written.
        let mut from = out.len() - distance;
        let mut left = n;
        while left > 0 {
            let k = left.min(distance);
            out.extend_from_within(from..from + k);
            from += k;
            left -= k;
        }
        rest = after;
    }
    if out.len() != len {
        return Err(bad(src.len(), "fewer bytes than the block's length"));
    }
    Ok(())
}
