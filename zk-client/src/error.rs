//! [`Error`]: everything a client operation can fail with.

use std::sync::Arc;

use zk_proto::{DecodeError, EncodeError, ErrorCode, FrameError, PathError};

/// Why an operation failed. One variant per ZooKeeper result code a client can meet, and one
/// per local failure; each says what to do. `Clone`, because one connection failure fails
/// every pending request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The node does not exist.
    #[error("node does not exist")]
    NoNode,
    /// The node already exists.
    #[error("node already exists")]
    NodeExists,
    /// The node's version is not the one given. Read it again and retry, or give up.
    #[error("version conflict")]
    BadVersion,
    /// The node has children; delete them first.
    #[error("node has children")]
    NotEmpty,
    /// Ephemeral nodes cannot have children.
    #[error("ephemeral nodes may not have children")]
    NoChildrenForEphemerals,
    /// The session's identities are not allowed to do this by the node's ACL.
    #[error("not authorized by the node's ACL")]
    NoAuth,
    /// The ACL is empty or malformed (e.g. `auth` ACL without any authenticated identity).
    #[error("invalid ACL")]
    InvalidAcl,
    /// The server rejected the credentials (of `add_auth`, or a SASL exchange: a wrong
    /// password); the session cannot be used.
    #[error("authentication failed")]
    AuthFailed,
    /// The server requires SASL authentication (`enforce.auth.enabled`) and this session did
    /// not authenticate: it closed the session. Configure SASL credentials
    /// (`ClientBuilder::sasl_digest`).
    #[error("the server requires SASL authentication and closed the session")]
    AuthRequired,
    /// The SASL exchange failed on our side: the server's answer was malformed, or it could
    /// not prove that it knows the password (DIGEST-MD5's `rspauth`). The session ended.
    #[error("SASL authentication failed: {0}")]
    Sasl(String),
    /// The session expired: its ephemeral nodes and watches are gone. Build a new client.
    #[error("session expired")]
    SessionExpired,
    /// The connection was lost before the reply arrived: the operation may or may not have
    /// been applied. Check, then retry if needed.
    #[error("connection lost; the operation may or may not have been applied")]
    ConnectionLoss,
    /// The session is not connected to a server (it is reconnecting), or the connection was
    /// lost before any byte of the request was written: the request was not sent, so it was
    /// surely not applied. Retry once connected.
    #[error("not connected to a server; the request was not sent")]
    NotConnected,
    /// The client was closed (or dropped), or its close gave up on the server, before any
    /// byte of the request was written: it was not sent. (A request written before a close
    /// that could not reach a server fails with [`Error::ConnectionLoss`].)
    #[error("client is closed")]
    Closed,
    /// The session moved to another server; retry.
    #[error("session moved to another server")]
    SessionMoved,
    /// A write reached a read-only server; wait for a read-write connection.
    #[error("server is read-only")]
    NotReadOnly,
    /// The watch to remove is not registered.
    #[error("no such watch")]
    NoWatcher,
    /// The server does not implement this operation (e.g. `whoAmI` before ZooKeeper 3.9, TTL
    /// nodes without `extendedTypesEnabled`).
    #[error("operation not implemented by this server")]
    Unimplemented,
    /// The server refused the arguments (e.g. a TTL out of range, a sequential container).
    #[error("bad arguments")]
    BadArguments,
    /// The server throttled the request; retry with back-off.
    #[error("request throttled by the server")]
    Throttled,
    /// A quota on the path was exceeded.
    #[error("quota exceeded")]
    QuotaExceeded,
    /// The server gave up on the request in time; retry.
    #[error("request timed out on the server")]
    RequestTimeout,
    /// A transaction ([`crate::Client::multi`]) was not applied because op `index` failed
    /// with `source`.
    #[error("transaction op {index} failed: {source}")]
    MultiFailed {
        /// The failing op's position.
        index: usize,
        /// Why it failed.
        source: Box<Error>,
    },
    /// Another server-side code (reconfiguration errors, system errors, codes newer than this
    /// client).
    #[error("server error {0}")]
    Server(ErrorCode),
    /// The path is not a valid ZooKeeper path; nothing was sent.
    #[error(transparent)]
    InvalidPath(#[from] PathError),
    /// The data (or whole request) is larger than the limit; nothing was sent. The server's
    /// `jute.maxbuffer` is about 1 MiB by default: split the data, or raise both limits.
    #[error("request of {len} bytes is over the limit of {max} bytes")]
    TooLarge {
        /// The size.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// An argument is not valid for this operation (e.g. an empty ACL, a TTL mode without a
    /// TTL, reads and writes mixed in one multi); nothing was sent.
    #[error("invalid argument: {0}")]
    InvalidArgument(&'static str),
    /// The server sent something that breaks the protocol; the connection was closed. A
    /// request that gets this was answered with a reply that cannot be read: it may have
    /// been applied ([`Error::is_uncertain`]).
    #[error(transparent)]
    Protocol(#[from] ProtocolError),
    /// No server answered within the connect timeout.
    #[error("could not connect to any server within the connect timeout")]
    ConnectTimeout,
    /// A server could not be reached: its name did not resolve, the connection was refused
    /// or failed, or it was accepted but no handshake answer came within the connect
    /// timeout. The first connection reports this when the connect string names one server
    /// ([`Error::NoServerReached`] when it names several).
    #[error("could not connect to {server}: {error}")]
    Unreachable {
        /// The server as written in the connect string (or its address).
        server: String,
        /// Why.
        error: IoError,
    },
    /// The first session could not be established: every server of the connect string was
    /// tried once, and each failed as its entry says (in the order tried).
    #[error("could not connect to any of the {} servers: {}", .failures.len(), list(.failures))]
    NoServerReached {
        /// Each server's failure, in the order tried.
        failures: Vec<Error>,
    },
    /// The server answered, but not in ZooKeeper's protocol (a wrong port: an HTTP server,
    /// say).
    #[error("{server} does not speak the ZooKeeper protocol ({detail})")]
    NotZooKeeper {
        /// The server's address.
        server: String,
        /// What it sent instead.
        detail: String,
    },
    /// A TLS connection to a server failed (feature `tls`); `failure` says which check.
    #[error("TLS with {server} failed: {failure}")]
    Tls {
        /// The server as written in the connect string (or its address).
        server: String,
        /// What failed.
        failure: TlsFailure,
    },
    /// The TLS settings cannot be used (a PEM that cannot be read, no root certificate).
    #[error("invalid TLS configuration: {0}")]
    TlsConfig(String),
    /// The connect string is not valid.
    #[error("invalid connect string {input:?}: {reason}")]
    InvalidHosts {
        /// The connect string.
        input: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// A socket operation failed.
    #[error("I/O error: {0}")]
    Io(IoError),
}

/// Why a TLS handshake failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TlsFailure {
    /// The server's certificate does not chain to a trusted root: give its CA.
    #[error("the server's certificate is signed by an unknown CA")]
    UnknownCa,
    /// The server's certificate does not name the server as we reached it.
    #[error(
        "the server's certificate is not valid for {expected:?} (set TlsConfig::server_name if it is reached by another name)"
    )]
    NameMismatch {
        /// The name checked (the host as written, or the configured server name).
        expected: String,
    },
    /// The server's certificate is unusable for another reason (expired, not yet valid,
    /// not for server authentication...).
    #[error("the server's certificate is invalid: {0}")]
    BadServerCertificate(String),
    /// The server requires a client certificate (mutual TLS, ZooKeeper's default
    /// `ssl.clientAuth=need`) and none is configured.
    #[error("the server requires a client certificate and none is configured")]
    ClientCertificateRequired,
    /// The server refused our client certificate (it does not trust its CA, say).
    #[error("the server refused our client certificate")]
    ClientCertificateRefused,
    /// The peer does not speak TLS (a plain client port, say).
    #[error("the server did not answer in TLS: is this its secure client port?")]
    NotTls,
    /// Any other handshake failure.
    #[error("{0}")]
    Handshake(String),
}

/// The ways a server can break the protocol. The connection is closed when one occurs and
/// every pending request fails with [`Error::ConnectionLoss`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProtocolError {
    /// A frame could not be decoded.
    #[error("malformed frame from server: {0}")]
    Decode(#[from] DecodeError),
    /// A frame's length prefix was negative or over the limit.
    #[error("bad frame from server: {0}")]
    Frame(#[from] FrameError),
    /// A reply's xid is not the one of the oldest pending request.
    #[error("reply xid {got} does not match the oldest pending request's xid {expected:?}")]
    UnexpectedXid {
        /// The oldest pending request's xid, if any.
        expected: Option<i32>,
        /// The reply's xid.
        got: i32,
    },
    /// The server's zxid went backwards, or another reply did not fit the request.
    #[error("unexpected reply: {0}")]
    Unexpected(&'static str),
}

impl From<EncodeError> for Error {
    fn from(e: EncodeError) -> Self {
        match e {
            EncodeError::FrameTooLarge { len, max } => Error::TooLarge { len, max },
            EncodeError::LengthOverflow { len, .. } => Error::TooLarge {
                len,
                max: i32::MAX as usize,
            },
            _ => Error::InvalidArgument("value cannot be encoded"),
        }
    }
}

impl From<DecodeError> for Error {
    fn from(e: DecodeError) -> Self {
        Error::Protocol(ProtocolError::Decode(e))
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Io(IoError(Arc::new(e)))
    }
}

impl Error {
    /// The error for a reply's result code; `None` for `Ok`.
    pub fn from_code(code: ErrorCode) -> Option<Error> {
        Some(match code {
            ErrorCode::Ok => return None,
            ErrorCode::NoNode => Error::NoNode,
            ErrorCode::NodeExists => Error::NodeExists,
            ErrorCode::BadVersion => Error::BadVersion,
            ErrorCode::NotEmpty => Error::NotEmpty,
            ErrorCode::NoChildrenForEphemerals => Error::NoChildrenForEphemerals,
            ErrorCode::NoAuth => Error::NoAuth,
            ErrorCode::InvalidAcl => Error::InvalidAcl,
            ErrorCode::AuthFailed => Error::AuthFailed,
            ErrorCode::SessionExpired => Error::SessionExpired,
            ErrorCode::ConnectionLoss => Error::ConnectionLoss,
            ErrorCode::SessionMoved => Error::SessionMoved,
            ErrorCode::NotReadOnly => Error::NotReadOnly,
            ErrorCode::NoWatcher => Error::NoWatcher,
            ErrorCode::Unimplemented => Error::Unimplemented,
            ErrorCode::BadArguments => Error::BadArguments,
            ErrorCode::ThrottledOp => Error::Throttled,
            ErrorCode::QuotaExceeded => Error::QuotaExceeded,
            ErrorCode::RequestTimeout => Error::RequestTimeout,
            other => Error::Server(other),
        })
    }

    /// Whether the operation may have been applied on the server even though it failed:
    /// it was written and its reply was lost with the connection ([`Error::ConnectionLoss`]),
    /// or the server answered with a reply that cannot be read ([`Error::Protocol`]). Every
    /// other error says the operation was not applied.
    pub fn is_uncertain(&self) -> bool {
        matches!(self, Error::ConnectionLoss | Error::Protocol(_))
    }
}

/// `a; b; c`: the failures of [`Error::NoServerReached`].
fn list(failures: &[Error]) -> String {
    failures
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// An I/O error, shareable between the requests it fails. Compares equal by kind.
#[derive(Debug, Clone)]
pub struct IoError(pub Arc<std::io::Error>);

impl PartialEq for IoError {
    fn eq(&self, other: &Self) -> bool {
        self.0.kind() == other.0.kind()
    }
}

impl Eq for IoError {}

impl std::fmt::Display for IoError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}
