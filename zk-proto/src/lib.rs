//! A hand-written codec for ZooKeeper's wire protocol (jute), for a client of ZooKeeper 3.8.
//!
//! It holds every record a client sends or receives ([`records`], [`multi`]), the opcodes
//! ([`OpCode`]), result codes ([`ErrorCode`]), watch events ([`EventType`], [`KeeperState`]),
//! create and watch modes, path validation ([`validate_path`]), and frame splitting with a
//! size limit ([`split_frame`]); and it reads the server's own files, the transaction log
//! ([`txnlog`]) and the snapshot ([`snapshot`]), from bytes or a reader given to it. It is
//! **not** a client: it does no IO, starts no tasks and
//! reads no clock; `zk-client` drives it over a socket.
//!
//! Decoding is total: any byte string gives a value or a [`DecodeError`] saying which field at
//! which offset is wrong, never a panic, and nothing is allocated by a length read from the
//! wire before the bytes it announces are there. Encoding produces the bytes Java's jute
//! classes produce, checked by `cargo xtask conformance` against ZooKeeper's own jars.
//!
//! # Trailing bytes
//!
//! A newer server may append fields to a record; Java's client reads the fields it knows and
//! ignores whatever follows, in every frame from the server: the handshake's
//! `ConnectResponse` (after `readOnly`), a reply (after its body, or after the header of an
//! error reply), a watch notification (after its `WatcherEvent`), a SASL reply. A client of
//! this crate does the same: [`Decode::decode_prefix`] for the `ConnectResponse`, and for
//! replies and notifications a [`Reader`] that is not [`finish`](Reader::finish)ed. What is
//! still refused is what Java cannot read either: a frame shorter than its fields, and a
//! length prefix (of a string, a buffer, a vector) that runs past the end of the frame.
//!
//! The strict decoders stay for whoever checks bytes exactly (conformance against the Java
//! classes, tests, a server reading a client): [`Decode::decode_exact`] and
//! [`ServerFrame::decode`] refuse trailing bytes with [`DecodeError::TrailingBytes`].
//!
//! # Examples
//!
//! Decode a reply frame to a `getChildren` request:
//!
//! ```
//! use zk_proto::{OpCode, Response, ServerFrame, records::GetChildrenResponse};
//!
//! let frame = [
//!     0, 0, 0, 5, // xid 5
//!     0, 0, 0, 0, 0, 0, 0, 9, // zxid 9
//!     0, 0, 0, 0, // err Ok
//!     0, 0, 0, 1, 0, 0, 0, 1, b'a', // children ["a"]
//! ];
//! let decoded = ServerFrame::decode(&frame, |xid| (xid == 5).then_some(OpCode::GetChildren)).unwrap();
//! let ServerFrame::Reply(header, Some(Response::GetChildren(body))) = decoded else { panic!() };
//! assert_eq!(header.zxid, 9);
//! assert_eq!(body, GetChildrenResponse { children: vec!["a".into()] });
//!
//! // One byte short: an error, not a panic.
//! assert!(ServerFrame::decode(&frame[..frame.len() - 1], |_| Some(OpCode::GetChildren)).is_err());
//! ```

mod codec;
mod error;
mod error_code;
mod event;
mod frame;
mod header;
mod java_utf8;
mod mode;
pub mod multi;
mod opcode;
mod path;
mod reader;
pub mod records;
mod request;
mod response;
pub mod snapshot;
pub mod txnlog;

pub use codec::{Decode, Encode, Visit, Visitor};
pub use error::{DecodeError, EncodeError, FrameError};
pub use error_code::ErrorCode;
pub use event::{EventType, KeeperState};
pub use frame::{DEFAULT_MAX_FRAME_LEN, encode_frame, split_frame};
pub use header::{MultiHeader, ReplyHeader, RequestHeader, xid};
pub use mode::{AddWatchMode, CreateMode, WatcherType};
pub use multi::{MultiOp, MultiRequest, MultiResponse, MultiResult};
pub use opcode::OpCode;
pub use path::{PathError, validate_path};
pub use reader::Reader;
pub use records::WatcherEvent;
pub use request::Request;
pub use response::{Response, ServerFrame};
