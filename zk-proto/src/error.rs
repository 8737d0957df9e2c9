//! The errors of decoding, encoding and framing.

/// Why a byte string is not a valid record.
///
/// Every variant says where the problem is: `at` names the record field being read (for
/// example `"Stat.czxid"`), `offset` is the byte offset from the start of the decoded input.
/// Decoding never panics and never allocates by a length it has not checked against the bytes
/// that are actually there; it returns one of these instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The input ended inside a value. A frame was cut short, or the record is not the one the
    /// reader expected.
    #[error("{at}: needs {needed} more bytes at offset {offset}")]
    UnexpectedEnd {
        /// The field being read.
        at: &'static str,
        /// Where it starts.
        offset: usize,
        /// How many bytes were missing.
        needed: usize,
    },
    /// A length prefix (of a string, buffer or vector) is negative (or -1 where null is not
    /// allowed) or larger than the bytes that follow.
    #[error("{at}: length {len} at offset {offset} is negative or over the {max} bytes left")]
    BadLength {
        /// The field being read.
        at: &'static str,
        /// Where the length prefix starts.
        offset: usize,
        /// The length read.
        len: i32,
        /// The bytes left after the prefix.
        max: usize,
    },
    /// An integer that must be one of a fixed set of codes (an opcode, event type, keeper
    /// state, create mode, ...) has a value outside it.
    #[error("{at}: unknown code {value} at offset {offset}")]
    UnknownCode {
        /// The field being read.
        at: &'static str,
        /// Where it starts.
        offset: usize,
        /// The value read.
        value: i32,
    },
    /// A value is well formed but not allowed here (a boolean byte other than 0 or 1, a
    /// multi-op header whose markers are not the ones ZooKeeper writes).
    #[error("{at}: value {value} at offset {offset} is not allowed here")]
    BadValue {
        /// The field being read.
        at: &'static str,
        /// Where it starts.
        offset: usize,
        /// The value read.
        value: i64,
    },
    /// A string is not valid UTF-8.
    #[error("{at}: string at offset {offset} is not valid UTF-8")]
    BadUtf8 {
        /// The field being read.
        at: &'static str,
        /// Where the string's bytes start.
        offset: usize,
    },
    /// Bytes were left after a record that must use its whole frame.
    #[error("{record}: {extra} trailing bytes")]
    TrailingBytes {
        /// The record that was decoded.
        record: &'static str,
        /// How many bytes were left.
        extra: usize,
    },
}

/// Why a value could not be encoded. Nothing is written to the wire when this is returned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EncodeError {
    /// A string, buffer or vector is longer than a jute length prefix (`i32`) can say.
    #[error("{what} has length {len}, over the jute limit of {}", i32::MAX)]
    LengthOverflow {
        /// What was being encoded.
        what: &'static str,
        /// Its length.
        len: usize,
    },
    /// The whole frame would be larger than the limit given to the encoder (ZooKeeper's
    /// `jute.maxbuffer`, about 1 MiB by default). Split the data or raise both limits.
    #[error("frame of {len} bytes is over the limit of {max} bytes")]
    FrameTooLarge {
        /// The frame's length, without its 4-byte prefix.
        len: usize,
        /// The limit.
        max: usize,
    },
}

/// Why a stream of bytes cannot be split into frames. The stream is corrupt from here on:
/// close the connection.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// The 4-byte length prefix is negative.
    #[error("frame length {len} is negative")]
    NegativeLength {
        /// The length read.
        len: i32,
    },
    /// The 4-byte length prefix announces more than the configured maximum.
    #[error("frame length {len} is over the limit of {max} bytes")]
    TooLarge {
        /// The length read.
        len: usize,
        /// The limit.
        max: usize,
    },
}
