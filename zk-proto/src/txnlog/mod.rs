//! ZooKeeper's transaction log (`dataDir/version-2/log.<zxid>`), read and written.
//!
//! Every change a server accepts is appended to its log before it is acknowledged: the
//! server's own record of who did what, in zxid order.
//!
//! # The format (ZooKeeper 3.8, `FileTxnLog.java`)
//!
//! ```text
//! file    = FileHeader record* zero-padding
//! FileHeader = magic "ZKLG" (i32), version 2 (i32), dbid (i64)
//! record  = checksum (i64: the Adler-32 of the bytes below)
//!           length (i32) bytes (TxnHeader, txn body, [TxnDigest])
//!           'B' (0x42, end of record)
//! ```
//!
//! The body's record is chosen by the header's type ([`TxnBody`]); a `multi`'s body is a
//! vector of `Txn{type, data}` whose data is again a body. A 3.6+ server with digests on (the
//! default) appends a [`TxnDigest`] after the body. The server preallocates the file in blocks
//! (64 MiB by default) filled with zeros, so a log ends at the first record whose checksum and
//! length are both zero. Java's `FileTxnLog` comment says the checksum covers the length and
//! the `'B'` too; the code (and this reader) checksums the record's bytes only.
//!
//! [`TxnLogReader`] checks the header, then yields one [`TxnEntry`] per record, verifying the
//! checksum and the terminator, and stops at the padding or at the end of the bytes. Decoding
//! is total: any bytes give entries and then the end or one [`TxnLogError`] saying where.
//! [`encode_log`] writes the same bytes back (without padding).
//!
//! Where this reader is stricter than Java's: Java takes a record cut short, or one whose
//! terminator is not `'B'`, as the end of the log (a write torn by a crash), ignores bytes after
//! the zero padding and after a record's digest, and reads a partial digest as none. Here these
//! are errors; [`TxnLogError::is_torn_tail`] says which ones Java would have taken for the end.
//!
//! [`TxnLogStream`] reads the same records from any [`std::io::Read`] one at a time, so a
//! log of any size is read in the memory of its largest record.
//!
//! Snapshots (`snapshot.<zxid>`, magic `ZKSN`) are read by [`crate::snapshot`]; logs are
//! purged with old snapshots, so history is the oldest snapshot kept, then the logs from its
//! zxid on.
//!
//! # Examples
//!
//! ```
//! use zk_proto::OpCode;
//! use zk_proto::txnlog::{
//!     CreateTxn, FileHeader, TxnBody, TxnEntry, TxnHeader, TxnLogReader, encode_log,
//! };
//!
//! let create = TxnEntry {
//!     header: TxnHeader { client_id: 7, cxid: 1, zxid: 2, time: 0, op: OpCode::Create },
//!     body: TxnBody::Create(CreateTxn {
//!         path: "/lock/n-0000000000".into(),
//!         ephemeral: true,
//!         ..CreateTxn::default()
//!     }),
//!     digest: None,
//! };
//! let mut file = bytes::BytesMut::new();
//! encode_log(&FileHeader::new(0), [&create], &mut file).unwrap();
//! file.resize(file.len() + 100, 0); // the preallocated padding
//!
//! let mut log = TxnLogReader::new(&file).unwrap();
//! let entry = log.next().unwrap().unwrap();
//! assert_eq!(entry.body.path(), Some("/lock/n-0000000000"));
//! assert_eq!(entry.ephemeral_owner(), Some(7));
//! assert!(log.next().is_none()); // the padding ends the log
//!
//! // One flipped bit: the checksum says so.
//! let mut bad = file.clone();
//! bad[30] ^= 1;
//! let err = TxnLogReader::new(&bad).unwrap().next().unwrap().unwrap_err();
//! assert!(err.to_string().contains("checksum"), "{err}");
//! ```

mod adler32;
mod file;
mod txn;

pub use adler32::{Adler32, adler32};
pub use file::{
    FileHeader, MAGIC, MAX_RECORD_LEN, TxnLogReader, TxnLogStream, VERSION, encode_log,
    encode_record,
};
pub use txn::{
    CheckVersionTxn, CloseSessionTxn, CreateContainerTxn, CreateSessionTxn, CreateTtlTxn,
    CreateTxn, CreateTxnV0, DeleteTxn, ErrorTxn, MultiTxn, SetAclTxn, SetDataTxn,
    SetMaxChildrenTxn, Txn, TxnBody, TxnDigest, TxnEntry, TxnHeader,
};

use crate::DecodeError;

/// Why a transaction log cannot be read further. Every variant says where: `offset` counts
/// bytes from the start of the file (or of the record, from [`TxnEntry::decode`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TxnLogError {
    /// The file does not start with `ZKLG`: not a transaction log (a snapshot starts with
    /// `ZKSN`).
    #[error("not a transaction log: magic {found:#010x} at offset 0 (expected \"ZKLG\")")]
    BadMagic {
        /// The first four bytes, big-endian.
        found: i32,
    },
    /// The header's version is not 2, the only one ZooKeeper writes.
    #[error("transaction log version {found} at offset 4 (expected 2)")]
    BadVersion {
        /// The version read.
        found: i32,
    },
    /// The bytes end inside the file header or a record: a file cut short, or a write torn by
    /// a crash if it is the last record.
    #[error("header or record at offset {offset} is cut short: {needed} more bytes needed")]
    Truncated {
        /// Where the header or record starts.
        offset: usize,
        /// How many bytes are missing.
        needed: usize,
    },
    /// A record's length is negative, or zero while the bytes around it are not padding.
    #[error("record at offset {offset} has length {len}")]
    BadLength {
        /// Where the record starts.
        offset: usize,
        /// The length read.
        len: i32,
    },
    /// A record's bytes do not match its checksum: the file is corrupt.
    #[error("record at offset {offset}: checksum {stored:#x} stored, {computed:#x} computed")]
    Checksum {
        /// Where the record starts.
        offset: usize,
        /// The checksum in the file.
        stored: i64,
        /// The Adler-32 of the record's bytes.
        computed: u32,
    },
    /// A record is not followed by `'B'`.
    #[error("record at offset {offset}: end-of-record byte {found:#04x} (expected 'B')")]
    BadTerminator {
        /// Where the record starts.
        offset: usize,
        /// The byte found instead.
        found: u8,
    },
    /// A type that no ZooKeeper 3.8 server logs in this place (a `check` outside a multi, a
    /// multi inside a multi, a read), or no type at all.
    #[error("unknown transaction type {value} at offset {offset}")]
    UnknownType {
        /// Where the type field is.
        offset: usize,
        /// The type read.
        value: i32,
    },
    /// A record's bytes are not the record its type announces.
    #[error("in the bytes from offset {offset}: {source}")]
    Decode {
        /// Where the bytes `source`'s own offsets count from start.
        offset: usize,
        /// What is wrong.
        source: DecodeError,
    },
    /// The reader given to [`TxnLogStream`] failed (other than by ending).
    #[error("reading at offset {offset}: {kind}: {message}")]
    Io {
        /// Where the record being read starts.
        offset: usize,
        /// The IO error's kind.
        kind: std::io::ErrorKind,
        /// Its message.
        message: String,
    },
    /// A byte other than zero after the zero padding that ends the log.
    #[error("non-zero byte at offset {offset} after the log's end at {end}")]
    DataAfterPadding {
        /// Where the padding (the log's end) starts.
        end: usize,
        /// The first non-zero byte after it.
        offset: usize,
    },
}

impl From<DecodeError> for TxnLogError {
    fn from(source: DecodeError) -> Self {
        TxnLogError::Decode { offset: 0, source }
    }
}

impl TxnLogError {
    /// The same error with its offsets counted from `base` bytes earlier.
    pub fn shifted(self, base: usize) -> Self {
        use TxnLogError::*;
        match self {
            Truncated { offset, needed } => Truncated {
                offset: offset + base,
                needed,
            },
            BadLength { offset, len } => BadLength {
                offset: offset + base,
                len,
            },
            Checksum {
                offset,
                stored,
                computed,
            } => Checksum {
                offset: offset + base,
                stored,
                computed,
            },
            BadTerminator { offset, found } => BadTerminator {
                offset: offset + base,
                found,
            },
            UnknownType { offset, value } => UnknownType {
                offset: offset + base,
                value,
            },
            Decode { offset, source } => Decode {
                offset: offset + base,
                source,
            },
            DataAfterPadding { end, offset } => DataAfterPadding {
                end: end + base,
                offset: offset + base,
            },
            Io {
                offset,
                kind,
                message,
            } => Io {
                offset: offset + base,
                kind,
                message,
            },
            e @ (BadMagic { .. } | BadVersion { .. }) => e,
        }
    }

    /// Whether Java's reader would have taken this for the end of the log rather than an
    /// error: a record cut short by the end of the bytes, or not followed by `'B'` (a write
    /// torn by a crash: the server had not acknowledged it). A caller that wants Java's
    /// behaviour stops there, and may check that it was the last record.
    pub fn is_torn_tail(&self) -> bool {
        matches!(
            self,
            TxnLogError::Truncated { .. } | TxnLogError::BadTerminator { .. }
        )
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use bytes::{BufMut, BytesMut};

    use super::*;
    use crate::records::{Acl, Id, Perms};
    use crate::{Encode, OpCode};

    fn header(zxid: i64, op: OpCode) -> TxnHeader {
        TxnHeader {
            client_id: 0x1000_0abc_0000_0001,
            cxid: 3,
            zxid,
            time: 1_700_000_000_000,
            op,
        }
    }

    fn entry(zxid: i64, body: TxnBody) -> TxnEntry {
        TxnEntry {
            header: header(zxid, body.op_code()),
            body,
            digest: Some(TxnDigest {
                version: 2,
                tree_digest: 0x0123_4567_89ab,
            }),
        }
    }

    fn open_acl() -> Vec<Acl> {
        vec![Acl {
            perms: Perms::ALL,
            id: Id::new("world", "anyone"),
        }]
    }

    fn every_body() -> Vec<TxnBody> {
        let create = CreateTxn {
            path: "/a/n-0000000001".into(),
            data: Some(b"x".to_vec().into()),
            acl: open_acl(),
            ephemeral: true,
            parent_cversion: 2,
        };
        vec![
            TxnBody::CreateSession(CreateSessionTxn { timeout: 30_000 }),
            TxnBody::Create(create.clone()),
            TxnBody::Create2(create.clone()),
            TxnBody::CreateTtl(CreateTtlTxn {
                path: "/t".into(),
                data: None,
                acl: open_acl(),
                parent_cversion: 1,
                ttl: 60_000,
            }),
            TxnBody::CreateContainer(CreateContainerTxn {
                path: "/c".into(),
                data: Some(Default::default()),
                acl: open_acl(),
                parent_cversion: 4,
            }),
            TxnBody::Delete(DeleteTxn { path: "/a".into() }),
            TxnBody::DeleteContainer(DeleteTxn { path: "/c".into() }),
            TxnBody::SetData(SetDataTxn {
                path: "/a".into(),
                data: Some(b"yz".to_vec().into()),
                version: 1,
            }),
            TxnBody::Reconfig(SetDataTxn {
                path: "/zookeeper/config".into(),
                data: None,
                version: -1,
            }),
            TxnBody::SetAcl(SetAclTxn {
                path: "/a".into(),
                acl: open_acl(),
                version: 1,
            }),
            TxnBody::Error(ErrorTxn { err: -110 }),
            TxnBody::Multi(vec![
                TxnBody::Check(CheckVersionTxn {
                    path: "/a".into(),
                    version: 0,
                }),
                TxnBody::Create(create),
                TxnBody::Delete(DeleteTxn { path: "/b".into() }),
            ]),
            TxnBody::Multi(vec![]),
            TxnBody::CloseSession(Some(CloseSessionTxn {
                paths_to_delete: vec!["/a/n-0000000001".into()],
            })),
            TxnBody::CloseSession(None),
        ]
    }

    fn log_of(entries: &[TxnEntry]) -> BytesMut {
        let mut out = BytesMut::new();
        encode_log(&FileHeader::new(0), entries, &mut out).unwrap();
        out
    }

    fn read_all(bytes: &[u8]) -> (Vec<TxnEntry>, Option<TxnLogError>, usize) {
        let mut log = TxnLogReader::new(bytes).unwrap();
        let mut entries = Vec::new();
        let mut error = None;
        for item in log.by_ref() {
            match item {
                Ok(e) => entries.push(e),
                Err(e) => error = Some(e),
            }
        }
        (entries, error, log.offset())
    }

    #[test]
    fn every_body_round_trips_with_and_without_digest() {
        let mut entries: Vec<TxnEntry> = every_body()
            .into_iter()
            .enumerate()
            .map(|(i, b)| entry(i as i64 + 1, b))
            .collect();
        let plain: Vec<TxnEntry> = entries
            .iter()
            .map(|e| TxnEntry {
                digest: None,
                ..e.clone()
            })
            .collect();
        entries.extend(plain);
        let mut bytes = log_of(&entries);
        let end = bytes.len();
        bytes.resize(end + 4096, 0);
        let (read, error, offset) = read_all(&bytes);
        assert_eq!(error, None);
        assert_eq!(read, entries);
        assert_eq!(offset, end);
        for e in &entries {
            assert_eq!(TxnEntry::decode(&e.to_bytes().unwrap()).unwrap(), *e);
        }
    }

    /// The stream reads what the slice reader reads, and every cut of the file gives the
    /// entries before the cut and then one error (or the end at a record boundary).
    #[test]
    fn the_stream_agrees_with_the_slice_reader() {
        let entries: Vec<TxnEntry> = every_body()
            .into_iter()
            .enumerate()
            .map(|(i, b)| entry(i as i64 + 1, b))
            .collect();
        let mut bytes = log_of(&entries);
        let end = bytes.len();
        bytes.resize(end + 100, 0);
        let mut stream = TxnLogStream::new(&bytes[..]).unwrap();
        let read: Vec<TxnEntry> = stream.by_ref().map(Result::unwrap).collect();
        assert_eq!(read, entries);
        assert_eq!(stream.offset(), end);
        for cut in 16..end {
            let (slice, slice_err, _) = read_all(&bytes[..cut]);
            let mut stream = TxnLogStream::new(&bytes[..cut]).unwrap();
            let mut got = Vec::new();
            let mut err = None;
            for item in stream.by_ref() {
                match item {
                    Ok(e) => got.push(e),
                    Err(e) => err = Some(e),
                }
            }
            assert_eq!(got, slice, "cut at {cut}");
            assert_eq!(err, slice_err, "cut at {cut}");
        }
    }

    #[test]
    fn a_create_without_parent_cversion_is_v0() {
        let v0 = CreateTxnV0 {
            path: "/old".into(),
            data: None,
            acl: open_acl(),
            ephemeral: false,
        };
        let mut bytes = header(5, OpCode::Create).to_bytes().unwrap().to_vec();
        bytes.extend_from_slice(&v0.to_bytes().unwrap());
        let entry = TxnEntry::decode(&bytes).unwrap();
        assert_eq!(entry.body, TxnBody::CreateV0(v0));
        assert_eq!(entry.to_bytes().unwrap(), bytes);
    }

    #[test]
    fn a_close_session_without_body_may_carry_a_digest() {
        let digest = TxnDigest {
            version: 2,
            tree_digest: -5,
        };
        let mut bytes = header(9, OpCode::CloseSession).to_bytes().unwrap().to_vec();
        bytes.extend_from_slice(&digest.to_bytes().unwrap());
        let entry = TxnEntry::decode(&bytes).unwrap();
        assert_eq!(entry.body, TxnBody::CloseSession(None));
        assert_eq!(entry.digest, Some(digest));
        assert_eq!(entry.to_bytes().unwrap(), bytes);
    }

    #[test]
    fn types_out_of_place_are_unknown_with_their_offset() {
        // `check` at the top level, `getData` anywhere, a multi in a multi.
        let check = CheckVersionTxn {
            path: "/a".into(),
            version: 1,
        };
        let mut bytes = header(1, OpCode::Check).to_bytes().unwrap().to_vec();
        bytes.extend_from_slice(&check.to_bytes().unwrap());
        assert_eq!(
            TxnEntry::decode(&bytes),
            Err(TxnLogError::UnknownType {
                offset: 28,
                value: 13
            })
        );
        bytes[31] = 4;
        assert!(matches!(
            TxnEntry::decode(&bytes),
            Err(TxnLogError::UnknownType {
                offset: 28,
                value: 4
            })
        ));
        bytes[31] = 99;
        assert!(matches!(
            TxnEntry::decode(&bytes),
            Err(TxnLogError::UnknownType {
                offset: 28,
                value: 99
            })
        ));

        let mut multi = header(1, OpCode::Multi).to_bytes().unwrap().to_vec();
        multi.put_i32(1);
        multi.put_i32(OpCode::Multi.code());
        multi.put_i32(4);
        multi.put_i32(0);
        assert_eq!(
            TxnEntry::decode(&multi),
            Err(TxnLogError::UnknownType {
                offset: 36,
                value: 14
            })
        );
    }

    /// Seen in a 3.8 ensemble's log: a failed multi's passed check logged with its own record
    /// (path, version) under the error type. ZooKeeper reads the code and ignores the rest.
    #[test]
    fn an_inner_error_with_more_than_its_code_reads_its_code() {
        let check = CheckVersionTxn {
            path: "/locks/a/_c_x-lock-0000000001".into(),
            version: -1,
        }
        .to_bytes()
        .unwrap();
        let mut multi = header(1, OpCode::Multi).to_bytes().unwrap().to_vec();
        multi.put_i32(2);
        multi.put_i32(OpCode::Error.code());
        multi.put_i32(i32::try_from(check.len()).unwrap());
        multi.extend_from_slice(&check);
        multi.put_i32(OpCode::Error.code());
        multi.put_i32(4);
        multi.put_i32(-101);
        let entry = TxnEntry::decode(&multi).unwrap();
        let first_code = i32::from_be_bytes(check[..4].try_into().unwrap());
        assert_eq!(
            entry.body,
            TxnBody::Multi(vec![
                TxnBody::Error(ErrorTxn { err: first_code }),
                TxnBody::Error(ErrorTxn { err: -101 }),
            ])
        );
        // Any other inner type keeps its trailing bytes an error.
        let mut padded = header(1, OpCode::Multi).to_bytes().unwrap().to_vec();
        padded.put_i32(1);
        padded.put_i32(OpCode::Check.code());
        padded.put_i32(i32::try_from(check.len() + 1).unwrap());
        padded.extend_from_slice(&check);
        padded.put_u8(0);
        match TxnEntry::decode(&padded) {
            Err(TxnLogError::Decode { source, .. }) => {
                assert!(source.to_string().contains("Txn.data"), "{source}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_inner_error_counts_from_the_record() {
        let mut multi = header(1, OpCode::Multi).to_bytes().unwrap().to_vec();
        multi.put_i32(1);
        multi.put_i32(OpCode::Delete.code());
        multi.put_i32(4);
        multi.put_i32(100); // a path length over the 0 bytes left
        match TxnEntry::decode(&multi) {
            Err(TxnLogError::Decode { offset, source }) => {
                assert_eq!(offset, 44, "the inner data starts at 44");
                assert!(source.to_string().contains("DeleteTxn.path"), "{source}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_file_header_is_checked() {
        assert_eq!(
            TxnLogReader::new(b"ZKSN\0\0\0\x02\0\0\0\0\0\0\0\0").err(),
            Some(TxnLogError::BadMagic {
                found: i32::from_be_bytes(*b"ZKSN")
            })
        );
        assert_eq!(
            TxnLogReader::new(b"ZKLG\0\0\0\x01\0\0\0\0\0\0\0\0").err(),
            Some(TxnLogError::BadVersion { found: 1 })
        );
        assert_eq!(
            TxnLogReader::new(b"ZKLG\0\0\0\x02").err(),
            Some(TxnLogError::Truncated {
                offset: 0,
                needed: 8
            })
        );
        assert!(matches!(
            TxnLogReader::new(b"ZK"),
            Err(TxnLogError::Truncated { needed: 14, .. })
        ));
    }

    #[test]
    fn bad_records_say_where() {
        let entries = [
            entry(1, every_body()[0].clone()),
            entry(2, every_body()[5].clone()),
        ];
        let good = log_of(&entries);
        let second = 16 + 12 + entries[0].encoded_len() + 1;

        // Cut inside the second record: torn.
        let (read, error, offset) = read_all(&good[..good.len() - 1]);
        assert_eq!(read.len(), 1);
        assert_eq!(offset, second);
        let error = error.unwrap();
        assert!(error.is_torn_tail(), "{error}");
        assert_eq!(
            error,
            TxnLogError::Truncated {
                offset: second,
                needed: 1
            }
        );

        // Its terminator replaced.
        let mut bad = good.clone();
        let last = bad.len() - 1;
        bad[last] = b'C';
        let error = read_all(&bad).1.unwrap();
        assert_eq!(
            error,
            TxnLogError::BadTerminator {
                offset: second,
                found: b'C'
            }
        );

        // A byte of its body flipped.
        let mut bad = good.clone();
        bad[second + 20] ^= 0x10;
        assert!(matches!(
            read_all(&bad).1,
            Some(TxnLogError::Checksum { offset, .. }) if offset == second
        ));
        assert!(!read_all(&bad).1.unwrap().is_torn_tail());

        // A negative length.
        let mut bad = good.clone();
        bad[second + 8] = 0xff;
        assert!(matches!(
            read_all(&bad).1,
            Some(TxnLogError::BadLength { offset, .. }) if offset == second
        ));

        // Something after the padding.
        let mut bad = good.clone();
        bad.resize(good.len() + 100, 0);
        bad[good.len() + 50] = 1;
        let (read, error, offset) = read_all(&bad);
        assert_eq!(read.len(), 2);
        assert_eq!(offset, good.len());
        assert_eq!(
            error,
            Some(TxnLogError::DataAfterPadding {
                end: good.len(),
                offset: good.len() + 50
            })
        );

        // Fewer zero bytes than a record head: the end.
        let mut short = good.clone();
        short.resize(good.len() + 5, 0);
        assert_eq!(read_all(&short), (entries.to_vec(), None, good.len()));
    }
}
