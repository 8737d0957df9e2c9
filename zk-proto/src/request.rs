//! [`Request`]: every request a client sends after the handshake, and its framing.

use bytes::{BufMut, BytesMut};

use crate::frame::frame_prefix;
use crate::multi::MultiRequest;
use crate::records::*;
use crate::{Decode, DecodeError, Encode, EncodeError, OpCode, Reader, RequestHeader};

macro_rules! requests {
    ($( $(#[$meta:meta])* $variant:ident $( ($body:ty) )? => $op:ident ),* $(,)?) => {
        /// A request body with its kind. The opcode follows from the variant; the xid is given
        /// when the request is framed ([`Request::encode_frame`]).
        #[derive(Debug, Clone, PartialEq, Eq)]
        #[non_exhaustive]
        pub enum Request {
            $( $(#[$meta])* $variant $( ($body) )?, )*
        }

        impl Request {
            /// The opcode sent in the request header.
            pub fn op_code(&self) -> OpCode {
                match self {
                    $( requests!(@pat $variant $( ($body) )?) => OpCode::$op, )*
                }
            }

            fn body(&self) -> Option<&dyn Encode> {
                match self {
                    $( requests!(@bind $variant body $( ($body) )?) => requests!(@some body $( ($body) )?), )*
                }
            }

            /// Decodes a request body of kind `op` (for fake servers and tests; a client only
            /// encodes requests).
            pub fn decode(op: OpCode, r: &mut Reader<'_>) -> Result<Self, DecodeError> {
                $( if op == OpCode::$op {
                    return Ok(requests!(@decode r $variant $( ($body) )?));
                } )*
                Err(DecodeError::UnknownCode { at: "RequestHeader.type", offset: 0, value: op.code() })
            }
        }
    };
    (@pat $variant:ident ($body:ty)) => { Request::$variant(_) };
    (@pat $variant:ident) => { Request::$variant };
    (@bind $variant:ident $b:ident ($body:ty)) => { Request::$variant($b) };
    (@bind $variant:ident $b:ident) => { Request::$variant };
    (@some $b:ident ($body:ty)) => { Some($b as &dyn Encode) };
    (@some $b:ident) => { None };
    (@decode $r:ident $variant:ident ($body:ty)) => { Request::$variant(<$body>::decode($r)?) };
    (@decode $r:ident $variant:ident) => { Request::$variant };
}

requests! {
    /// `create`.
    Create(CreateRequest) => Create,
    /// `create2`: the reply has the new node's `Stat` too.
    Create2(CreateRequest) => Create2,
    /// `createContainer` (mode must be `Container`).
    CreateContainer(CreateRequest) => CreateContainer,
    /// `createTTL` (mode must be a TTL mode).
    CreateTtl(CreateTtlRequest) => CreateTtl,
    /// `delete`.
    Delete(DeleteRequest) => Delete,
    /// `exists`.
    Exists(ExistsRequest) => Exists,
    /// `getData`.
    GetData(GetDataRequest) => GetData,
    /// `setData`.
    SetData(SetDataRequest) => SetData,
    /// `getACL`.
    GetAcl(GetAclRequest) => GetAcl,
    /// `setACL`.
    SetAcl(SetAclRequest) => SetAcl,
    /// `getChildren`.
    GetChildren(GetChildrenRequest) => GetChildren,
    /// `getChildren2`.
    GetChildren2(GetChildren2Request) => GetChildren2,
    /// `sync`.
    Sync(SyncRequest) => Sync,
    /// A heartbeat (xid -2).
    Ping => Ping,
    /// `check` on its own.
    Check(CheckVersionRequest) => Check,
    /// A transaction of writes.
    Multi(MultiRequest) => Multi,
    /// A batch of reads.
    MultiRead(MultiRequest) => MultiRead,
    /// `reconfig`.
    Reconfig(ReconfigRequest) => Reconfig,
    /// `checkWatches`.
    CheckWatches(CheckWatchesRequest) => CheckWatches,
    /// `removeWatches`.
    RemoveWatches(RemoveWatchesRequest) => RemoveWatches,
    /// `addAuth` (xid -4).
    Auth(AuthPacket) => Auth,
    /// Re-register one-shot watches (xid -8).
    SetWatches(SetWatches) => SetWatches,
    /// Re-register all watches, persistent ones included (xid -8).
    SetWatches2(SetWatches2) => SetWatches2,
    /// A SASL token.
    Sasl(GetSaslRequest) => Sasl,
    /// `getEphemerals`.
    GetEphemerals(GetEphemeralsRequest) => GetEphemerals,
    /// `getAllChildrenNumber`.
    GetAllChildrenNumber(GetAllChildrenNumberRequest) => GetAllChildrenNumber,
    /// `addWatch`.
    AddWatch(AddWatchRequest) => AddWatch,
    /// `whoAmI` (3.9+ servers; 3.8 answers `Unimplemented`).
    WhoAmI => WhoAmI,
    /// `closeSession`.
    CloseSession => CloseSession,
}

impl Request {
    /// The length of header and body, without the frame's length prefix.
    pub fn encoded_len(&self) -> usize {
        8 + self.body().map_or(0, Encode::encoded_len)
    }

    /// Appends the request as one frame: length prefix, `RequestHeader { xid, op }`, body.
    /// A frame longer than `max` is refused, and on any error nothing is appended.
    ///
    /// # Examples
    ///
    /// ```
    /// use bytes::BytesMut;
    /// use zk_proto::{DEFAULT_MAX_FRAME_LEN, Request, records::SyncRequest};
    ///
    /// let mut out = BytesMut::new();
    /// let sync = Request::Sync(SyncRequest { path: "/a".into() });
    /// sync.encode_frame(7, &mut out, DEFAULT_MAX_FRAME_LEN).unwrap();
    /// assert_eq!(&out[..], &[0, 0, 0, 14, 0, 0, 0, 7, 0, 0, 0, 9, 0, 0, 0, 2, b'/', b'a']);
    /// ```
    pub fn encode_frame(
        &self,
        xid: i32,
        out: &mut BytesMut,
        max: usize,
    ) -> Result<(), EncodeError> {
        let len = self.encoded_len();
        let prefix = frame_prefix(len, max)?;
        out.reserve(4 + len);
        let start = out.len();
        out.put_i32(prefix);
        let written = RequestHeader {
            xid,
            op: self.op_code(),
        }
        .encode(out)
        .and_then(|()| self.body().map_or(Ok(()), |b| b.encode(out)));
        written.inspect_err(|_| out.truncate(start))
    }

    /// Decodes a whole request frame (without its length prefix): header, then body.
    pub fn decode_frame(frame: &[u8]) -> Result<(RequestHeader, Request), DecodeError> {
        let mut r = Reader::new(frame);
        let header = RequestHeader::decode(&mut r)?;
        let request = Request::decode(header.op, &mut r)?;
        r.finish("Request")?;
        Ok((header, request))
    }
}
