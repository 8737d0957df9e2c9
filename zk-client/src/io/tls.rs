//! [`TlsConnect`]: TCP, then a TLS handshake (feature `tls`), with the handshake's failures
//! told apart.

use std::net::SocketAddr;

use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;
use tokio_rustls::rustls::pki_types::ServerName;
use tokio_rustls::rustls::{self, AlertDescription, CertificateError};

use super::connect::{BoxFuture, Connect, tcp};
use crate::tls::TlsConfig;
use crate::{Error, TlsFailure};

/// Connects over TLS with one rustls configuration for every server and every reconnect.
pub(crate) struct TlsConnect {
    connector: TlsConnector,
    config: TlsConfig,
    identity: bool,
}

impl TlsConnect {
    /// The connector for `config`.
    pub(crate) fn new(config: TlsConfig) -> Result<Self, Error> {
        let rustls = config.build()?;
        Ok(Self {
            connector: TlsConnector::from(rustls),
            identity: config.has_identity(),
            config,
        })
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
        Box::pin(async move {
            let name = name?;
            let expected = name.to_str().into_owned();
            let stream = tcp(addr).await?;
            connector
                .connect(name, stream)
                .await
                .map_err(|e| Error::Tls {
                    server,
                    failure: classify(&e, &expected, identity),
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
            failure: classify(error, "", self.identity),
        })
    }
}

/// What a failed handshake means, in the user's terms.
pub(crate) fn classify(e: &std::io::Error, expected: &str, identity: bool) -> TlsFailure {
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
        )) => {
            if identity {
                TlsFailure::ClientCertificateRefused
            } else {
                TlsFailure::ClientCertificateRequired
            }
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
        assert_eq!(classify(&unknown, "h", false), TlsFailure::UnknownCa);
        let name = wrap(rustls::Error::InvalidCertificate(
            CertificateError::NotValidForName,
        ));
        assert_eq!(
            classify(&name, "zk.example", false),
            TlsFailure::NameMismatch {
                expected: "zk.example".into()
            }
        );
        let alert = wrap(rustls::Error::AlertReceived(
            AlertDescription::BadCertificate,
        ));
        assert_eq!(
            classify(&alert, "h", false),
            TlsFailure::ClientCertificateRequired
        );
        assert_eq!(
            classify(&alert, "h", true),
            TlsFailure::ClientCertificateRefused
        );
        let eof = std::io::Error::from(std::io::ErrorKind::UnexpectedEof);
        assert_eq!(classify(&eof, "h", false), TlsFailure::NotTls);
        let garbage = wrap(rustls::Error::InvalidMessage(
            rustls::InvalidMessage::InvalidContentType,
        ));
        assert_eq!(classify(&garbage, "h", false), TlsFailure::NotTls);
    }
}
