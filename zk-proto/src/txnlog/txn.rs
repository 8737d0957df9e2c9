//! The `org.apache.zookeeper.txn` records, the typed body of a transaction ([`TxnBody`]) and
//! one log entry ([`TxnEntry`]: header, body, digest).

use bytes::{BufMut, BytesMut};

use super::TxnLogError;
use crate::codec::{len_prefix, record};
use crate::records::{Acl, Buffer};
use crate::{Decode, DecodeError, Encode, EncodeError, ErrorCode, OpCode, Reader, Visit, Visitor};

record! {
    /// Precedes every transaction in the log (`TxnHeader`).
    TxnHeader "TxnHeader" {
        /// The session that asked for the change (for `createSession`, the new session's id).
        client_id: i64 = "clientId",
        /// The request's xid in that session.
        cxid: i32 = "cxid",
        /// The transaction's zxid: epoch in the high 32 bits, counter in the low 32.
        zxid: i64 = "zxid",
        /// The leader's wall clock when it prepared the transaction, in ms since the epoch.
        time: i64 = "time",
        /// The transaction's type; it picks the body (see [`TxnBody`]).
        op: OpCode = "type",
    }
}

record! {
    /// The tree's digest after the transaction, appended by 3.6+ servers with
    /// `zookeeper.digest.enabled` (the default) (`TxnDigest`).
    TxnDigest "TxnDigest" {
        /// The digest algorithm's version (2 in 3.6 to 3.9).
        version: i32 = "version",
        /// The digest of the whole tree.
        tree_digest: i64 = "treeDigest",
    }
}

record! {
    /// A `create` as servers before 3.3 logged it, without `parentCVersion` (`CreateTxnV0`).
    CreateTxnV0 "CreateTxnV0" {
        /// The created path (with its sequence suffix).
        path: String = "path",
        /// The node's data.
        data: Buffer = "data",
        /// Its ACL.
        acl: Vec<Acl> = "acl",
        /// An ephemeral node: its owner is the header's `client_id`.
        ephemeral: bool = "ephemeral",
    }
}

record! {
    /// `create` and `create2`, of any mode but container and TTL (`CreateTxn`).
    CreateTxn "CreateTxn" {
        /// The created path (with its sequence suffix).
        path: String = "path",
        /// The node's data.
        data: Buffer = "data",
        /// Its ACL.
        acl: Vec<Acl> = "acl",
        /// An ephemeral node: its owner is the header's `client_id`.
        ephemeral: bool = "ephemeral",
        /// The parent's `cversion` after this create.
        parent_cversion: i32 = "parentCVersion",
    }
}

record! {
    /// `createTTL` (`CreateTTLTxn`).
    CreateTtlTxn "CreateTTLTxn" {
        /// The created path.
        path: String = "path",
        /// The node's data.
        data: Buffer = "data",
        /// Its ACL.
        acl: Vec<Acl> = "acl",
        /// The parent's `cversion` after this create.
        parent_cversion: i32 = "parentCVersion",
        /// Time to live in ms.
        ttl: i64 = "ttl",
    }
}

record! {
    /// `createContainer` (`CreateContainerTxn`).
    CreateContainerTxn "CreateContainerTxn" {
        /// The created path.
        path: String = "path",
        /// The node's data.
        data: Buffer = "data",
        /// Its ACL.
        acl: Vec<Acl> = "acl",
        /// The parent's `cversion` after this create.
        parent_cversion: i32 = "parentCVersion",
    }
}

record! {
    /// `delete` and `deleteContainer` (`DeleteTxn`).
    DeleteTxn "DeleteTxn" {
        /// The deleted path.
        path: String = "path",
    }
}

record! {
    /// `setData`, and `reconfig` (whose path is `/zookeeper/config`) (`SetDataTxn`).
    SetDataTxn "SetDataTxn" {
        /// The node.
        path: String = "path",
        /// Its new data.
        data: Buffer = "data",
        /// Its new version.
        version: i32 = "version",
    }
}

record! {
    /// `check`, inside a multi (`CheckVersionTxn`).
    CheckVersionTxn "CheckVersionTxn" {
        /// The node.
        path: String = "path",
        /// The version it had.
        version: i32 = "version",
    }
}

record! {
    /// `setACL` (`SetACLTxn`).
    SetAclTxn "SetACLTxn" {
        /// The node.
        path: String = "path",
        /// Its new ACL.
        acl: Vec<Acl> = "acl",
        /// Its new ACL version.
        version: i32 = "version",
    }
}

record! {
    /// A record `zookeeper.jute` still defines but no 3.8 server logs: no opcode selects it
    /// (`SetMaxChildrenTxn`). Here for the conformance check only.
    SetMaxChildrenTxn "SetMaxChildrenTxn" {
        /// The node.
        path: String = "path",
        /// The quota.
        max: i32 = "max",
    }
}

record! {
    /// `createSession` (`CreateSessionTxn`); the new session's id is the header's `client_id`.
    CreateSessionTxn "CreateSessionTxn" {
        /// The negotiated session timeout in ms.
        timeout: i32 = "timeOut",
    }
}

record! {
    /// `closeSession` (`CloseSessionTxn`, logged by 3.6+ servers).
    CloseSessionTxn "CloseSessionTxn" {
        /// The session's ephemeral nodes, deleted by this transaction.
        paths_to_delete: Vec<String> = "paths2Delete",
    }
}

record! {
    /// A request that failed after it was given a zxid, or a failed op of a multi
    /// (`ErrorTxn`).
    ErrorTxn "ErrorTxn" {
        /// The `KeeperException.Code` (see [`ErrorTxn::code`]). Inside a failed multi, the op
        /// that failed has its code, the ops after it `RuntimeInconsistency` (-2).
        err: i32 = "err",
    }
}

impl ErrorTxn {
    /// The error code ([`ErrorCode::Unknown`] for one this crate does not know).
    pub fn code(&self) -> ErrorCode {
        ErrorCode::from_code(self.err)
    }
}

record! {
    /// One transaction of a multi, its body still as bytes (`Txn`); [`TxnBody::Multi`] holds
    /// them decoded.
    Txn "Txn" {
        /// The inner transaction's type.
        op: OpCode = "type",
        /// Its body's bytes.
        data: Buffer = "data",
    }
}

record! {
    /// `multi`'s transactions, their bodies still as bytes (`MultiTxn`); [`TxnBody::Multi`]
    /// holds them decoded.
    MultiTxn "MultiTxn" {
        /// The transactions, in order.
        txns: Vec<Txn> = "txns",
    }
}

/// The body of a transaction, decoded by its type.
///
/// Each variant is one type a ZooKeeper 3.8 server logs, and says which record follows the
/// [`TxnHeader`] (Java's `SerializeUtils.deserializeTxn`, and `DataTree.processTxn` for a
/// multi's inner transactions).
///
/// # Examples
///
/// ```
/// use zk_proto::OpCode;
/// use zk_proto::txnlog::{DeleteTxn, ErrorTxn, TxnBody};
///
/// let failed = TxnBody::Multi(vec![
///     TxnBody::Delete(DeleteTxn { path: "/a".into() }),
///     TxnBody::Error(ErrorTxn { err: -101 }), // NoNode
/// ]);
/// assert_eq!(failed.op_code(), OpCode::Multi);
/// assert!(failed.changed_nothing());
/// assert_eq!(failed.path(), None);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TxnBody {
    /// `createSession` (-10).
    CreateSession(CreateSessionTxn),
    /// `closeSession` (-11): the ephemerals deleted, or `None` in a log of a server before
    /// 3.6 (nothing follows the header).
    CloseSession(Option<CloseSessionTxn>),
    /// `create` (1).
    Create(CreateTxn),
    /// `create` (1) as servers before 3.3 logged it; Java reads it with `parentCVersion` -1.
    CreateV0(CreateTxnV0),
    /// `create2` (15).
    Create2(CreateTxn),
    /// `createTTL` (21).
    CreateTtl(CreateTtlTxn),
    /// `createContainer` (19).
    CreateContainer(CreateContainerTxn),
    /// `delete` (2).
    Delete(DeleteTxn),
    /// `deleteContainer` (20): the server removing an empty container.
    DeleteContainer(DeleteTxn),
    /// `setData` (5).
    SetData(SetDataTxn),
    /// `reconfig` (16): the new `/zookeeper/config`.
    Reconfig(SetDataTxn),
    /// `setACL` (7).
    SetAcl(SetAclTxn),
    /// `check` (13), only inside a multi.
    Check(CheckVersionTxn),
    /// `error` (-1): a failed request, or a failed op inside a multi.
    Error(ErrorTxn),
    /// `multi` (14): its inner transactions in order (never a multi). If one of them is an
    /// [`TxnBody::Error`], the multi failed and none of them was applied, though the ops
    /// before the failing one are logged as they would have been (see
    /// [`TxnBody::changed_nothing`]).
    Multi(Vec<TxnBody>),
}

/// Where a body is decoded: the types allowed differ.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    /// After a [`TxnHeader`]: what `SerializeUtils.deserializeTxn` accepts.
    Top,
    /// Inside a multi: what `DataTree.processTxn` accepts there.
    Inner,
}

impl TxnBody {
    /// The type this body is logged under.
    pub fn op_code(&self) -> OpCode {
        match self {
            TxnBody::CreateSession(_) => OpCode::CreateSession,
            TxnBody::CloseSession(_) => OpCode::CloseSession,
            TxnBody::Create(_) | TxnBody::CreateV0(_) => OpCode::Create,
            TxnBody::Create2(_) => OpCode::Create2,
            TxnBody::CreateTtl(_) => OpCode::CreateTtl,
            TxnBody::CreateContainer(_) => OpCode::CreateContainer,
            TxnBody::Delete(_) => OpCode::Delete,
            TxnBody::DeleteContainer(_) => OpCode::DeleteContainer,
            TxnBody::SetData(_) => OpCode::SetData,
            TxnBody::Reconfig(_) => OpCode::Reconfig,
            TxnBody::SetAcl(_) => OpCode::SetAcl,
            TxnBody::Check(_) => OpCode::Check,
            TxnBody::Error(_) => OpCode::Error,
            TxnBody::Multi(_) => OpCode::Multi,
        }
    }

    /// The path the transaction is about, if it has one (a multi, a session or an error has
    /// none).
    pub fn path(&self) -> Option<&str> {
        match self {
            TxnBody::Create(t) | TxnBody::Create2(t) => Some(&t.path),
            TxnBody::CreateV0(t) => Some(&t.path),
            TxnBody::CreateTtl(t) => Some(&t.path),
            TxnBody::CreateContainer(t) => Some(&t.path),
            TxnBody::Delete(t) | TxnBody::DeleteContainer(t) => Some(&t.path),
            TxnBody::SetData(t) | TxnBody::Reconfig(t) => Some(&t.path),
            TxnBody::SetAcl(t) => Some(&t.path),
            TxnBody::Check(t) => Some(&t.path),
            TxnBody::CreateSession(_)
            | TxnBody::CloseSession(_)
            | TxnBody::Error(_)
            | TxnBody::Multi(_) => None,
        }
    }

    /// Whether the node this body creates is ephemeral (its owner is the header's
    /// `client_id`). False for anything but a create.
    pub fn is_ephemeral(&self) -> bool {
        match self {
            TxnBody::Create(t) | TxnBody::Create2(t) => t.ephemeral,
            TxnBody::CreateV0(t) => t.ephemeral,
            _ => false,
        }
    }

    /// Whether applying this transaction leaves the tree as it was: an error, or a multi
    /// holding an error (Java's `DataTree` then applies none of its ops).
    pub fn changed_nothing(&self) -> bool {
        match self {
            TxnBody::Error(_) => true,
            TxnBody::Multi(txns) => txns.iter().any(|t| matches!(t, TxnBody::Error(_))),
            _ => false,
        }
    }

    /// Decodes the body of a transaction of type `op` that follows a [`TxnHeader`], from
    /// `r` to its end minus the digest. The reader must hold the body and the digest only.
    fn decode(r: &mut Reader<'_>, op: OpCode, op_offset: usize) -> Result<Self, TxnLogError> {
        Self::decode_in(r, op, op_offset, Place::Top)
    }

    fn decode_in(
        r: &mut Reader<'_>,
        op: OpCode,
        op_offset: usize,
        place: Place,
    ) -> Result<Self, TxnLogError> {
        let top = place == Place::Top;
        let body = match op {
            OpCode::CreateSession if top => TxnBody::CreateSession(CreateSessionTxn::decode(r)?),
            OpCode::CloseSession if top => match r.remaining() {
                0 => TxnBody::CloseSession(None),
                _ => TxnBody::CloseSession(Some(CloseSessionTxn::decode(r)?)),
            },
            OpCode::Create if top => {
                // Java reads a V0 create when the V1 record runs past the end.
                let mut v1 = r.clone();
                match CreateTxn::decode(&mut v1) {
                    Ok(t) => {
                        *r = v1;
                        TxnBody::Create(t)
                    }
                    Err(DecodeError::UnexpectedEnd { .. }) => {
                        TxnBody::CreateV0(CreateTxnV0::decode(r)?)
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            OpCode::Create => TxnBody::Create(CreateTxn::decode(r)?),
            OpCode::Create2 => TxnBody::Create2(CreateTxn::decode(r)?),
            OpCode::CreateTtl => TxnBody::CreateTtl(CreateTtlTxn::decode(r)?),
            OpCode::CreateContainer => TxnBody::CreateContainer(CreateContainerTxn::decode(r)?),
            OpCode::Delete => TxnBody::Delete(DeleteTxn::decode(r)?),
            OpCode::DeleteContainer => TxnBody::DeleteContainer(DeleteTxn::decode(r)?),
            OpCode::SetData => TxnBody::SetData(SetDataTxn::decode(r)?),
            OpCode::Reconfig if top => TxnBody::Reconfig(SetDataTxn::decode(r)?),
            OpCode::SetAcl if top => TxnBody::SetAcl(SetAclTxn::decode(r)?),
            OpCode::Check if !top => TxnBody::Check(CheckVersionTxn::decode(r)?),
            OpCode::Error => TxnBody::Error(ErrorTxn::decode(r)?),
            OpCode::Multi if top => TxnBody::Multi(decode_multi(r)?),
            other => {
                return Err(TxnLogError::UnknownType {
                    offset: op_offset,
                    value: other.code(),
                });
            }
        };
        Ok(body)
    }

    fn inner(&self) -> Option<&dyn Body> {
        Some(match self {
            TxnBody::CreateSession(t) => t,
            TxnBody::CloseSession(t) => t.as_ref()?,
            TxnBody::Create(t) | TxnBody::Create2(t) => t,
            TxnBody::CreateV0(t) => t,
            TxnBody::CreateTtl(t) => t,
            TxnBody::CreateContainer(t) => t,
            TxnBody::Delete(t) | TxnBody::DeleteContainer(t) => t,
            TxnBody::SetData(t) | TxnBody::Reconfig(t) => t,
            TxnBody::SetAcl(t) => t,
            TxnBody::Check(t) => t,
            TxnBody::Error(t) => t,
            TxnBody::Multi(_) => return None,
        })
    }
}

/// A record that can be both encoded and visited.
trait Body: Encode + Visit {}
impl<T: Encode + Visit> Body for T {}

/// The smallest inner `Txn`: its type and its buffer's length.
const TXN_MIN_LEN: usize = 8;

fn decode_multi(r: &mut Reader<'_>) -> Result<Vec<TxnBody>, TxnLogError> {
    let n = r.at("MultiTxn.txns").vector_len(TXN_MIN_LEN)?;
    // `n` is bounded by the bytes present.
    let mut txns = Vec::with_capacity(n);
    for _ in 0..n {
        let op_offset = r.offset();
        let op = OpCode::decode(r.at("Txn.type")).map_err(|e| unknown_type(e, op_offset))?;
        let len_offset = r.offset();
        let Some(data) = r.at("Txn.data").buffer()? else {
            return Err(DecodeError::BadLength {
                at: "Txn.data",
                offset: len_offset,
                len: -1,
                max: r.remaining(),
            }
            .into());
        };
        let base = len_offset + 4;
        let mut inner = Reader::new(data);
        let body = TxnBody::decode_in(&mut inner, op, op_offset, Place::Inner)
            .and_then(|body| {
                // An error's buffer may hold more than its code: a failed multi's ops are
                // sometimes logged with their own record (a check's path and version) under
                // the error type. ZooKeeper reads the code and ignores the rest; so do we.
                if op != OpCode::Error {
                    inner.finish("Txn.data")?;
                }
                Ok(body)
            })
            .map_err(|e| match e {
                // The type's offset is already the record's; the rest count from `data`.
                e @ TxnLogError::UnknownType { .. } => e,
                e => e.shifted(base),
            })?;
        txns.push(body);
    }
    Ok(txns)
}

/// An unknown code in a type field becomes [`TxnLogError::UnknownType`].
fn unknown_type(e: DecodeError, offset: usize) -> TxnLogError {
    match e {
        DecodeError::UnknownCode { value, .. } => TxnLogError::UnknownType { offset, value },
        e => e.into(),
    }
}

impl Encode for TxnBody {
    fn encoded_len(&self) -> usize {
        match self {
            TxnBody::Multi(txns) => {
                4 + txns
                    .iter()
                    .map(|t| TXN_MIN_LEN + t.encoded_len())
                    .sum::<usize>()
            }
            other => other.inner().map_or(0, Encode::encoded_len),
        }
    }

    fn encode(&self, out: &mut BytesMut) -> Result<(), EncodeError> {
        match self {
            TxnBody::Multi(txns) => {
                out.put_i32(len_prefix("MultiTxn.txns", txns.len())?);
                for t in txns {
                    out.put_i32(t.op_code().code());
                    out.put_i32(len_prefix("Txn.data", t.encoded_len())?);
                    t.encode(out)?;
                }
                Ok(())
            }
            other => other.inner().map_or(Ok(()), |b| b.encode(out)),
        }
    }
}

/// Walks the body as Java's record does: a multi's inner transactions as `Txn` records
/// (`type` and `data` bytes), a `closeSession` without body as nothing.
impl Visit for TxnBody {
    fn visit(&self, tag: &str, v: &mut dyn Visitor) {
        match self {
            TxnBody::Multi(txns) => {
                v.start_record(tag);
                v.start_vector("txns");
                for t in txns {
                    v.start_record("");
                    v.int("type", t.op_code().code());
                    let data = t.to_bytes().unwrap_or_default();
                    v.buffer("data", Some(&data));
                    v.end_record();
                }
                v.end_vector();
                v.end_record();
            }
            other => {
                if let Some(b) = other.inner() {
                    b.visit(tag, v);
                }
            }
        }
    }
}

/// One transaction as the log stores it: header, body and, from a 3.6+ server with digests
/// on, the tree's digest after it (Java's `TxnLogEntry`).
///
/// [`Encode`] writes the record's bytes (what the log's checksum covers), as Java's
/// `Util.marshallTxnEntry` does; [`TxnEntry::decode`] reads them back.
///
/// # Examples
///
/// ```
/// use zk_proto::{Encode, OpCode};
/// use zk_proto::txnlog::{CreateSessionTxn, TxnBody, TxnEntry, TxnHeader};
///
/// let entry = TxnEntry {
///     header: TxnHeader {
///         client_id: 0x1000_0000_0000_0001,
///         cxid: 0,
///         zxid: 0x1_0000_0001,
///         time: 1_700_000_000_000,
///         op: OpCode::CreateSession,
///     },
///     body: TxnBody::CreateSession(CreateSessionTxn { timeout: 30_000 }),
///     digest: None,
/// };
/// let bytes = entry.to_bytes().unwrap();
/// assert_eq!(bytes.len(), 32 + 4);
/// assert_eq!(TxnEntry::decode(&bytes).unwrap(), entry);
/// // A body cut short is an error, not a panic.
/// assert!(TxnEntry::decode(&bytes[..34]).is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnEntry {
    /// Who, when, which zxid, which type.
    pub header: TxnHeader,
    /// What changed. Its [`TxnBody::op_code`] is `header.op` in a decoded entry.
    pub body: TxnBody,
    /// The tree's digest after this transaction, if the server logged one.
    pub digest: Option<TxnDigest>,
}

/// The bytes of a [`TxnDigest`].
const DIGEST_LEN: usize = 12;

impl TxnEntry {
    /// Decodes one record's bytes (the buffer between a log record's length and its `'B'`).
    ///
    /// After the body, nothing or a 12-byte [`TxnDigest`] may follow; anything else is an
    /// error (Java ignores it). A `closeSession` whose body does not decode but which has
    /// exactly a digest's bytes after its header is read as a `closeSession` without body
    /// (a 3.6+ server with `zookeeper.closeSessionTxn.enabled=false`).
    ///
    /// # Errors
    /// [`TxnLogError::UnknownType`] for a type no 3.8 server logs there,
    /// [`TxnLogError::Decode`] for bytes that are not the record the type announces; offsets
    /// count from the start of `bytes`.
    pub fn decode(bytes: &[u8]) -> Result<TxnEntry, TxnLogError> {
        let mut r = Reader::new(bytes);
        let op_offset = 28; // clientId, cxid, zxid, time
        let header = TxnHeader::decode(&mut r).map_err(|e| unknown_type(e, op_offset))?;
        let after_header = r.clone();
        let body = match TxnBody::decode(&mut r, header.op, op_offset) {
            Ok(body) => body,
            Err(TxnLogError::Decode { .. })
                if header.op == OpCode::CloseSession && after_header.remaining() == DIGEST_LEN =>
            {
                r = after_header;
                TxnBody::CloseSession(None)
            }
            Err(e) => return Err(e),
        };
        let digest = match r.remaining() {
            0 => None,
            DIGEST_LEN => Some(TxnDigest::decode(r.at("TxnDigest"))?),
            extra => {
                return Err(DecodeError::TrailingBytes {
                    record: "TxnEntry",
                    extra,
                }
                .into());
            }
        };
        Ok(TxnEntry {
            header,
            body,
            digest,
        })
    }

    /// The zxid.
    pub fn zxid(&self) -> i64 {
        self.header.zxid
    }

    /// The session that made the change (for `createSession`, the new session).
    pub fn session_id(&self) -> i64 {
        self.header.client_id
    }

    /// The owner of the node this entry creates, if it creates an ephemeral node: the
    /// header's `client_id`.
    pub fn ephemeral_owner(&self) -> Option<i64> {
        self.body.is_ephemeral().then_some(self.header.client_id)
    }
}

impl Encode for TxnEntry {
    fn encoded_len(&self) -> usize {
        self.header.encoded_len()
            + self.body.encoded_len()
            + self.digest.as_ref().map_or(0, Encode::encoded_len)
    }

    fn encode(&self, out: &mut BytesMut) -> Result<(), EncodeError> {
        self.header.encode(out)?;
        self.body.encode(out)?;
        if let Some(d) = &self.digest {
            d.encode(out)?;
        }
        Ok(())
    }
}

/// Walks the entry as `Util.marshallTxnEntry` writes it: `hdr`, `txn`, `digest`.
impl Visit for TxnEntry {
    fn visit(&self, tag: &str, v: &mut dyn Visitor) {
        v.start_record(tag);
        self.header.visit("hdr", v);
        self.body.visit("txn", v);
        if let Some(d) = &self.digest {
            d.visit("digest", v);
        }
        v.end_record();
    }
}
