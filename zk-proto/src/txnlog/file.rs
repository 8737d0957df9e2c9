//! A log file: [`FileHeader`], the records ([`TxnLogReader`], [`encode_record`]) and the
//! zero padding that ends it.

use bytes::{BufMut, BytesMut};

use super::{TxnEntry, TxnLogError, adler32};
use crate::codec::{len_prefix, record};
use crate::{Decode, Encode, EncodeError, Reader};

/// `"ZKLG"`, the first four bytes of every transaction log.
pub const MAGIC: i32 = i32::from_be_bytes(*b"ZKLG");

/// The only log version ZooKeeper writes (the `version-2` of the directory's name).
pub const VERSION: i32 = 2;

/// The end-of-record byte, `'B'`.
const END_OF_RECORD: u8 = b'B';

/// A record's checksum and length.
const RECORD_HEAD_LEN: usize = 12;

record! {
    /// The first 16 bytes of a log file (`org.apache.zookeeper.server.persistence.FileHeader`).
    FileHeader "FileHeader" {
        /// [`MAGIC`].
        magic: i32 = "magic",
        /// [`VERSION`].
        version: i32 = "version",
        /// The database id; ZooKeeper writes 0.
        dbid: i64 = "dbid",
    }
}

impl FileHeader {
    /// A transaction log's header: [`MAGIC`], [`VERSION`] and `dbid`.
    pub fn new(dbid: i64) -> Self {
        FileHeader {
            magic: MAGIC,
            version: VERSION,
            dbid,
        }
    }
}

/// Reads a transaction log file's bytes: the header at once, then one [`TxnEntry`] per record
/// as an iterator.
///
/// Each record's Adler-32 and its `'B'` terminator are checked before it is decoded. The
/// iterator ends (`None`) at the zero padding or at the end of the bytes, and after the first
/// error, which it yields once. [`TxnLogReader::offset`] is then where the log ends or the bad
/// record starts.
///
/// # Examples
///
/// ```
/// use zk_proto::txnlog::{TxnLogError, TxnLogReader};
///
/// // A header and nothing else (a file the server has just created, before padding).
/// let empty = [b'Z', b'K', b'L', b'G', 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0];
/// let mut log = TxnLogReader::new(&empty).unwrap();
/// assert!(log.next().is_none());
/// assert_eq!(log.offset(), 16);
///
/// // A snapshot is not a log.
/// assert!(matches!(TxnLogReader::new(b"ZKSN\0\0\0\x02"), Err(TxnLogError::BadMagic { .. })));
/// ```
#[derive(Debug, Clone)]
pub struct TxnLogReader<'a> {
    bytes: &'a [u8],
    header: FileHeader,
    offset: usize,
    done: bool,
}

/// What one step of the reader found.
enum Step {
    /// A record, and the bytes it took.
    Entry(TxnEntry, usize),
    /// The padding or the end of the bytes.
    End,
}

impl<'a> TxnLogReader<'a> {
    /// Reads and checks the file header.
    ///
    /// # Errors
    /// [`TxnLogError::BadMagic`] unless the bytes start with `ZKLG`,
    /// [`TxnLogError::BadVersion`] unless the version is 2, [`TxnLogError::Truncated`] if
    /// there are fewer than 16 bytes.
    pub fn new(bytes: &'a [u8]) -> Result<Self, TxnLogError> {
        let mut r = Reader::new(bytes);
        let truncated = |needed| TxnLogError::Truncated { offset: 0, needed };
        let magic = r.i32().map_err(|_| truncated(16 - bytes.len()))?;
        if magic != MAGIC {
            return Err(TxnLogError::BadMagic { found: magic });
        }
        let header =
            FileHeader::decode(&mut Reader::new(bytes)).map_err(|_| truncated(16 - bytes.len()))?;
        if header.version != VERSION {
            return Err(TxnLogError::BadVersion {
                found: header.version,
            });
        }
        Ok(TxnLogReader {
            bytes,
            header,
            offset: 16,
            done: false,
        })
    }

    /// The file header.
    pub fn header(&self) -> &FileHeader {
        &self.header
    }

    /// The offset of the next record; once the iterator has ended, where the log ends (the
    /// padding's start) or where the record that gave the error starts.
    pub fn offset(&self) -> usize {
        self.offset
    }

    fn step(rest: &[u8]) -> Result<Step, TxnLogError> {
        // Checksum and length both zero (or fewer bytes than that, all zero): the padding.
        if rest.iter().take(RECORD_HEAD_LEN).all(|&b| b == 0) {
            return match rest.iter().position(|&b| b != 0) {
                None => Ok(Step::End),
                Some(offset) => Err(TxnLogError::DataAfterPadding { end: 0, offset }),
            };
        }
        let truncated = |needed| TxnLogError::Truncated { offset: 0, needed };
        let mut r = Reader::new(rest);
        let short = |_| truncated(RECORD_HEAD_LEN - rest.len());
        let stored = r.i64().map_err(short)?;
        let len = r.i32().map_err(short)?;
        let n = match usize::try_from(len) {
            Ok(n) if n > 0 => n,
            _ => return Err(TxnLogError::BadLength { offset: 0, len }),
        };
        let bytes = r.take(n).map_err(|_| truncated(n + 1 - r.remaining()))?;
        let found = match r.take(1).map_err(|_| truncated(1))? {
            [b] => *b,
            _ => return Err(truncated(1)),
        };
        if found != END_OF_RECORD {
            return Err(TxnLogError::BadTerminator { offset: 0, found });
        }
        let computed = adler32(bytes);
        if stored != i64::from(computed) {
            return Err(TxnLogError::Checksum {
                offset: 0,
                stored,
                computed,
            });
        }
        let entry = TxnEntry::decode(bytes).map_err(|e| e.shifted(RECORD_HEAD_LEN))?;
        Ok(Step::Entry(entry, r.offset()))
    }
}

impl Iterator for TxnLogReader<'_> {
    type Item = Result<TxnEntry, TxnLogError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let rest = self.bytes.get(self.offset..).unwrap_or_default();
        match Self::step(rest) {
            Ok(Step::Entry(entry, used)) => {
                self.offset += used;
                Some(Ok(entry))
            }
            Ok(Step::End) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e.shifted(self.offset)))
            }
        }
    }
}

impl std::iter::FusedIterator for TxnLogReader<'_> {}

/// Appends one log record: the Adler-32 of the entry's bytes, their length, the bytes and
/// `'B'` (Java's `FileTxnLog.append`).
///
/// # Errors
/// [`EncodeError::LengthOverflow`] for an entry over `i32::MAX` bytes.
pub fn encode_record(entry: &TxnEntry, out: &mut BytesMut) -> Result<(), EncodeError> {
    let len = len_prefix("txnEntry", entry.encoded_len())?;
    let start = out.len();
    out.put_i64(0);
    out.put_i32(len);
    let body = out.len();
    entry.encode(out)?;
    let crc = adler32(out.get(body..).unwrap_or_default());
    if let Some(slot) = out.get_mut(start..start + 8) {
        slot.copy_from_slice(&i64::from(crc).to_be_bytes());
    }
    out.put_u8(END_OF_RECORD);
    Ok(())
}

/// Appends a log file: the header and one record per entry, without the zero padding a
/// server preallocates (a reader stops at the end of the bytes as at the padding).
///
/// # Errors
/// As [`encode_record`].
pub fn encode_log<'e>(
    header: &FileHeader,
    entries: impl IntoIterator<Item = &'e TxnEntry>,
    out: &mut BytesMut,
) -> Result<(), EncodeError> {
    header.encode(out)?;
    entries.into_iter().try_for_each(|e| encode_record(e, out))
}

/// The largest record [`TxnLogStream`] accepts: ZooKeeper refuses requests over
/// `jute.maxbuffer` (1 MiB by default); a multi of many ops may log a little more. A length
/// over this is [`TxnLogError::BadLength`], so a corrupt length allocates nothing.
pub const MAX_RECORD_LEN: usize = 64 << 20;

/// Reads a transaction log from any [`std::io::Read`], one record at a time: the same checks
/// and the same entries as [`TxnLogReader`], in the memory of the largest record, so a log of
/// any size streams.
///
/// It ends at the zero padding (a record head of zeros; the bytes after it are not read) or at
/// the end of the input, and after the first error, which it yields once.
///
/// # Examples
///
/// ```
/// use zk_proto::OpCode;
/// use zk_proto::txnlog::{DeleteTxn, FileHeader, TxnBody, TxnEntry, TxnHeader, TxnLogStream, encode_log};
///
/// let delete = TxnEntry {
///     header: TxnHeader { client_id: 7, cxid: 1, zxid: 2, time: 0, op: OpCode::Delete },
///     body: TxnBody::Delete(DeleteTxn { path: "/a".into() }),
///     digest: None,
/// };
/// let mut file = bytes::BytesMut::new();
/// encode_log(&FileHeader::new(0), [&delete], &mut file).unwrap();
/// file.resize(file.len() + 64, 0);
///
/// let mut log = TxnLogStream::new(&file[..]).unwrap();
/// assert_eq!(log.next().unwrap().unwrap(), delete);
/// assert!(log.next().is_none());
/// // Cut short: an error, not a panic.
/// let mut cut = TxnLogStream::new(&file[..30]).unwrap();
/// assert!(cut.next().unwrap().is_err());
/// ```
#[derive(Debug)]
pub struct TxnLogStream<R> {
    input: R,
    header: FileHeader,
    offset: usize,
    done: bool,
    buf: Vec<u8>,
}

/// Reads as many bytes as `buf` holds, or fewer at the end of the input: how many.
fn read_full(input: &mut impl std::io::Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while let Some(rest) = buf.get_mut(got..) {
        if rest.is_empty() {
            break;
        }
        match input.read(rest) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

fn io_error(offset: usize, e: &std::io::Error) -> TxnLogError {
    TxnLogError::Io {
        offset,
        kind: e.kind(),
        message: e.to_string(),
    }
}

impl<R: std::io::Read> TxnLogStream<R> {
    /// Reads and checks the file header.
    ///
    /// # Errors
    /// As [`TxnLogReader::new`], and [`TxnLogError::Io`] if the input fails.
    pub fn new(mut input: R) -> Result<Self, TxnLogError> {
        let mut head = [0u8; 16];
        let got = read_full(&mut input, &mut head).map_err(|e| io_error(0, &e))?;
        let head = head.get(..got).unwrap_or_default();
        let header = TxnLogReader::new(head)?.header().clone();
        Ok(TxnLogStream {
            input,
            header,
            offset: 16,
            done: false,
            buf: Vec::new(),
        })
    }

    /// The file header.
    pub fn header(&self) -> &FileHeader {
        &self.header
    }

    /// The offset of the next record; once ended, where the log ends or where the record
    /// that gave the error starts.
    pub fn offset(&self) -> usize {
        self.offset
    }

    fn step(&mut self) -> Result<Option<TxnEntry>, TxnLogError> {
        let mut head = [0u8; RECORD_HEAD_LEN];
        let got = read_full(&mut self.input, &mut head).map_err(|e| io_error(0, &e))?;
        let head = head.get(..got).unwrap_or_default();
        if head.iter().all(|&b| b == 0) {
            return Ok(None);
        }
        let truncated = |needed| TxnLogError::Truncated { offset: 0, needed };
        let mut r = Reader::new(head);
        let short = |_| truncated(RECORD_HEAD_LEN - got);
        let stored = r.i64().map_err(short)?;
        let len = r.i32().map_err(short)?;
        let n = match usize::try_from(len) {
            Ok(n) if n > 0 && n <= MAX_RECORD_LEN => n,
            _ => return Err(TxnLogError::BadLength { offset: 0, len }),
        };
        self.buf.clear();
        self.buf.resize(n + 1, 0);
        let got = read_full(&mut self.input, &mut self.buf).map_err(|e| io_error(0, &e))?;
        if got < n + 1 {
            return Err(truncated(n + 1 - got));
        }
        let (bytes, end) = self.buf.split_at(n);
        match end {
            [END_OF_RECORD] => {}
            [found, ..] => {
                return Err(TxnLogError::BadTerminator {
                    offset: 0,
                    found: *found,
                });
            }
            [] => return Err(truncated(1)),
        }
        let computed = adler32(bytes);
        if stored != i64::from(computed) {
            return Err(TxnLogError::Checksum {
                offset: 0,
                stored,
                computed,
            });
        }
        let entry = TxnEntry::decode(bytes).map_err(|e| e.shifted(RECORD_HEAD_LEN))?;
        self.offset += RECORD_HEAD_LEN + n + 1;
        Ok(Some(entry))
    }
}

impl<R: std::io::Read> Iterator for TxnLogStream<R> {
    type Item = Result<TxnEntry, TxnLogError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.step() {
            Ok(Some(entry)) => Some(Ok(entry)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e.shifted(self.offset)))
            }
        }
    }
}

impl<R: std::io::Read> std::iter::FusedIterator for TxnLogStream<R> {}
