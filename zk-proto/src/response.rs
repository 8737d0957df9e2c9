//! [`Response`]: the body of a successful reply, decoded by the opcode of the request it
//! answers.

use crate::multi::MultiResponse;
use crate::records::*;
use crate::{Decode, DecodeError, OpCode, Reader, ReplyHeader, WatcherEvent, xid};

/// The body of a reply whose header's `err` is `Ok`. Replies carry no opcode: the client knows
/// it from the request the reply answers (the oldest one pending, as ZooKeeper answers in
/// order).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Response {
    /// No body: `delete`, `ping`, `setWatches`, `auth`, `removeWatches`, `checkWatches`,
    /// `closeSession`.
    Empty,
    /// `addWatch`: ZooKeeper answers with an `ErrorResponse` body (always `Ok` in practice).
    AddWatch(ErrorResponse),
    /// `create`.
    Create(CreateResponse),
    /// `create2`, `createContainer`, `createTTL`.
    Create2(Create2Response),
    /// `exists` on an existing node.
    Exists(ExistsResponse),
    /// `getData`, and `reconfig` (the new configuration).
    GetData(GetDataResponse),
    /// `setData`, and a standalone `check` (the node's `Stat`).
    SetData(SetDataResponse),
    /// `getACL`.
    GetAcl(GetAclResponse),
    /// `setACL`.
    SetAcl(SetAclResponse),
    /// `getChildren`.
    GetChildren(GetChildrenResponse),
    /// `getChildren2`.
    GetChildren2(GetChildren2Response),
    /// `sync`.
    Sync(SyncResponse),
    /// `multi` and `multiRead`.
    Multi(MultiResponse),
    /// `sasl`.
    Sasl(SetSaslResponse),
    /// `getEphemerals`.
    GetEphemerals(GetEphemeralsResponse),
    /// `getAllChildrenNumber`.
    GetAllChildrenNumber(GetAllChildrenNumberResponse),
    /// `whoAmI`.
    WhoAmI(WhoAmIResponse),
}

impl Response {
    /// Decodes the body of a successful reply to a request of kind `op`. Bytes after it are
    /// left in `r`: a strict caller checks that nothing is left ([`Reader::finish`]); a client
    /// ignores them, as Java does (see the crate's "Trailing bytes").
    pub fn decode(op: OpCode, r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        use OpCode as O;
        Ok(match op {
            O::Create => Response::Create(CreateResponse::decode(r)?),
            O::Create2 | O::CreateContainer | O::CreateTtl => {
                Response::Create2(Create2Response::decode(r)?)
            }
            O::Exists => Response::Exists(ExistsResponse::decode(r)?),
            O::GetData | O::Reconfig => Response::GetData(GetDataResponse::decode(r)?),
            O::SetData | O::Check => Response::SetData(SetDataResponse::decode(r)?),
            O::AddWatch => Response::AddWatch(ErrorResponse::decode(r)?),
            O::GetAcl => Response::GetAcl(GetAclResponse::decode(r)?),
            O::SetAcl => Response::SetAcl(SetAclResponse::decode(r)?),
            O::GetChildren => Response::GetChildren(GetChildrenResponse::decode(r)?),
            O::GetChildren2 => Response::GetChildren2(GetChildren2Response::decode(r)?),
            O::Sync => Response::Sync(SyncResponse::decode(r)?),
            O::Multi | O::MultiRead => Response::Multi(MultiResponse::decode(r)?),
            O::Sasl => Response::Sasl(SetSaslResponse::decode(r)?),
            O::GetEphemerals => Response::GetEphemerals(GetEphemeralsResponse::decode(r)?),
            O::GetAllChildrenNumber => {
                Response::GetAllChildrenNumber(GetAllChildrenNumberResponse::decode(r)?)
            }
            O::WhoAmI => Response::WhoAmI(WhoAmIResponse::decode(r)?),
            O::Delete
            | O::Ping
            | O::SetWatches
            | O::SetWatches2
            | O::Auth
            | O::RemoveWatches
            | O::CheckWatches
            | O::CloseSession
            | O::Notification
            | O::DeleteContainer
            | O::CreateSession
            | O::Error => Response::Empty,
        })
    }
}

/// One frame from the server after the handshake, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerFrame {
    /// A watch notification (xid -1).
    Notification(ReplyHeader, WatcherEvent),
    /// A reply: its header, and the body when `err` is `Ok` (`None` otherwise).
    Reply(ReplyHeader, Option<Response>),
}

impl ServerFrame {
    /// Decodes a whole frame (without its length prefix). `op_for` gives the opcode of the
    /// request that `xid` answers, or `None` if no such request is pending, which makes the
    /// frame a protocol error ([`DecodeError::UnknownCode`] at `ReplyHeader.xid`).
    pub fn decode(
        frame: &[u8],
        op_for: impl FnOnce(i32) -> Option<OpCode>,
    ) -> Result<Self, DecodeError> {
        let mut r = Reader::new(frame);
        let header = ReplyHeader::decode(&mut r)?;
        let decoded = if header.xid == xid::NOTIFICATION {
            let event = WatcherEvent::decode(&mut r)?;
            ServerFrame::Notification(header, event)
        } else {
            let op = op_for(header.xid).ok_or(DecodeError::UnknownCode {
                at: "ReplyHeader.xid",
                offset: 0,
                value: header.xid,
            })?;
            let body = if header.err.is_ok() {
                Some(Response::decode(op, &mut r)?)
            } else {
                None
            };
            ServerFrame::Reply(header, body)
        };
        r.finish("ServerFrame")?;
        Ok(decoded)
    }
}
