//! [`GzipDecoder`]: a gzip file (RFC 1952) inflated (RFC 1951) as it is read, the way Java's
//! `GZIPInputStream` reads what ZooKeeper's `GZIPOutputStream` wrote.
//!
//! - Memory is bounded: the 32 KiB window deflate may refer back into, plus up to 32 KiB
//!   decoded ahead of the reader (and one match's 258 bytes).
//! - Every block type: stored, fixed and dynamic Huffman codes. Members may follow one
//!   another (each with its own window); anything else after a member is an error.
//! - Each member's trailer is checked: the CRC-32 and ISIZE of its decompressed bytes (and
//!   the header's CRC-16 when it has one).
//! - Total: a malformed or cut input gives a [`DecompressError`] with the compressed offset,
//!   and every later read the same error.

use std::io::{self, BufRead, Read};

use super::compression::Sticky;
use super::{Compression, DecompressError};

/// How far back deflate may refer.
const WINDOW: usize = 32 * 1024;
/// How much is decoded ahead of the reader at most (one match may run past it).
const CHUNK: usize = 32 * 1024;
/// Bits of a code looked up in one step; longer codes are decoded bit by bit.
const FAST_BITS: u32 = 10;
const FAST_MASK: u64 = (1 << FAST_BITS) - 1;
/// The longest Huffman code deflate allows.
const MAX_CODE_LEN: usize = 15;

/// Length symbols 257..=285: base length and extra bits.
const LENGTHS: [(u16, u8); 29] = [
    (3, 0),
    (4, 0),
    (5, 0),
    (6, 0),
    (7, 0),
    (8, 0),
    (9, 0),
    (10, 0),
    (11, 1),
    (13, 1),
    (15, 1),
    (17, 1),
    (19, 2),
    (23, 2),
    (27, 2),
    (31, 2),
    (35, 3),
    (43, 3),
    (51, 3),
    (59, 3),
    (67, 4),
    (83, 4),
    (99, 4),
    (115, 4),
    (131, 5),
    (163, 5),
    (195, 5),
    (227, 5),
    (258, 0),
];

/// Distance symbols 0..=29: base distance and extra bits.
const DISTANCES: [(u16, u8); 30] = [
    (1, 0),
    (2, 0),
    (3, 0),
    (4, 0),
    (5, 1),
    (7, 1),
    (9, 2),
    (13, 2),
    (17, 3),
    (25, 3),
    (33, 4),
    (49, 4),
    (65, 5),
    (97, 5),
    (129, 6),
    (193, 6),
    (257, 7),
    (385, 7),
    (513, 8),
    (769, 8),
    (1025, 9),
    (1537, 9),
    (2049, 10),
    (3073, 10),
    (4097, 11),
    (6145, 11),
    (8193, 12),
    (12289, 12),
    (16385, 13),
    (24577, 13),
];

/// The order a dynamic block sends its code-length code lengths in.
const CODE_LENGTH_ORDER: [usize; 19] = [
    16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15,
];

/// Reads a gzip file (one member or several) and gives its decompressed bytes, as an
/// [`std::io::BufRead`] over the compressed [`std::io::BufRead`].
///
/// Errors come as [`std::io::Error`]s carrying a [`DecompressError`]
/// ([`DecompressError::from_io`]); an error is sticky. The stream ends only after the last
/// member's trailer checked out.
///
/// # Examples
///
/// ```
/// use std::io::Read;
/// use zk_proto::snapshot::{DecompressError, GzipDecoder};
///
/// // "hi" in a stored block, as `gzip` writes it at level 0.
/// let gz = [
///     0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff, // header
///     1, 2, 0, 0xfd, 0xff, b'h', b'i', // one final stored block
///     0xac, 0x2a, 0x93, 0xd8, 2, 0, 0, 0, // CRC-32, ISIZE
/// ];
/// let mut out = String::new();
/// GzipDecoder::new(&gz[..]).read_to_string(&mut out).unwrap();
/// assert_eq!(out, "hi");
///
/// // One byte of the CRC changed: an error saying so, and where.
/// let mut bad = gz;
/// bad[17] ^= 1;
/// let err = GzipDecoder::new(&bad[..]).read_to_end(&mut Vec::new()).unwrap_err();
/// let err = DecompressError::from_io(&err).unwrap();
/// assert!(matches!(err, DecompressError::Crc { offset: 17, .. }), "{err}");
/// ```
#[derive(Debug)]
pub struct GzipDecoder<R> {
    bits: Bits<R>,
    /// The window, then what is decoded and not yet read (from `pos`).
    out: Vec<u8>,
    pos: usize,
    /// The CRC-32 of the member's bytes before `crc_pos`, and how many there are.
    crc: u32,
    crc_pos: usize,
    member_len: u64,
    state: State,
    fixed: Option<Box<(Huffman, Huffman)>>,
    failed: Sticky,
}

#[derive(Debug)]
enum State {
    /// Before a member's header.
    Header,
    /// Before a block's header.
    BlockHead,
    /// In a stored block.
    Stored { remaining: usize, last: bool },
    /// In a compressed block: the dynamic tables, or `None` for the fixed ones.
    Codes {
        last: bool,
        dynamic: Option<Box<(Huffman, Huffman)>>,
    },
    /// After a member's last block.
    Trailer,
    /// Every member read and checked.
    Done,
}

impl<R: BufRead> GzipDecoder<R> {
    /// Inflates `input`, which starts with a gzip member header.
    pub fn new(input: R) -> Self {
        GzipDecoder {
            bits: Bits {
                input,
                buf: 0,
                n: 0,
                consumed: 0,
            },
            out: Vec::with_capacity(WINDOW + CHUNK + 258),
            pos: 0,
            crc: 0,
            crc_pos: 0,
            member_len: 0,
            state: State::Header,
            fixed: None,
            failed: Sticky::default(),
        }
    }

    /// Compressed bytes read so far (those buffered for the next bits included).
    pub fn compressed_offset(&self) -> u64 {
        self.bits.offset()
    }

    /// Adds the bytes decoded since the last call to the member's CRC-32 and length.
    fn sum(&mut self) {
        if let Some(new) = self.out.get(self.crc_pos..) {
            self.crc = crc32(self.crc, new);
            self.member_len += new.len() as u64;
        }
        self.crc_pos = self.out.len();
    }

    /// Decodes until `target` bytes are in `out` or the stream ends.
    fn run(&mut self, target: usize) -> io::Result<()> {
        while self.out.len() < target {
            match std::mem::replace(&mut self.state, State::Done) {
                State::Done => return Ok(()),
                State::Header => {
                    self.read_header()?;
                    self.state = State::BlockHead;
                }
                State::BlockHead => self.state = self.read_block_head()?,
                State::Stored { remaining, last } => {
                    let room = target.saturating_sub(self.out.len()).min(remaining);
                    let got = self.bits.copy_aligned(&mut self.out, room)?;
                    self.state = match remaining - got {
                        0 if last => State::Trailer,
                        0 => State::BlockHead,
                        remaining => State::Stored { remaining, last },
                    };
                }
                State::Codes { last, dynamic } => {
                    let tables = match &dynamic {
                        Some(t) => t,
                        None => self.fixed.get_or_insert_with(fixed_tables),
                    };
                    let member_len = self.member_len + (self.out.len() - self.crc_pos) as u64;
                    let ended =
                        inflate_codes(&mut self.bits, &mut self.out, tables, target, member_len)?;
                    self.state = match ended {
                        false => State::Codes { last, dynamic },
                        true if last => State::Trailer,
                        true => State::BlockHead,
                    };
                }
                State::Trailer => {
                    self.sum();
                    self.read_trailer()?;
                    self.crc = 0;
                    self.member_len = 0;
                    self.state = if self.bits.at_end()? {
                        State::Done
                    } else {
                        State::Header
                    };
                }
            }
        }
        Ok(())
    }

    /// A member's header: ID1 ID2 CM FLG MTIME XFL OS, then the optional fields FLG names.
    fn read_header(&mut self) -> io::Result<()> {
        let start = self.bits.offset();
        let bad = |what| DecompressError::GzipHeader {
            offset: start,
            what,
        };
        let mut hcrc = 0;
        let mut byte = |bits: &mut Bits<R>| -> io::Result<u8> {
            let b = bits.byte()?;
            hcrc = crc32(hcrc, &[b]);
            Ok(b)
        };
        if byte(&mut self.bits)? != 0x1f || byte(&mut self.bits)? != 0x8b {
            return Err(bad("not a gzip member (magic 1f 8b)").into_io());
        }
        if byte(&mut self.bits)? != 8 {
            return Err(bad("compression method is not deflate (8)").into_io());
        }
        let flags = byte(&mut self.bits)?;
        if flags & 0xe0 != 0 {
            return Err(bad("reserved flag set").into_io());
        }
        for _ in 0..6 {
            byte(&mut self.bits)?; // MTIME, XFL, OS
        }
        if flags & 0x04 != 0 {
            // FEXTRA: XLEN, then XLEN bytes.
            let xlen = u16::from_le_bytes([byte(&mut self.bits)?, byte(&mut self.bits)?]);
            for _ in 0..xlen {
                byte(&mut self.bits)?;
            }
        }
        for flag in [0x08, 0x10] {
            // FNAME, FCOMMENT: zero-terminated.
            if flags & flag != 0 {
                while byte(&mut self.bits)? != 0 {}
            }
        }
        if flags & 0x02 != 0 {
            let stored = u16::from_le_bytes([self.bits.byte()?, self.bits.byte()?]);
            if u32::from(stored) != hcrc & 0xffff {
                return Err(bad("header CRC-16 does not match").into_io());
            }
        }
        Ok(())
    }

    /// A block's header: BFINAL, BTYPE, then the stored length or the dynamic tables.
    fn read_block_head(&mut self) -> io::Result<State> {
        let offset = self.bits.offset();
        let last = self.bits.bits(1)? == 1;
        match self.bits.bits(2)? {
            0 => {
                self.bits.align();
                let offset = self.bits.offset();
                let len = self.bits.bits(16)? as u16;
                let nlen = self.bits.bits(16)? as u16;
                if len != !nlen {
                    return Err(DecompressError::StoredLength { offset, len, nlen }.into_io());
                }
                Ok(State::Stored {
                    remaining: usize::from(len),
                    last,
                })
            }
            1 => Ok(State::Codes {
                last,
                dynamic: None,
            }),
            2 => Ok(State::Codes {
                last,
                dynamic: Some(Box::new(self.bits.dynamic_tables()?)),
            }),
            _ => Err(DecompressError::BlockType { offset }.into_io()),
        }
    }

    /// A member's trailer: CRC-32 and ISIZE, little-endian, checked against the bytes
    /// decompressed.
    fn read_trailer(&mut self) -> io::Result<()> {
        self.bits.align();
        let offset = self.bits.offset();
        let stored = self.bits.bits(32)?;
        if stored != self.crc {
            return Err(DecompressError::Crc {
                offset,
                stored,
                computed: self.crc,
            }
            .into_io());
        }
        let offset = self.bits.offset();
        let stored = self.bits.bits(32)?;
        let computed = self.member_len as u32; // ISIZE is the length mod 2^32
        if stored != computed {
            return Err(DecompressError::Size {
                offset,
                stored,
                computed,
            }
            .into_io());
        }
        Ok(())
    }
}

impl<R: BufRead> BufRead for GzipDecoder<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.pos >= self.out.len() {
            self.failed.check()?;
            // Keep the window, drop what is behind it.
            if self.out.len() > WINDOW {
                self.sum();
                let behind = self.out.len() - WINDOW;
                self.out.drain(..behind);
                self.pos -= behind;
                self.crc_pos -= behind;
            }
            let target = self.out.len() + CHUNK;
            if let Err(e) = self.run(target) {
                let e = self.failed.record(e);
                // What was decoded before the fault is given first; the error next.
                if self.pos >= self.out.len() {
                    return Err(e);
                }
            }
        }
        Ok(self.out.get(self.pos..).unwrap_or_default())
    }

    fn consume(&mut self, amt: usize) {
        self.pos = (self.pos + amt).min(self.out.len());
    }
}

impl<R: BufRead> Read for GzipDecoder<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        super::compression::read_via_fill(self, buf)
    }
}

/// Decodes the symbols of one compressed block into `out` until `target` bytes are there
/// (true: the block ended). `member_len` is how many bytes of the member `out` holds the
/// end of (a distance may reach no further back).
fn inflate_codes<R: BufRead>(
    bits: &mut Bits<R>,
    out: &mut Vec<u8>,
    (lit, dist): &(Huffman, Huffman),
    target: usize,
    member_len: u64,
) -> io::Result<bool> {
    let base_len = out.len();
    while out.len() < target {
        let offset = bits.offset();
        let sym = bits.decode(lit, "literal/length")?;
        if let Ok(b) = u8::try_from(sym) {
            out.push(b);
            continue;
        }
        if sym == 256 {
            return Ok(true);
        }
        let bad = |what| DecompressError::BadSymbol { offset, what }.into_io();
        let &(base, extra) = LENGTHS
            .get(usize::from(sym - 257))
            .ok_or_else(|| bad("literal/length"))?;
        let len = usize::from(base) + bits.bits(u32::from(extra))? as usize;
        let dsym = bits.decode(dist, "distance")?;
        let &(base, extra) = DISTANCES
            .get(usize::from(dsym))
            .ok_or_else(|| bad("distance"))?;
        let distance = usize::from(base) + bits.bits(u32::from(extra))? as usize;
        let produced = member_len + (out.len() - base_len) as u64;
        let available = usize::try_from(produced).map_or(out.len(), |p| p.min(out.len()));
        if distance > available {
            return Err(DecompressError::DistanceTooFar {
                offset,
                distance,
                available,
            }
            .into_io());
        }
        // Copied in pieces no longer than the distance: each piece's source is written.
        let mut from = out.len() - distance;
        let mut left = len;
        while left > 0 {
            let k = left.min(distance);
            out.extend_from_within(from..from + k);
            from += k;
            left -= k;
        }
    }
    Ok(false)
}

/// A canonical Huffman code: a lookup table for codes up to [`FAST_BITS`] long, and the
/// counts and symbols (in code order) for the longer ones.
#[derive(Debug, Clone)]
struct Huffman {
    /// Indexed by the next `FAST_BITS` bits: `symbol << 4 | length`, or 0 (a longer code).
    fast: Vec<u16>,
    counts: [u16; MAX_CODE_LEN + 1],
    symbols: Vec<u16>,
}

impl Huffman {
    /// The code given each symbol's length (0: unused). An incomplete code is accepted (a
    /// bit string it does not assign is an error when met); an oversubscribed one is not.
    fn new(lengths: &[u8]) -> Result<Huffman, &'static str> {
        let mut counts = [0u16; MAX_CODE_LEN + 1];
        for &l in lengths {
            if let Some(c) = counts.get_mut(usize::from(l)) {
                *c += 1;
            }
        }
        let mut left: i32 = 1;
        for &c in counts.iter().skip(1) {
            left = (left << 1) - i32::from(c);
            if left < 0 {
                return Err("oversubscribed code");
            }
        }
        // Where each length's symbols start in code order.
        let mut next = [0u16; MAX_CODE_LEN + 2];
        for len in 1..=MAX_CODE_LEN {
            let start = next.get(len).copied().unwrap_or(0);
            let count = counts.get(len).copied().unwrap_or(0);
            if let Some(n) = next.get_mut(len + 1) {
                *n = start + count;
            }
        }
        let used = next.get(MAX_CODE_LEN + 1).copied().unwrap_or(0);
        let mut symbols = vec![0u16; usize::from(used)];
        for (sym, &l) in (0u16..).zip(lengths) {
            if l == 0 {
                continue;
            }
            if let Some(at) = next.get_mut(usize::from(l)) {
                if let Some(slot) = symbols.get_mut(usize::from(*at)) {
                    *slot = sym;
                }
                *at += 1;
            }
        }
        let mut fast = vec![0u16; 1 << FAST_BITS];
        let (mut code, mut index) = (0u32, 0usize);
        for len in 1..=FAST_BITS {
            for _ in 0..counts.get(len as usize).copied().unwrap_or(0) {
                let sym = symbols.get(index).copied().unwrap_or(0);
                let entry = (sym << 4) | len as u16;
                let mut i = (code.reverse_bits() >> (32 - len)) as usize;
                while let Some(slot) = fast.get_mut(i) {
                    *slot = entry;
                    i += 1 << len;
                }
                code += 1;
                index += 1;
            }
            code <<= 1;
        }
        Ok(Huffman {
            fast,
            counts,
            symbols,
        })
    }
}

/// The fixed literal/length and distance codes (RFC 1951 3.2.6). Distance codes 30 and 31
/// exist in the code and are refused when met.
fn fixed_tables() -> Box<(Huffman, Huffman)> {
    let mut lit = [8u8; 288];
    for (sym, l) in lit.iter_mut().enumerate() {
        *l = match sym {
            0..=143 => 8,
            144..=255 => 9,
            256..=279 => 7,
            _ => 8,
        };
    }
    let empty = || Huffman {
        fast: vec![0; 1 << FAST_BITS],
        counts: [0; MAX_CODE_LEN + 1],
        symbols: Vec::new(),
    };
    // Both codes are complete, so neither can fail.
    Box::new((
        Huffman::new(&lit).unwrap_or_else(|_| empty()),
        Huffman::new(&[5u8; 32]).unwrap_or_else(|_| empty()),
    ))
}

/// The compressed input, read bits first (least significant first), as deflate packs them.
#[derive(Debug)]
struct Bits<R> {
    input: R,
    /// Bits read from the input and not yet used, the next in the lowest bit.
    buf: u64,
    n: u32,
    /// Bytes taken from the input.
    consumed: u64,
}

impl<R: BufRead> Bits<R> {
    /// The offset of the byte holding the next bit.
    fn offset(&self) -> u64 {
        self.consumed - u64::from(self.n.div_ceil(8))
    }

    fn truncated(&self) -> io::Error {
        DecompressError::Truncated {
            format: Compression::Gzip,
            offset: self.consumed,
        }
        .into_io()
    }

    /// The input's next bytes (none at its end), retrying when interrupted.
    fn fill_input(input: &mut R) -> io::Result<&[u8]> {
        loop {
            match input.fill_buf() {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
                Ok(_) => break,
            }
        }
        input.fill_buf()
    }

    /// Tops the bit buffer up to at least 57 bits, or to the input's end.
    fn refill(&mut self) -> io::Result<()> {
        while self.n <= 56 {
            let room = ((64 - self.n) / 8) as usize;
            let avail = Self::fill_input(&mut self.input)?;
            if let Some(word) = avail.first_chunk::<8>() {
                // Eight bytes at once, only the whole ones that fit kept.
                let n = self.n + 8 * room as u32;
                let kept = if n >= 64 { u64::MAX } else { (1u64 << n) - 1 };
                self.buf = (self.buf | (u64::from_le_bytes(*word) << self.n)) & kept;
                self.n = n;
                self.input.consume(room);
                self.consumed += room as u64;
                continue;
            }
            if avail.is_empty() {
                break;
            }
            let k = avail.len().min(room);
            let mut buf = self.buf;
            let mut n = self.n;
            for &b in avail.iter().take(k) {
                buf |= u64::from(b) << n;
                n += 8;
            }
            self.input.consume(k);
            self.buf = buf;
            self.n = n;
            self.consumed += k as u64;
        }
        Ok(())
    }

    /// The next `n` bits (at most 32).
    fn bits(&mut self, n: u32) -> io::Result<u32> {
        if self.n < n {
            self.refill()?;
            if self.n < n {
                return Err(self.truncated());
            }
        }
        let v = (self.buf & ((1u64 << n) - 1)) as u32;
        self.buf >>= n;
        self.n -= n;
        Ok(v)
    }

    /// The next byte (the reader being at a byte boundary).
    fn byte(&mut self) -> io::Result<u8> {
        Ok(self.bits(8)? as u8)
    }

    /// Skips to the next byte boundary.
    fn align(&mut self) {
        let drop = self.n % 8;
        self.buf >>= drop;
        self.n -= drop;
    }

    /// Whether the input has ended (the reader being at a byte boundary).
    fn at_end(&mut self) -> io::Result<bool> {
        Ok(self.n == 0 && Self::fill_input(&mut self.input)?.is_empty())
    }

    /// Up to `n` bytes copied from the (byte-aligned) input onto `out`; at least one when
    /// `n > 0`, else an error.
    fn copy_aligned(&mut self, out: &mut Vec<u8>, n: usize) -> io::Result<usize> {
        let mut got = 0;
        while got < n && self.n >= 8 {
            out.push(self.byte()?);
            got += 1;
        }
        if got < n {
            let avail = Self::fill_input(&mut self.input)?;
            if avail.is_empty() {
                return Err(self.truncated());
            }
            let k = avail.len().min(n - got);
            out.extend_from_slice(avail.get(..k).unwrap_or_default());
            self.input.consume(k);
            self.consumed += k as u64;
            got += k;
        }
        Ok(got)
    }

    /// The next symbol of `code`.
    fn decode(&mut self, code: &Huffman, what: &'static str) -> io::Result<u16> {
        if self.n < MAX_CODE_LEN as u32 {
            self.refill()?;
        }
        let entry = code
            .fast
            .get((self.buf & FAST_MASK) as usize)
            .copied()
            .unwrap_or(0);
        let len = u32::from(entry & 15);
        if len != 0 {
            if len > self.n {
                return Err(self.truncated());
            }
            self.buf >>= len;
            self.n -= len;
            return Ok(entry >> 4);
        }
        // Longer than FAST_BITS (or unassigned): canonical decoding, one bit at a time.
        let (mut code_so_far, mut first, mut index) = (0i32, 0i32, 0i32);
        for len in 1..=MAX_CODE_LEN as u32 {
            if len > self.n {
                return Err(self.truncated());
            }
            code_so_far |= ((self.buf >> (len - 1)) & 1) as i32;
            let count = i32::from(code.counts.get(len as usize).copied().unwrap_or(0));
            if code_so_far - first < count {
                let at = usize::try_from(index + code_so_far - first).unwrap_or(usize::MAX);
                if let Some(&sym) = code.symbols.get(at) {
                    self.buf >>= len;
                    self.n -= len;
                    return Ok(sym);
                }
                break;
            }
            index += count;
            first = (first + count) << 1;
            code_so_far <<= 1;
        }
        Err(DecompressError::BadSymbol {
            offset: self.offset(),
            what,
        }
        .into_io())
    }

    /// A dynamic block's literal/length and distance codes (RFC 1951 3.2.7).
    fn dynamic_tables(&mut self) -> io::Result<(Huffman, Huffman)> {
        let offset = self.offset();
        let bad = |what| DecompressError::HuffmanCodes { offset, what }.into_io();
        let hlit = self.bits(5)? as usize + 257;
        let hdist = self.bits(5)? as usize + 1;
        let hclen = self.bits(4)? as usize + 4;
        if hlit > 286 || hdist > 30 {
            return Err(bad("more than 286 length or 30 distance codes"));
        }
        let mut cl = [0u8; 19];
        for &i in CODE_LENGTH_ORDER.iter().take(hclen) {
            let l = self.bits(3)? as u8;
            if let Some(slot) = cl.get_mut(i) {
                *slot = l;
            }
        }
        let cl = Huffman::new(&cl).map_err(bad)?;
        let total = hlit + hdist;
        let mut lengths = [0u8; 286 + 30];
        let mut i = 0;
        while i < total {
            let sym = self.decode(&cl, "code length")?;
            let (value, repeat) = match sym {
                0..=15 => (sym as u8, 1),
                16 => {
                    let prev = i
                        .checked_sub(1)
                        .and_then(|p| lengths.get(p))
                        .copied()
                        .ok_or_else(|| bad("repeat with no length before it"))?;
                    (prev, 3 + self.bits(2)? as usize)
                }
                17 => (0, 3 + self.bits(3)? as usize),
                _ => (0, 11 + self.bits(7)? as usize),
            };
            let run = lengths
                .get_mut(i..i + repeat)
                .filter(|_| i + repeat <= total)
                .ok_or_else(|| bad("repeat past the last length"))?;
            run.fill(value);
            i += repeat;
        }
        if lengths.get(256).copied().unwrap_or(0) == 0 {
            return Err(bad("no end-of-block code"));
        }
        let lit = Huffman::new(lengths.get(..hlit).unwrap_or_default()).map_err(bad)?;
        let dist = Huffman::new(lengths.get(hlit..total).unwrap_or_default()).map_err(bad)?;
        Ok((lit, dist))
    }
}

/// The CRC-32 (IEEE, reflected, as gzip and `java.util.zip.CRC32`) tables, slicing by 8:
/// `CRC_TABLES[k][b]` is the CRC of byte `b` followed by `k` zero bytes.
const CRC_TABLES: [[u32; 256]; 8] = crc_tables();

// Evaluated at compile time: an index out of range would not compile.
#[allow(clippy::indexing_slicing)]
const fn crc_tables() -> [[u32; 256]; 8] {
    let mut t = [[0u32; 256]; 8];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                0xedb8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        t[0][i] = c;
        i += 1;
    }
    let mut k = 1;
    while k < 8 {
        let mut i = 0;
        while i < 256 {
            let prev = t[k - 1][i];
            t[k][i] = (prev >> 8) ^ t[0][(prev & 0xff) as usize];
            i += 1;
        }
        k += 1;
    }
    t
}

/// `crc` (of the bytes before) extended over `bytes`.
pub(super) fn crc32(crc: u32, bytes: &[u8]) -> u32 {
    let [t0, t1, t2, t3, t4, t5, t6, t7] = &CRC_TABLES;
    let at = |t: &[u32; 256], b: u8| t.get(usize::from(b)).copied().unwrap_or(0);
    let mut c = !crc;
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(chunk);
        let lo = u32::from_le_bytes([w[0], w[1], w[2], w[3]]) ^ c;
        let [a, b, cc, d] = lo.to_le_bytes();
        let [e, f, g, h] = [w[4], w[5], w[6], w[7]];
        c = at(t7, a)
            ^ at(t6, b)
            ^ at(t5, cc)
            ^ at(t4, d)
            ^ at(t3, e)
            ^ at(t2, f)
            ^ at(t1, g)
            ^ at(t0, h);
    }
    for &b in chunks.remainder() {
        c = at(t0, (c as u8) ^ b) ^ (c >> 8);
    }
    !c
}
