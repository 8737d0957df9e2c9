//! Shared by `tests/txn_log.rs` and the `txn_log` fuzz target (which includes this file with
//! `#[path]`): reading any bytes as a transaction log and as one record, with the properties
//! both check, and the sample log both start from.

#![allow(dead_code, clippy::unwrap_used, clippy::indexing_slicing)]

use bytes::BytesMut;
use zk_proto::records::{Acl, Id, Perms};
use zk_proto::txnlog::{
    CheckVersionTxn, CloseSessionTxn, CreateContainerTxn, CreateSessionTxn, CreateTtlTxn,
    CreateTxn, DeleteTxn, ErrorTxn, FileHeader, SetAclTxn, SetDataTxn, TxnBody, TxnDigest,
    TxnEntry, TxnHeader, TxnLogError, TxnLogReader, encode_log,
};
use zk_proto::{Encode, OpCode};

/// What reading bytes as a log gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Read {
    /// The file header was refused.
    NoHeader(TxnLogError),
    /// The header, the entries before the end or the error, the error, and
    /// [`TxnLogReader::offset`] at the end.
    Log {
        /// The file header.
        header: FileHeader,
        /// The entries read.
        entries: Vec<TxnEntry>,
        /// The error that ended the reading, if any.
        error: Option<TxnLogError>,
        /// Where the log ended or the bad record starts.
        end: usize,
    },
}

/// Reads `bytes` as a log file.
pub fn read(bytes: &[u8]) -> Read {
    let mut log = match TxnLogReader::new(bytes) {
        Ok(log) => log,
        Err(e) => return Read::NoHeader(e),
    };
    let header = log.header().clone();
    let mut entries = Vec::new();
    let mut error = None;
    for item in log.by_ref() {
        match item {
            Ok(e) => entries.push(e),
            Err(e) => {
                assert!(error.is_none(), "one error, then the end");
                error = Some(e);
            }
        }
    }
    Read::Log {
        header,
        entries,
        error,
        end: log.offset(),
    }
}

/// Whether `bytes` may hold a 4-byte UTF-8 sequence: decoded to the same character as the
/// surrogate pair Java writes, it re-encodes as the pair, so bytes differ though values agree.
fn may_hold_utf8_supplementary(bytes: &[u8]) -> bool {
    bytes.iter().any(|&b| b >= 0xf0)
}

/// Reads `data` as one record and as a log file, checking that nothing panics, that whatever
/// decodes re-encodes to bytes that decode to the same value, and that those bytes are the
/// input's (but for strings sent as 4-byte UTF-8, which Java never writes). Returns the log
/// reading.
pub fn check(data: &[u8]) -> Read {
    if let Ok(entry) = TxnEntry::decode(data) {
        let again = entry.to_bytes().unwrap();
        assert_eq!(TxnEntry::decode(&again).unwrap(), entry);
        assert_eq!(again.len(), entry.encoded_len());
        if !may_hold_utf8_supplementary(data) {
            assert_eq!(&again[..], data, "a record re-encodes to its bytes");
        }
    }
    let read = read(data);
    if let Read::Log {
        header,
        entries,
        end,
        ..
    } = &read
    {
        let mut out = BytesMut::new();
        encode_log(header, entries, &mut out).unwrap();
        let Read::Log {
            entries: again,
            error: None,
            end: again_end,
            ..
        } = self::read(&out)
        else {
            panic!("a re-encoded log reads without error")
        };
        assert_eq!(&again, entries);
        assert_eq!(again_end, out.len());
        if !may_hold_utf8_supplementary(&data[..*end]) {
            assert_eq!(&out[..], &data[..*end], "a log re-encodes to its bytes");
        }
    }
    read
}

fn open_acl() -> Vec<Acl> {
    vec![Acl {
        perms: Perms::ALL,
        id: Id::new("world", "anyone"),
    }]
}

/// One body of every type a 3.8 server logs (each inner type of a multi too).
pub fn every_body() -> Vec<TxnBody> {
    let create = CreateTxn {
        path: "/locks/m/_c_2c5e-lock-0000000007".into(),
        data: Some(b"10.0.0.7".to_vec().into()),
        acl: open_acl(),
        ephemeral: true,
        parent_cversion: 8,
    };
    vec![
        TxnBody::CreateSession(CreateSessionTxn { timeout: 30_000 }),
        TxnBody::Create(create.clone()),
        TxnBody::Create2(create.clone()),
        TxnBody::CreateTtl(CreateTtlTxn {
            path: "/ttl".into(),
            data: None,
            acl: open_acl(),
            parent_cversion: 1,
            ttl: 60_000,
        }),
        TxnBody::CreateContainer(CreateContainerTxn {
            path: "/locks/m".into(),
            data: Some(Default::default()),
            acl: open_acl(),
            parent_cversion: 4,
        }),
        TxnBody::SetData(SetDataTxn {
            path: "/locks/m/_c_2c5e-lock-0000000007".into(),
            data: Some(b"fence".to_vec().into()),
            version: 1,
        }),
        TxnBody::SetAcl(SetAclTxn {
            path: "/ttl".into(),
            acl: open_acl(),
            version: 1,
        }),
        TxnBody::Reconfig(SetDataTxn {
            path: "/zookeeper/config".into(),
            data: Some(
                b"server.1=127.0.0.1:2888:3888:participant;2181"
                    .to_vec()
                    .into(),
            ),
            version: 5,
        }),
        TxnBody::Error(ErrorTxn { err: -110 }),
        TxnBody::Multi(vec![
            TxnBody::Check(CheckVersionTxn {
                path: "/locks".into(),
                version: 2,
            }),
            TxnBody::Create(create.clone()),
            TxnBody::Create2(create.clone()),
            TxnBody::SetData(SetDataTxn {
                path: "/locks".into(),
                data: None,
                version: 3,
            }),
            TxnBody::Delete(DeleteTxn {
                path: "/ttl".into(),
            }),
            TxnBody::DeleteContainer(DeleteTxn {
                path: "/old".into(),
            }),
        ]),
        TxnBody::Multi(vec![
            TxnBody::Create(create),
            TxnBody::Error(ErrorTxn { err: -101 }),
            TxnBody::Error(ErrorTxn { err: -2 }),
        ]),
        TxnBody::Delete(DeleteTxn {
            path: "/locks/m/_c_2c5e-lock-0000000007".into(),
        }),
        TxnBody::DeleteContainer(DeleteTxn {
            path: "/locks/m".into(),
        }),
        TxnBody::CloseSession(Some(CloseSessionTxn {
            paths_to_delete: vec!["/a".into(), "/b/e-0000000001".into()],
        })),
        TxnBody::CloseSession(None),
    ]
}

/// A log of [`every_body`], with a digest on every other entry, zxids from `0x1_0000_0001`.
pub fn sample_entries() -> Vec<TxnEntry> {
    every_body()
        .into_iter()
        .enumerate()
        .map(|(i, body)| TxnEntry {
            header: TxnHeader {
                client_id: 0x1000_0abc_de00_0000 + (i as i64 % 3),
                cxid: i as i32,
                zxid: 0x1_0000_0001 + i as i64,
                time: 1_764_000_000_000 + 17 * i as i64,
                op: body.op_code(),
            },
            body,
            digest: (i % 2 == 0).then_some(TxnDigest {
                version: 2,
                tree_digest: 0x5eed_0000 + i as i64,
            }),
        })
        .collect()
}

/// [`sample_entries`] as a file, followed by `padding` zero bytes.
pub fn sample_log(padding: usize) -> Vec<u8> {
    let mut out = BytesMut::new();
    encode_log(&FileHeader::new(0), &sample_entries(), &mut out).unwrap();
    out.resize(out.len() + padding, 0);
    out.to_vec()
}

/// Every `OpCode` shows up: keeps the sample honest when a type is added.
pub fn sample_types() -> Vec<OpCode> {
    let mut ops: Vec<OpCode> = Vec::new();
    for e in sample_entries() {
        ops.push(e.header.op);
        if let TxnBody::Multi(inner) = &e.body {
            ops.extend(inner.iter().map(TxnBody::op_code));
        }
    }
    ops.sort_by_key(|op| op.code());
    ops.dedup();
    ops
}
