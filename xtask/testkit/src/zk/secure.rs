//! Secured servers: a TLS client port with certificates made for each ensemble
//! ([`TestPki`]), and SASL DIGEST-MD5 users in a JAAS file. What Debian's 3.8 server needs
//! for both is in `../shared/tls-sasl.md`: the Netty connection factory (with `netty-codec`
//! on the classpath, or every TLS connection fails while the plain port serves), PEM key and
//! trust stores, and TLS 1.2 unless 1.3 is enabled explicitly.

use std::fs;
use std::io::{self, Read as _, Write as _};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose, SanType,
};

/// Whether the server asks clients for a certificate (`ssl.clientAuth`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClientAuth {
    /// No client certificate asked for.
    #[default]
    None,
    /// Asked for, not required.
    Want,
    /// Required (ZooKeeper's own default): mutual TLS.
    Need,
}

/// A TLS client port on every member (`secureClientPort`), beside the plain one.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TlsOptions {
    /// Whether clients must present a certificate.
    pub client_auth: ClientAuth,
    /// Offer TLS 1.3 too (the server's default is TLS 1.2 only).
    pub tls13: bool,
}

/// SASL DIGEST-MD5 users, in the JAAS `Server` section every member reads.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SaslOptions {
    /// `(user, password)` pairs.
    pub users: Vec<(String, String)>,
    /// `enforce.auth.enabled`: every session must authenticate with SASL, or the server
    /// closes it at its first request.
    pub enforce: bool,
}

/// A CA, a server certificate for 127.0.0.1, ::1 and localhost signed by it, and a client
/// certificate (CN `zk-testkit-client`) signed by it: EC P-256, PKCS#8 keys, PEM files.
#[derive(Debug, Clone)]
pub struct TestPki {
    dir: PathBuf,
    ca_pem: String,
    client_cert_pem: String,
    client_key_pem: String,
}

/// The client certificate's common name (what `whoAmI` reports as `x509:`).
pub const CLIENT_CN: &str = "zk-testkit-client";

fn pki_error(e: rcgen::Error) -> io::Error {
    io::Error::other(format!("making test certificates: {e}"))
}

impl TestPki {
    /// Makes a new CA and its certificates, written under `dir` (created if missing).
    ///
    /// # Errors
    /// When a key cannot be made or a file written.
    pub fn generate(dir: &Path) -> io::Result<TestPki> {
        fs::create_dir_all(dir)?;
        let ca_key = KeyPair::generate().map_err(pki_error)?;
        let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(pki_error)?;
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        // A name of its own, so that another test PKI's CA is another issuer.
        let nonce = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        ca.distinguished_name.push(
            DnType::CommonName,
            format!("zk-testkit CA {}-{nonce}", std::process::id()),
        );
        let ca_cert = ca.self_signed(&ca_key).map_err(pki_error)?;

        let server_key = KeyPair::generate().map_err(pki_error)?;
        let mut server = CertificateParams::new(vec!["localhost".to_owned()]).map_err(pki_error)?;
        server.subject_alt_names.extend([
            SanType::IpAddress(IpAddr::V4(Ipv4Addr::LOCALHOST)),
            SanType::IpAddress(IpAddr::V6(Ipv6Addr::LOCALHOST)),
        ]);
        server.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        server
            .distinguished_name
            .push(DnType::CommonName, "zk-testkit-server");
        let server_cert = server
            .signed_by(&server_key, &ca_cert, &ca_key)
            .map_err(pki_error)?;

        let client_key = KeyPair::generate().map_err(pki_error)?;
        let mut client = CertificateParams::new(Vec::<String>::new()).map_err(pki_error)?;
        client.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        client
            .distinguished_name
            .push(DnType::CommonName, CLIENT_CN);
        let client_cert = client
            .signed_by(&client_key, &ca_cert, &ca_key)
            .map_err(pki_error)?;

        let pki = TestPki {
            dir: dir.to_owned(),
            ca_pem: ca_cert.pem(),
            client_cert_pem: client_cert.pem(),
            client_key_pem: client_key.serialize_pem(),
        };
        fs::write(pki.ca_path(), &pki.ca_pem)?;
        // Java's PEM key store: the key and the certificate in one file.
        fs::write(
            pki.server_keystore_path(),
            format!("{}{}", server_key.serialize_pem(), server_cert.pem()),
        )?;
        fs::write(pki.client_cert_path(), &pki.client_cert_pem)?;
        fs::write(pki.client_key_path(), &pki.client_key_pem)?;
        Ok(pki)
    }

    /// The CA certificate (PEM).
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// The client certificate (PEM).
    pub fn client_cert_pem(&self) -> &str {
        &self.client_cert_pem
    }

    /// The client key (PKCS#8 PEM).
    pub fn client_key_pem(&self) -> &str {
        &self.client_key_pem
    }

    /// `ca.pem`: the servers' trust store and the clients' root.
    pub fn ca_path(&self) -> PathBuf {
        self.dir.join("ca.pem")
    }

    /// `server-keystore.pem`: the server's key and certificate.
    pub fn server_keystore_path(&self) -> PathBuf {
        self.dir.join("server-keystore.pem")
    }

    /// `client.pem`: the client certificate.
    pub fn client_cert_path(&self) -> PathBuf {
        self.dir.join("client.pem")
    }

    /// `client-key.pem`: the client key.
    pub fn client_key_path(&self) -> PathBuf {
        self.dir.join("client-key.pem")
    }

    /// A rustls client configuration trusting this CA and presenting the client certificate.
    fn rustls_client(&self) -> io::Result<rustls::ClientConfig> {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let bad = |e: &dyn std::fmt::Display| io::Error::other(format!("test PKI: {e}"));
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(self.ca_pem.as_bytes()) {
            roots.add(cert.map_err(|e| bad(&e))?).map_err(|e| bad(&e))?;
        }
        let chain = CertificateDer::pem_slice_iter(self.client_cert_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| bad(&e))?;
        let key =
            PrivateKeyDer::from_pem_slice(self.client_key_pem.as_bytes()).map_err(|e| bad(&e))?;
        rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(|e| bad(&e))?
        .with_root_certificates(roots)
        .with_client_auth_cert(chain, key)
        .map_err(|e| bad(&e))
    }

    /// Completes a TLS handshake with the server at `addr` (as `127.0.0.1` or `::1`) and
    /// sends `ruok` over it: proof that the secure port serves, which a plain `srvr` on the
    /// client port is not (without `netty-codec` the secure port accepts and then fails every
    /// handshake). Returns the answer (`imok`).
    ///
    /// # Errors
    /// When the connection, the handshake or the exchange fails or takes over `timeout`.
    pub fn probe(&self, addr: SocketAddr, timeout: Duration) -> io::Result<String> {
        let config = Arc::new(self.rustls_client()?);
        let name = rustls::pki_types::ServerName::IpAddress(addr.ip().into());
        let mut conn = rustls::ClientConnection::new(config, name)
            .map_err(|e| io::Error::other(format!("TLS: {e}")))?;
        let mut sock = TcpStream::connect_timeout(&addr, timeout)?;
        sock.set_read_timeout(Some(timeout))?;
        sock.set_write_timeout(Some(timeout))?;
        let mut tls = rustls::Stream::new(&mut conn, &mut sock);
        tls.write_all(b"ruok")?;
        tls.flush()?;
        let mut answer = String::new();
        match tls.read_to_string(&mut answer) {
            Ok(_) => {}
            // The server closes without close_notify after a four-letter word.
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof && !answer.is_empty() => {}
            Err(e) => return Err(e),
        }
        Ok(answer)
    }
}

/// The `zoo.cfg` lines for a TLS client port on `port`.
pub(crate) fn tls_config(opts: &TlsOptions, pki: &TestPki, port: u16) -> Vec<(String, String)> {
    let mut lines = vec![
        ("secureClientPort", port.to_string()),
        ("secureClientPortAddress", "127.0.0.1".to_owned()),
        (
            "serverCnxnFactory",
            "org.apache.zookeeper.server.NettyServerCnxnFactory".to_owned(),
        ),
        (
            "ssl.keyStore.location",
            pki.server_keystore_path().display().to_string(),
        ),
        ("ssl.keyStore.type", "PEM".to_owned()),
        (
            "ssl.trustStore.location",
            pki.ca_path().display().to_string(),
        ),
        ("ssl.trustStore.type", "PEM".to_owned()),
        (
            "ssl.clientAuth",
            match opts.client_auth {
                ClientAuth::None => "none",
                ClientAuth::Want => "want",
                ClientAuth::Need => "need",
            }
            .to_owned(),
        ),
    ];
    if opts.tls13 {
        lines.push(("ssl.enabledProtocols", "TLSv1.3,TLSv1.2".to_owned()));
        lines.push((
            "ssl.ciphersuites",
            "TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384,\
             TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"
                .to_owned(),
        ));
    }
    lines.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

/// The `zoo.cfg` lines for SASL.
pub(crate) fn sasl_config(opts: &SaslOptions) -> Vec<(String, String)> {
    let mut lines = vec![(
        "authProvider.1".to_owned(),
        "org.apache.zookeeper.server.auth.SASLAuthenticationProvider".to_owned(),
    )];
    if opts.enforce {
        lines.push(("enforce.auth.enabled".to_owned(), "true".to_owned()));
        lines.push(("enforce.auth.schemes".to_owned(), "sasl".to_owned()));
    }
    lines
}

/// Writes the JAAS file with the users; returns its path (for
/// `-Djava.security.auth.login.config`).
pub(crate) fn write_jaas(opts: &SaslOptions, dir: &Path) -> io::Result<PathBuf> {
    let mut users = String::new();
    for (user, password) in &opts.users {
        let ok = |s: &str| {
            s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        };
        if !ok(user) || !ok(password) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("SASL test user {user:?}: use letters, digits, '-', '_' and '.'"),
            ));
        }
        users.push_str(&format!(" user_{user}=\"{password}\""));
    }
    let path = dir.join("server-jaas.conf");
    fs::write(
        &path,
        format!(
            "Server {{\n  org.apache.zookeeper.server.auth.DigestLoginModule required{users};\n}};\n"
        ),
    )?;
    Ok(path)
}
