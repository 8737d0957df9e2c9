//! TLS settings (feature `tls`): [`TlsConfig`], for servers' secure client port
//! (`secureClientPort`).
//!
//! rustls with the `ring` provider; TLS 1.2 and 1.3 (ZooKeeper 3.8 offers 1.2 unless its
//! `ssl.enabledProtocols` says otherwise). Every connection of the session — the first, each
//! reconnect, each server of the connect string, the search for a read-write server — goes
//! through the same setup and the same checks.
//!
//! # Examples
//!
//! ```no_run
//! use zk_client::{Client, tls::TlsConfig};
//!
//! # async fn f() -> Result<(), zk_client::Error> {
//! let tls = TlsConfig::new()
//!     .ca_pem_file("/etc/zookeeper/ca.pem")?
//!     // Mutual TLS, for servers with `ssl.clientAuth=need` (their default):
//!     .client_identity_pem_files("/etc/zookeeper/client.pem", "/etc/zookeeper/client-key.pem")?;
//! let client = Client::builder().hosts("zk1.example.com:2281").tls(tls).connect().await?;
//! # Ok(()) }
//! ```

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::{ClientConfig, RootCertStore};

use crate::Error;

/// The rustls this crate is built with, for [`TlsConfig::from_rustls`].
pub use tokio_rustls::rustls;

/// How to reach the servers over TLS. Give it to [`ClientBuilder::tls`](crate::ClientBuilder::tls).
///
/// The server's certificate must chain to one of the root certificates given here and name
/// the server: by default the host as the connect string writes it (a DNS name, or an IP
/// address, checked against the certificate's IP SANs), or the name set with
/// [`TlsConfig::server_name`].
#[derive(Clone, Default)]
pub struct TlsConfig {
    roots: Vec<CertificateDer<'static>>,
    identity: Option<(Vec<CertificateDer<'static>>, Arc<PrivateKeyDer<'static>>)>,
    server_name: Option<String>,
    rustls: Option<Arc<ClientConfig>>,
}

impl fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // No key material, ever.
        f.debug_struct("TlsConfig")
            .field("roots", &self.roots.len())
            .field("client_identity", &self.identity.is_some())
            .field("server_name", &self.server_name)
            .field("custom_rustls_config", &self.rustls.is_some())
            .finish()
    }
}

impl TlsConfig {
    /// No root certificate yet: add at least one with [`TlsConfig::ca_pem`] or
    /// [`TlsConfig::ca_pem_file`].
    pub fn new() -> Self {
        Self::default()
    }

    /// Trusts the CA certificates in `pem` (one or more `CERTIFICATE` blocks).
    ///
    /// # Errors
    /// [`Error::TlsConfig`] when `pem` holds no certificate or one that cannot be read.
    pub fn ca_pem(mut self, pem: &[u8]) -> Result<Self, Error> {
        let certs = certificates(pem, "CA")?;
        self.roots.extend(certs);
        Ok(self)
    }

    /// Trusts the CA certificates in the PEM file at `path`.
    ///
    /// # Errors
    /// [`Error::TlsConfig`] when the file cannot be read or holds no certificate.
    pub fn ca_pem_file(self, path: impl AsRef<Path>) -> Result<Self, Error> {
        let pem = read(path.as_ref())?;
        self.ca_pem(&pem)
    }

    /// Presents this certificate chain (leaf first) and private key (PKCS#8, PKCS#1 or SEC1)
    /// to servers that ask for one (mutual TLS: ZooKeeper's `ssl.clientAuth=need`, its
    /// default, or `want`).
    ///
    /// # Errors
    /// [`Error::TlsConfig`] when either holds nothing usable.
    pub fn client_identity_pem(mut self, chain_pem: &[u8], key_pem: &[u8]) -> Result<Self, Error> {
        let chain = certificates(chain_pem, "client")?;
        let key = PrivateKeyDer::from_pem_slice(key_pem)
            .map_err(|e| Error::TlsConfig(format!("no usable private key in the PEM: {e}")))?;
        self.identity = Some((chain, Arc::new(key)));
        Ok(self)
    }

    /// [`TlsConfig::client_identity_pem`] from files (they may be the same file).
    ///
    /// # Errors
    /// [`Error::TlsConfig`] when a file cannot be read or holds nothing usable.
    pub fn client_identity_pem_files(
        self,
        chain: impl AsRef<Path>,
        key: impl AsRef<Path>,
    ) -> Result<Self, Error> {
        let (chain, key) = (read(chain.as_ref())?, read(key.as_ref())?);
        self.client_identity_pem(&chain, &key)
    }

    /// The name every server's certificate must carry, instead of the host as the connect
    /// string writes it (for servers reached by an address or an alias their certificates do
    /// not name). A DNS name or an IP address.
    pub fn server_name(mut self, name: impl Into<String>) -> Self {
        self.server_name = Some(name.into());
        self
    }

    /// Uses a rustls configuration made elsewhere (its roots, client identity, versions and
    /// verifier) instead of the settings above; only [`TlsConfig::server_name`] still
    /// applies.
    pub fn from_rustls(config: Arc<ClientConfig>) -> Self {
        Self {
            rustls: Some(config),
            ..Self::default()
        }
    }

    /// The name to check the certificate of `host` against.
    pub(crate) fn name_for(&self, host: Option<&str>) -> Option<String> {
        self.server_name.clone().or_else(|| host.map(str::to_owned))
    }

    /// Whether a client certificate is offered (for telling why a server refused us).
    pub(crate) fn has_identity(&self) -> bool {
        self.identity.is_some()
            || self
                .rustls
                .as_ref()
                .is_some_and(|c| c.client_auth_cert_resolver.has_certs())
    }

    /// The rustls configuration: TLS 1.2 and 1.3, the `ring` provider.
    pub(crate) fn build(&self) -> Result<Arc<ClientConfig>, Error> {
        if let Some(config) = &self.rustls {
            return Ok(config.clone());
        }
        if self.roots.is_empty() {
            return Err(Error::TlsConfig(
                "no root certificate: give the CA with TlsConfig::ca_pem or ca_pem_file".into(),
            ));
        }
        let mut roots = RootCertStore::empty();
        for cert in &self.roots {
            roots
                .add(cert.clone())
                .map_err(|e| Error::TlsConfig(format!("unusable CA certificate: {e}")))?;
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
            .map_err(|e| Error::TlsConfig(e.to_string()))?
            .with_root_certificates(roots);
        let config = match &self.identity {
            None => builder.with_no_client_auth(),
            Some((chain, key)) => builder
                .with_client_auth_cert(chain.clone(), key.clone_key())
                .map_err(|e| {
                    Error::TlsConfig(format!("unusable client certificate or key: {e}"))
                })?,
        };
        Ok(Arc::new(config))
    }
}

fn read(path: &Path) -> Result<Vec<u8>, Error> {
    std::fs::read(path).map_err(|e| Error::TlsConfig(format!("reading {}: {e}", path.display())))
}

fn certificates(pem: &[u8], what: &str) -> Result<Vec<CertificateDer<'static>>, Error> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Error::TlsConfig(format!("unreadable {what} certificate PEM: {e}")))?;
    if certs.is_empty() {
        return Err(Error::TlsConfig(format!(
            "no CERTIFICATE block in the {what} certificate PEM"
        )));
    }
    Ok(certs)
}
