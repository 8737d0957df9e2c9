//! [`TlsConnect`]: TCP, then a TLS handshake (feature `tls`), with the handshake's failures
//! told apart.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;
use tokio_rustls::rustls::client::ResolvesClientCert;
use tokio_rustls::rustls::pki_types::ServerName;
use tokio_rustls::rustls::{self, AlertDescription, CertificateError, SignatureScheme, sign};

use super::connect::{BoxFuture, Connect, tcp};
use crate::tls::TlsConfig;
use crate::{Error, TlsFailure};

/// Connects over TLS with one rustls configuration for every server and every reconnect.
pub(crate) struct TlsConnect {
    connector: TlsConnector,
    config: TlsConfig,
    identity: bool,
    /// Whether the server of the latest handshake asked for a client certificate (see
    /// [`NoteRequest`]).
    asked: Arc<AtomicBool>,
}

impl TlsConnect {
    /// The connector for `config`.
    pub(crate) fn new(config: TlsConfig) -> Result<Self, Error> {
        let built = config.build()?;
        let asked = Arc::new(AtomicBool::new(false));
        let mut rustls = (*built).clone();
        rustls.client_auth_cert_resolver = Arc::new(NoteRequest {
            inner: built.client_auth_cert_resolver.clone(),
            asked: asked.clone(),
        });
        Ok(Self {
            connector: TlsConnector::from(Arc::new(rustls)),
            identity: config.has_identity(),
            config,
            asked,
        })
    }
}

/// The configured client-certificate resolver, noting whether a server asked for a
/// certificate: servers answer a missing one with differing alerts (`bad_certificate`,
/// `certificate_required`, and newer JDKs `handshake_failure`, which also means no common
/// cipher or version), so the request itself is what tells the cases apart. Connections of a
/// session are made one at a time (a read-write probe aside, which at worst blurs a message).
#[derive(Debug)]
struct NoteRequest {
    inner: Arc<dyn ResolvesClientCert>,
    asked: Arc<AtomicBool>,
}

impl ResolvesClientCert for NoteRequest {
    fn resolve(
        &self,
        root_hint_subjects: &[&[u8]],
        sigschemes: &[SignatureScheme],
    ) -> Option<Arc<sign::CertifiedKey>> {
        self.asked.store(true, Ordering::Relaxed);
        self.inner.resolve(root_hint_subjects, sigschemes)
    }

    fn only_raw_public_keys(&self) -> bool {
        self.inner.only_raw_public_keys()
    }

    fn has_certs(&self) -> bool {
        self.inner.has_certs()
    }
}

impl Connect for TlsConnect {
    type Stream = TlsStream<TcpStream>;

    fn connect(
        &self,
        host: Option<&str>,
        addr: SocketAddr,
    ) -> BoxFuture<Result<Self::Stream, Error>> {
        let server = addr.to_string();
        let name = match self.config.name_for(host) {
            Some(name) => ServerName::try_from(name.clone()).map_err(|_| Error::Tls {
                server: server.clone(),
                failure: TlsFailure::Handshake(format!("{name:?} is not a valid server name")),
            }),
            None => Ok(ServerName::IpAddress(addr.ip().into())),
        };
        let (connector, identity) = (self.connector.clone(), self.identity);
        let asked = self.asked.clone();
        Box::pin(async move {
            let name = name?;
            let expected = name.to_str().into_owned();
            let stream = tcp(addr).await?;
            asked.store(false, Ordering::Relaxed);
            connector
                .connect(name, stream)
                .await
                .map_err(|e| Error::Tls {
                    server,
                    failure: classify(&e, &expected, identity, asked.load(Ordering::Relaxed)),
                })
        })
    }

    fn explain(&self, error: &std::io::Error, addr: SocketAddr) -> Option<Error> {
        // Only TLS's own errors (an alert from the server); a reset is just a reset.
        error
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<rustls::Error>())?;
        Some(Error::Tls {
            server: addr.to_string(),
            failure: classify(error, "", self.identity, self.asked.load(Ordering::Relaxed)),
        })
    }
}

/// What a failed handshake means, in the user's terms. `identity`: we have a client
/// certificate to present; `asked`: the server asked for one.
pub(crate) fn classify(
    e: &std::io::Error,
    expected: &str,
    identity: bool,
    asked: bool,
) -> TlsFailure {
    let about_our_certificate = || {
        if identity {
            TlsFailure::ClientCertificateRefused
        } else {
            TlsFailure::ClientCertificateRequired
        }
    };
    let inner = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>());
    match inner {
        Some(rustls::Error::InvalidCertificate(c)) => match c {
            // A CA of the same name but another key signed it: not ours either.
            CertificateError::UnknownIssuer | CertificateError::BadSignature => {
                TlsFailure::UnknownCa
            }
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
                TlsFailure::NameMismatch {
                    expected: expected.to_owned(),
                }
            }
            other => TlsFailure::BadServerCertificate(format!("{other:?}")),
        },
        Some(rustls::Error::AlertReceived(
            AlertDescription::BadCertificate
            | AlertDescription::CertificateRequired
            | AlertDescription::CertificateUnknown
            | AlertDescription::UnknownCA
            | AlertDescription::UnsupportedCertificate
            | AlertDescription::CertificateRevoked
            | AlertDescription::CertificateExpired,
        )) => about_our_certificate(),
        // A generic refusal: about our certificate only if the server asked for one.
        Some(rustls::Error::AlertReceived(AlertDescription::HandshakeFailure)) if asked => {
            about_our_certificate()
        }
        Some(rustls::Error::InvalidMessage(_) | rustls::Error::InappropriateMessage { .. }) => {
            TlsFailure::NotTls
        }
        Some(other) => TlsFailure::Handshake(other.to_string()),
        // The server hung up on our hello: a plain ZooKeeper port reads it as a frame length
        // far over its limit and closes.
        None if e.kind() == std::io::ErrorKind::UnexpectedEof => TlsFailure::NotTls,
        None => TlsFailure::Handshake(e.to_string()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn wrap(e: rustls::Error) -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::InvalidData, e)
    }

    #[test]
    fn handshake_failures_are_told_apart() {
        let unknown = wrap(rustls::Error::InvalidCertificate(
            CertificateError::UnknownIssuer,
        ));
        assert_eq!(classify(&unknown, "h", false, false), TlsFailure::UnknownCa);
        let name = wrap(rustls::Error::InvalidCertificate(
            CertificateError::NotValidForName,
        ));
        assert_eq!(
            classify(&name, "zk.example", false, false),
            TlsFailure::NameMismatch {
                expected: "zk.example".into()
            }
        );
        let alert = wrap(rustls::Error::AlertReceived(
            AlertDescription::BadCertificate,
        ));
        assert_eq!(
            classify(&alert, "h", false, true),
            TlsFailure::ClientCertificateRequired
        );
        assert_eq!(
            classify(&alert, "h", true, true),
            TlsFailure::ClientCertificateRefused
        );
        let eof = std::io::Error::from(std::io::ErrorKind::UnexpectedEof);
        assert_eq!(classify(&eof, "h", false, false), TlsFailure::NotTls);
        let garbage = wrap(rustls::Error::InvalidMessage(
            rustls::InvalidMessage::InvalidContentType,
        ));
        assert_eq!(classify(&garbage, "h", false, false), TlsFailure::NotTls);
        // Newer JDKs refuse a missing client certificate with handshake_failure: ours only
        // when the server asked for one (else: no common cipher or version, say).
        let refused = wrap(rustls::Error::AlertReceived(
            AlertDescription::HandshakeFailure,
        ));
        assert_eq!(
            classify(&refused, "h", false, true),
            TlsFailure::ClientCertificateRequired
        );
        assert!(matches!(
            classify(&refused, "h", false, false),
            TlsFailure::Handshake(_)
        ));
    }
}
