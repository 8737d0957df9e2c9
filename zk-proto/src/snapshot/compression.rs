//! [`Compression`], the methods of `zookeeper.snapshot.compression.method`, and
//! [`Decompressed`], a snapshot file's bytes read through the decoder its name asks for.
//!
//! - The method is in the file name (`snapshot.<zxid>.gz`, `.snappy`), as ZooKeeper's
//!   `SnapStream` reads it; the bytes are not sniffed.
//! - Each decoder is an [`std::io::BufRead`] over the compressed [`std::io::BufRead`], so a
//!   [`SnapshotStream`] reads through it unchanged and its seals check the decompressed
//!   bytes.
//!
//! [`SnapshotStream`]: super::SnapshotStream

use std::io::{BufRead, Read};

use super::{DecompressError, GzipDecoder, SnappyDecoder};

/// How a snapshot file is compressed (ZooKeeper 3.8's `SnapStream.StreamMode`, less the
/// uncompressed `CHECKED`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Compression {
    /// `gz`: Java's `GZIPOutputStream`, one gzip member (RFC 1952) over deflate (RFC 1951).
    Gzip,
    /// `snappy`: xerial snappy-java's `SnappyOutputStream`, a 16-byte header then blocks of
    /// raw snappy, each after its 4-byte length.
    Snappy,
}

impl Compression {
    /// The method a file name's suffix names (`"gz"`, `"snappy"`, in any case, as
    /// `SnapStream.StreamMode.fromString` reads it); `None` for any other.
    ///
    /// ```
    /// use zk_proto::snapshot::Compression;
    /// assert_eq!(Compression::from_suffix("gz"), Some(Compression::Gzip));
    /// assert_eq!(Compression::from_suffix("SNAPPY"), Some(Compression::Snappy));
    /// assert_eq!(Compression::from_suffix("zst"), None);
    /// ```
    pub fn from_suffix(suffix: &str) -> Option<Compression> {
        if suffix.eq_ignore_ascii_case("gz") {
            Some(Compression::Gzip)
        } else if suffix.eq_ignore_ascii_case("snappy") {
            Some(Compression::Snappy)
        } else {
            None
        }
    }

    /// The file name suffix ZooKeeper writes, without its dot.
    pub fn suffix(self) -> &'static str {
        match self {
            Compression::Gzip => "gz",
            Compression::Snappy => "snappy",
        }
    }
}

impl std::fmt::Display for Compression {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Compression::Gzip => "gzip",
            Compression::Snappy => "snappy",
        })
    }
}

/// A snapshot file's bytes, decompressed as its method says: hand it to
/// [`SnapshotStream::new`](super::SnapshotStream::new).
///
/// # Examples
///
/// ```
/// use zk_proto::snapshot::{Decompressed, SnapshotStream, StatPersisted, encode_snapshot};
///
/// let s = StatPersisted::default();
/// let bytes = encode_snapshot(&[], &[("", &s)]);
/// // No method: the bytes as they are.
/// let mut snap = SnapshotStream::new(Decompressed::new(&bytes[..], None)).unwrap();
/// assert_eq!(snap.next_node().unwrap().unwrap().path, "");
/// ```
#[derive(Debug)]
pub enum Decompressed<R> {
    /// Uncompressed.
    Plain(R),
    /// Through a [`GzipDecoder`].
    Gzip(GzipDecoder<R>),
    /// Through a [`SnappyDecoder`].
    Snappy(SnappyDecoder<R>),
}

impl<R: BufRead> Decompressed<R> {
    /// Reads `input` as `method` says (`None`: uncompressed).
    pub fn new(input: R, method: Option<Compression>) -> Self {
        match method {
            None => Decompressed::Plain(input),
            Some(Compression::Gzip) => Decompressed::Gzip(GzipDecoder::new(input)),
            Some(Compression::Snappy) => Decompressed::Snappy(SnappyDecoder::new(input)),
        }
    }

    /// Compressed bytes read so far (`None` when uncompressed).
    pub fn compressed_offset(&self) -> Option<u64> {
        match self {
            Decompressed::Plain(_) => None,
            Decompressed::Gzip(d) => Some(d.compressed_offset()),
            Decompressed::Snappy(d) => Some(d.compressed_offset()),
        }
    }
}

impl<R: BufRead> Read for Decompressed<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Decompressed::Plain(r) => r.read(buf),
            Decompressed::Gzip(d) => d.read(buf),
            Decompressed::Snappy(d) => d.read(buf),
        }
    }
}

impl<R: BufRead> BufRead for Decompressed<R> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        match self {
            Decompressed::Plain(r) => r.fill_buf(),
            Decompressed::Gzip(d) => d.fill_buf(),
            Decompressed::Snappy(d) => d.fill_buf(),
        }
    }

    fn consume(&mut self, amt: usize) {
        match self {
            Decompressed::Plain(r) => r.consume(amt),
            Decompressed::Gzip(d) => d.consume(amt),
            Decompressed::Snappy(d) => d.consume(amt),
        }
    }
}

/// Copies from `src.fill_buf()` into `buf`: the `Read` of a decoder that is a `BufRead`.
pub(super) fn read_via_fill<B: BufRead>(src: &mut B, buf: &mut [u8]) -> std::io::Result<usize> {
    let avail = src.fill_buf()?;
    let n = avail.len().min(buf.len());
    if let (Some(dst), Some(from)) = (buf.get_mut(..n), avail.get(..n)) {
        dst.copy_from_slice(from);
    }
    src.consume(n);
    Ok(n)
}

/// A decoder's first failure, given again by every later read (the decoder's state is lost
/// with it).
#[derive(Debug, Default)]
pub(super) struct Sticky(Option<Failure>);

#[derive(Debug)]
enum Failure {
    Decompress(DecompressError),
    Io(std::io::ErrorKind, String),
}

impl Sticky {
    /// The failure recorded, if any, as an error to return.
    pub(super) fn check(&self) -> std::io::Result<()> {
        match &self.0 {
            None => Ok(()),
            Some(Failure::Decompress(e)) => Err(e.clone().into_io()),
            Some(Failure::Io(kind, message)) => Err(std::io::Error::new(*kind, message.clone())),
        }
    }

    /// Records `e` (the first failure is kept) and hands it back.
    pub(super) fn record(&mut self, e: std::io::Error) -> std::io::Error {
        if self.0.is_none() {
            self.0 = Some(match DecompressError::from_io(&e) {
                Some(d) => Failure::Decompress(d.clone()),
                None => Failure::Io(e.kind(), e.to_string()),
            });
        }
        e
    }
}
