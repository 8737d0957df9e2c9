//! [`ErrorCode`]: the `err` of a `ReplyHeader`, from Java's `KeeperException.Code`.

use bytes::{BufMut, BytesMut};

use crate::{Decode, DecodeError, Encode, EncodeError, Reader, Visit, Visitor};

macro_rules! error_codes {
    ($( $(#[$vmeta:meta])* $variant:ident = $value:literal ),* $(,)?) => {
        /// A ZooKeeper result code (`KeeperException.Code`).
        ///
        /// Codes a newer server may add decode as [`ErrorCode::Unknown`] rather than failing, so
        /// that a reply the client does not fully understand still completes its request with an
        /// error instead of tearing down the session.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
        #[non_exhaustive]
        pub enum ErrorCode {
            $( $(#[$vmeta])* $variant, )*
            /// A code this crate does not know.
            Unknown(i32),
        }

        impl ErrorCode {
            /// Every known code.
            pub const ALL: &'static [ErrorCode] = &[ $( ErrorCode::$variant ),* ];

            /// The value on the wire.
            pub const fn code(self) -> i32 {
                match self {
                    $( ErrorCode::$variant => $value, )*
                    ErrorCode::Unknown(code) => code,
                }
            }

            /// The code for a wire value; unknown values give [`ErrorCode::Unknown`].
            pub const fn from_code(code: i32) -> Self {
                match code {
                    $( $value => ErrorCode::$variant, )*
                    other => ErrorCode::Unknown(other),
                }
            }

            /// The name Java gives the code (`NONODE`, ...).
            pub const fn name(self) -> &'static str {
                match self {
                    $( ErrorCode::$variant => stringify!($variant), )*
                    ErrorCode::Unknown(_) => "Unknown",
                }
            }
        }
    };
}

error_codes! {
    /// Success.
    #[default]
    Ok = 0,
    /// Marks the range of system errors; not sent by servers.
    SystemError = -1,
    /// A runtime inconsistency was found (in a failed multi: this op was rolled back).
    RuntimeInconsistency = -2,
    /// A data inconsistency was found.
    DataInconsistency = -3,
    /// The connection to the server was lost.
    ConnectionLoss = -4,
    /// Error while marshalling or unmarshalling data.
    MarshallingError = -5,
    /// The operation is not implemented by this server.
    Unimplemented = -6,
    /// The operation timed out.
    OperationTimeout = -7,
    /// Invalid arguments.
    BadArguments = -8,
    /// Unknown session (server-internal).
    UnknownSession = -12,
    /// No quorum of the new configuration is connected and up to date.
    NewConfigNoQuorum = -13,
    /// Another reconfiguration is in progress.
    ReconfigInProgress = -14,
    /// Marks the range of API errors; not sent by servers.
    ApiError = -100,
    /// The node does not exist.
    NoNode = -101,
    /// Not authorized.
    NoAuth = -102,
    /// Version conflict.
    BadVersion = -103,
    /// Ephemeral nodes may not have children.
    NoChildrenForEphemerals = -108,
    /// The node already exists.
    NodeExists = -110,
    /// The node has children.
    NotEmpty = -111,
    /// The session has been expired by the server.
    SessionExpired = -112,
    /// Invalid callback.
    InvalidCallback = -113,
    /// Invalid ACL.
    InvalidAcl = -114,
    /// Client authentication failed.
    AuthFailed = -115,
    /// The session moved to another server; the operation was ignored.
    SessionMoved = -118,
    /// A state-changing request reached a read-only server.
    NotReadOnly = -119,
    /// Ephemeral node on a local session.
    EphemeralOnLocalSession = -120,
    /// The watch to remove does not exist.
    NoWatcher = -121,
    /// The request did not complete within the allowed time.
    RequestTimeout = -122,
    /// Reconfiguration is disabled.
    ReconfigDisabled = -123,
    /// The server requires SASL authentication and closed the session.
    SessionClosedRequireSaslAuth = -124,
    /// A quota on the path was exceeded.
    QuotaExceeded = -125,
    /// The server throttled the operation; retry with back-off.
    ThrottledOp = -127,
}

impl ErrorCode {
    /// Whether this is [`ErrorCode::Ok`].
    pub const fn is_ok(self) -> bool {
        matches!(self, ErrorCode::Ok)
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.name(), self.code())
    }
}

impl Decode for ErrorCode {
    const MIN_LEN: usize = 4;
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        r.i32().map(ErrorCode::from_code)
    }
}

impl Encode for ErrorCode {
    fn encoded_len(&self) -> usize {
        4
    }
    fn encode(&self, out: &mut BytesMut) -> Result<(), EncodeError> {
        out.put_i32(self.code());
        Ok(())
    }
}

impl Visit for ErrorCode {
    fn visit(&self, tag: &str, v: &mut dyn Visitor) {
        v.int(tag, self.code());
    }
}
