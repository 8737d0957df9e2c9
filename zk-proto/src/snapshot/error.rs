//! [`SnapshotError`]: why a snapshot cannot be read (further), and where.

use crate::DecodeError;

/// Why a snapshot cannot be read (further). Every variant says where: `offset` counts bytes
/// from the start of the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SnapshotError {
    /// The file does not start with `ZKSN`: not an uncompressed snapshot (a gzip one starts
    /// with `1f 8b`, a log with `ZKLG`).
    #[error("not an uncompressed snapshot: magic {found:#010x} at offset 0 (expected \"ZKSN\")")]
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
    /// Bytes after the last seal that are not a digest or a last zxid with their seal.
    #[error("{extra} unexpected bytes after the seal ending at offset {offset}")]
    TrailingBytes {
        /// Where the last seal ends.
        offset: usize,
        /// How many bytes follow.
        extra: usize,
    },
}
