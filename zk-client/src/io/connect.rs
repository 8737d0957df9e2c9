//! How the session task reaches a server: a [`Resolver`] for the connect string's names and a
//! [`Connect`] for the byte stream. Real ones by default (the system resolver, TCP); tests
//! give in-memory ones, so the whole task runs on tokio's paused clock.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

use crate::Error;

/// A boxed future, as the resolver and the connector return.
pub(crate) type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// Resolves a host name of the connect string, on each connection attempt (a server that
/// moves to a new address is found again, as the Java client's `StaticHostProvider` does).
pub(crate) type Resolver =
    Arc<dyn Fn(String, u16) -> BoxFuture<std::io::Result<Vec<SocketAddr>>> + Send + Sync>;

/// The system resolver (tokio's `lookup_host`).
pub(crate) fn system_resolver() -> Resolver {
    Arc::new(|host: String, port: u16| {
        Box::pin(async move {
            tokio::net::lookup_host((host.as_str(), port))
                .await
                .map(Iterator::collect)
        })
    })
}

/// Opens a byte stream to a server.
pub(crate) trait Connect: Send + Sync + 'static {
    /// The stream.
    type Stream: AsyncRead + AsyncWrite + Send + Unpin + 'static;

    /// Connects to `addr`, the address of `host` as the connect string names it (`None` for
    /// a server found otherwise: a read-write server found while on a read-only one). The
    /// error says what failed (for TLS: which check).
    fn connect(
        &self,
        host: Option<&str>,
        addr: SocketAddr,
    ) -> BoxFuture<Result<Self::Stream, Error>>;

    /// What a failed read or write on a stream to `addr` means, when the stream knows more
    /// than "the connection failed": a TLS 1.3 server refuses a client certificate (or its
    /// absence) only after the handshake, on the first read.
    fn explain(&self, _error: &std::io::Error, _addr: SocketAddr) -> Option<Error> {
        None
    }
}

/// The error for a server that could not be reached.
pub(crate) fn unreachable(server: &str, e: std::io::Error) -> Error {
    Error::Unreachable {
        server: server.to_owned(),
        error: crate::IoError(Arc::new(e)),
    }
}

/// TCP, with `TCP_NODELAY` (requests are small and pipelined).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Tcp;

impl Connect for Tcp {
    type Stream = TcpStream;

    fn connect(
        &self,
        _host: Option<&str>,
        addr: SocketAddr,
    ) -> BoxFuture<Result<TcpStream, Error>> {
        Box::pin(tcp(addr))
    }
}

/// A TCP connection to `addr`, with `TCP_NODELAY`.
pub(crate) async fn tcp(addr: SocketAddr) -> Result<TcpStream, Error> {
    let stream = TcpStream::connect(addr)
        .await
        .map_err(|e| unreachable(&addr.to_string(), e))?;
    let _ = stream.set_nodelay(true);
    Ok(stream)
}

/// A caller's dial function as a [`Connect`] (feature `transport`): `F` opens the byte
/// stream to an address; a failure is reported as the server being unreachable.
#[cfg(feature = "transport")]
pub(crate) struct Dial<F, S> {
    dial: F,
    _stream: std::marker::PhantomData<fn() -> S>,
}

#[cfg(feature = "transport")]
impl<F, S> Dial<F, S> {
    pub(crate) fn new(dial: F) -> Self {
        Self {
            dial,
            _stream: std::marker::PhantomData,
        }
    }
}

#[cfg(feature = "transport")]
impl<F, Fut, S> Connect for Dial<F, S>
where
    F: Fn(SocketAddr) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = std::io::Result<S>> + Send + 'static,
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    type Stream = S;

    fn connect(&self, _host: Option<&str>, addr: SocketAddr) -> BoxFuture<Result<S, Error>> {
        let opening = (self.dial)(addr);
        Box::pin(async move { opening.await.map_err(|e| unreachable(&addr.to_string(), e)) })
    }
}

/// A resolver that only reads IP literals (`127.0.0.1`, `::1`): no name service is asked,
/// so a connection over a caller's transport needs no network at all.
#[cfg(feature = "transport")]
pub(crate) fn literal_resolver() -> Resolver {
    Arc::new(|host: String, port: u16| {
        Box::pin(async move {
            host.parse::<std::net::IpAddr>()
                .map(|ip| vec![SocketAddr::new(ip, port)])
                .map_err(|_| {
                    std::io::Error::new(
                        std::io::ErrorKind::InvalidInput,
                        "connect_over takes IP addresses, not host names",
                    )
                })
        })
    })
}
