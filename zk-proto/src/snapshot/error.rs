//! [`SnapshotError`]: why a snapshot cannot be read (further), and where; [`DecompressError`]:
//! why a compressed one's bytes cannot be recovered.

use super::Compression;
use crate::DecodeError;

/// Why a snapshot cannot be read (further). Every variant says where: `offset` counts bytes
/// from the start of the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SnapshotError {
    /// The bytes do not start with `ZKSN`: not a snapshot (a log starts with `ZKLG`), or a
    /// compressed one read without its decoder (gzip starts with `1f 8b`, snappy-java with
    /// `82 'SNAPPY'`: see [`Decompressed`]).
    ///
    /// [`Decompressed`]: super::Decompressed
    #[error(
        "not a snapshot (or not decompressed): magic {found:#010x} at offset 0 (expected \"ZKSN\")"
    )]
    BadMagic {
        /// The first four bytes, big-endian.
        found: i32,
    },
    /// The header's version is not 2.
    #[error("snapshot version {found} at offset 4 (expected 2)")]
    BadVersion {
        /// The version read.
        found: i32,
    },
    /// A field does not decode (the file is cut short, or a length is out of range).
    #[error("at offset {offset}: {source}")]
    Decode {
        /// Where the record being read starts.
        offset: usize,
        /// What is wrong, with offsets from `offset`.
        source: DecodeError,
    },
    /// A seal's checksum does not match the bytes before it: the file is corrupt.
    #[error("seal at offset {offset}: checksum {stored:#x} stored, {computed:#x} computed")]
    Checksum {
        /// Where the seal starts.
        offset: usize,
        /// The checksum in the file.
        stored: i64,
        /// The Adler-32 of every byte before the seal.
        computed: u32,
    },
    /// A seal is not followed by the string `"/"`.
    #[error("seal at offset {offset} is not followed by \"/\"")]
    BadSeal {
        /// Where the seal starts.
        offset: usize,
    },
    /// A node's parent is not in the snapshot before it.
    #[error("node {path:?} at offset {offset} comes before its parent")]
    Orphan {
        /// The node's path.
        path: String,
        /// Where its record starts.
        offset: usize,
    },
    /// The reader given to [`SnapshotStream`] failed (other than by ending).
    ///
    /// [`SnapshotStream`]: super::SnapshotStream
    #[error("reading at offset {offset}: {kind}: {message}")]
    Io {
        /// Where.
        offset: usize,
        /// The IO error's kind.
        kind: std::io::ErrorKind,
        /// Its message.
        message: String,
    },
    /// A string or buffer in a [`SnapshotStream`] announces more than [`MAX_FIELD_LEN`] bytes.
    ///
    /// [`SnapshotStream`]: super::SnapshotStream
    /// [`MAX_FIELD_LEN`]: super::MAX_FIELD_LEN
    #[error("{at}: length {len} at offset {offset} is negative or over the limit")]
    TooLong {
        /// The field.
        at: &'static str,
        /// Where its length starts.
        offset: usize,
        /// The length read.
        len: i32,
    },
    /// The decompressor under a [`SnapshotStream`] found the compressed file malformed:
    /// `offset` is where the snapshot's (decompressed) bytes stopped, the source says where
    /// in the compressed file.
    ///
    /// [`SnapshotStream`]: super::SnapshotStream
    #[error("at decompressed offset {offset}: {source}")]
    Decompress {
        /// Decompressed bytes read before the failure.
        offset: usize,
        /// What is wrong with the compressed bytes, and where.
        source: DecompressError,
    },
    /// Bytes after the last seal that are not a digest or a last zxid with their seal.
    #[error("{extra} unexpected bytes after the seal ending at offset {offset}")]
    TrailingBytes {
        /// Where the last seal ends.
        offset: usize,
        /// How many bytes follow.
        extra: usize,
    },
}

/// Why a compressed snapshot's bytes cannot be recovered ([`GzipDecoder`], [`SnappyDecoder`]).
/// Every variant says where: `offset` counts bytes of the compressed file, from its start,
/// at (or just after) the fault. The file is corrupt or cut short: read another snapshot (or
/// the logs alone).
///
/// It reaches a reader as the payload of an [`std::io::Error`] (kind `InvalidData`, or
/// `UnexpectedEof` for [`DecompressError::Truncated`]); [`SnapshotStream`] hands it back as
/// [`SnapshotError::Decompress`].
///
/// [`GzipDecoder`]: super::GzipDecoder
/// [`SnappyDecoder`]: super::SnappyDecoder
/// [`SnapshotStream`]: super::SnapshotStream
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecompressError {
    /// The compressed bytes end before the stream does (an empty file included): the file
    /// was cut short, as by a crash while the server wrote it.
    #[error("{format}: input ends at compressed offset {offset} before the stream does")]
    Truncated {
        /// The compression method.
        format: Compression,
        /// Bytes read.
        offset: u64,
    },
    /// A gzip member header is wrong: not `1f 8b`, a method other than deflate (8), or a
    /// reserved flag set; also what follows a member if it is not another member.
    #[error("gzip: bad member header at compressed offset {offset}: {what}")]
    GzipHeader {
        /// Where the header starts.
        offset: u64,
        /// What is wrong.
        what: &'static str,
    },
    /// A deflate block of type 3 (reserved).
    #[error("gzip: deflate block of reserved type 3 at compressed offset {offset}")]
    BlockType {
        /// Where the block header is.
        offset: u64,
    },
    /// A stored block's length is not the complement of the copy that follows it.
    #[error("gzip: stored block at compressed offset {offset}: LEN {len:#06x}, NLEN {nlen:#06x}")]
    StoredLength {
        /// Where the lengths are.
        offset: u64,
        /// `LEN`.
        len: u16,
        /// `NLEN`, which should be `!LEN`.
        nlen: u16,
    },
    /// A dynamic block's Huffman code lengths are wrong (oversubscribed, a repeat with
    /// nothing before it or past the end, no end-of-block code, counts out of range).
    #[error("gzip: bad Huffman code lengths at compressed offset {offset}: {what}")]
    HuffmanCodes {
        /// Where it was seen.
        offset: u64,
        /// What is wrong.
        what: &'static str,
    },
    /// The compressed data holds a code no table assigns, or a reserved length or
    /// distance symbol.
    #[error("gzip: invalid {what} code at compressed offset {offset}")]
    BadSymbol {
        /// Where it was seen.
        offset: u64,
        /// Which code (`literal/length`, `distance`).
        what: &'static str,
    },
    /// A back reference reaches before the start of the output (or outside the 32 KiB
    /// window deflate allows).
    #[error(
        "gzip: distance {distance} at compressed offset {offset} reaches back past the {available} bytes available"
    )]
    DistanceTooFar {
        /// Where it was seen.
        offset: u64,
        /// The distance.
        distance: usize,
        /// How far back the output reaches.
        available: usize,
    },
    /// A gzip member's CRC-32 does not match its decompressed bytes.
    #[error(
        "gzip: CRC-32 {stored:#010x} stored at compressed offset {offset}, {computed:#010x} computed"
    )]
    Crc {
        /// Where the trailer is.
        offset: u64,
        /// The CRC-32 in the trailer.
        stored: u32,
        /// The CRC-32 of the bytes decompressed.
        computed: u32,
    },
    /// A gzip member's ISIZE does not match its decompressed length (mod 2^32).
    #[error("gzip: ISIZE {stored} stored at compressed offset {offset}, {computed} decompressed")]
    Size {
        /// Where the trailer's size is.
        offset: u64,
        /// The ISIZE in the trailer.
        stored: u32,
        /// The decompressed length, mod 2^32.
        computed: u32,
    },
    /// The snappy-java stream header is wrong: not `82 'SNAPPY' 00`, or a version below 1.
    #[error("snappy: bad stream header at compressed offset {offset}: {what}")]
    SnappyHeader {
        /// Where the header starts.
        offset: u64,
        /// What is wrong.
        what: &'static str,
    },
    /// A snappy block's compressed or decompressed length is negative or over the limit
    /// ([`MAX_SNAPPY_BLOCK`]): nothing is allocated for it.
    ///
    /// [`MAX_SNAPPY_BLOCK`]: super::MAX_SNAPPY_BLOCK
    #[error("snappy: {what} length {len} at compressed offset {offset} is negative or over {max}")]
    TooLong {
        /// Where the length is.
        offset: u64,
        /// Which length (`block`, `decompressed`).
        what: &'static str,
        /// The length read.
        len: i64,
        /// The limit.
        max: usize,
    },
    /// A snappy block does not decode: a literal or copy past its end, a copy offset of 0
    /// or before the block's start, more or fewer bytes than its header announces.
    #[error("snappy: block at compressed offset {offset}, byte {at} of it: {what}")]
    SnappyBlock {
        /// Where the block (after its 4-byte length) starts.
        offset: u64,
        /// Where in the block.
        at: usize,
        /// What is wrong.
        what: &'static str,
    },
}

impl DecompressError {
    /// The [`std::io::Error`] that carries it through a reader.
    pub(super) fn into_io(self) -> std::io::Error {
        let kind = match self {
            DecompressError::Truncated { .. } => std::io::ErrorKind::UnexpectedEof,
            _ => std::io::ErrorKind::InvalidData,
        };
        std::io::Error::new(kind, self)
    }

    /// The error an [`std::io::Error`] carries, if it is one.
    pub fn from_io(e: &std::io::Error) -> Option<&DecompressError> {
        e.get_ref()?.downcast_ref::<DecompressError>()
    }
}
