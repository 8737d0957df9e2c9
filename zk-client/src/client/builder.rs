//! [`ClientBuilder`]: how a session is set up (hosts, timeouts, limits, credentials, TLS,
//! SASL) and started.

use std::future::Future;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::{broadcast, mpsc, oneshot, watch};

use super::state_stream::STATE_STREAM_CAPACITY;
use super::{Client, ClientId, Inner};
use crate::chroot::Chroot;
use crate::io::{Link, SessionTask};
use crate::reply::Replies;
use crate::session::{Session, SessionConfig, SessionState};
use crate::{ConnectString, Error};

/// The default limit on a request's encoded size (its frame, without the 4-byte length
/// prefix): ZooKeeper's default `jute.maxbuffer`, `0xfffff` (1,048,575 bytes), which the
/// server checks every request's length against. See [`ClientBuilder::max_request_len`].
pub const DEFAULT_MAX_REQUEST_LEN: usize = zk_proto::DEFAULT_MAX_FRAME_LEN;

/// The largest data a `set_data` on a one-character path (`/a`) can carry within the default
/// request limit: [`DEFAULT_MAX_REQUEST_LEN`] less the request's other 22 bytes (header 8,
/// path 4 + 2, data length 4, version 4), 1,048,553 bytes. It is a figure, not a limit: by
/// default data is limited only by the encoded size of the whole request (a longer path, an
/// ACL, a transaction leave less room), as the server limits it.
pub const DEFAULT_MAX_DATA_LEN: usize = DEFAULT_MAX_REQUEST_LEN - 22;

/// Builds a [`Client`]. See [`Client::builder`](crate::Client::builder).
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
/// use zk_client::{Client, Error, SessionState};
///
/// # async fn f() -> Result<(), Error> {
/// let client = Client::builder()
///     .hosts("10.0.0.1:2181,10.0.0.2:2181,10.0.0.3:2181/app") // a chroot after the hosts
///     .session_timeout(Duration::from_secs(10)) // how long a crashed holder blocks others
///     .connect_timeout(Duration::from_secs(5))
///     .digest_auth("app", "secret")
///     .connect()
///     .await?;
/// assert_eq!(client.state(), SessionState::Connected);
///
/// // Nothing answers: the error names what failed.
/// if let Err(e) = Client::builder().hosts("127.0.0.1:1").connect().await {
///     eprintln!("no session: {e}");
/// }
/// client.close().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct ClientBuilder {
    hosts: String,
    session: SessionConfig,
    auth: Vec<(String, Bytes)>,
    max_data_len: usize,
    close_timeout: Duration,
    resume: Option<(i64, Bytes)>,
    #[cfg(feature = "tls")]
    tls: Option<crate::tls::TlsConfig>,
    #[cfg(feature = "sasl-digest")]
    sasl: Option<crate::sasl::digest::DigestMd5>,
}

/// The node that holds the ensemble's dynamic configuration (ZooKeeper's `CONFIG_NODE`).
pub const CONFIG_NODE: &str = "/zookeeper/config";

/// How long [`Client::close`](crate::Client::close) tries to reach a server by default.
pub const DEFAULT_CLOSE_TIMEOUT: Duration = Duration::from_secs(2);

impl ClientBuilder {
    /// Default settings and no hosts ([`Client::builder`](crate::Client::builder)).
    pub(super) fn new() -> Self {
        ClientBuilder {
            hosts: String::new(),
            session: SessionConfig::default(),
            auth: Vec::new(),
            max_data_len: usize::MAX,
            close_timeout: DEFAULT_CLOSE_TIMEOUT,
            resume: None,
            #[cfg(feature = "tls")]
            tls: None,
            #[cfg(feature = "sasl-digest")]
            sasl: None,
        }
        .max_request_len(DEFAULT_MAX_REQUEST_LEN)
    }

    /// The servers: `"host1:port1,host2:port2/optional/chroot"` (IPv6 as `[::1]:2181`).
    pub fn hosts(mut self, hosts: impl Into<String>) -> Self {
        self.hosts = hosts.into();
        self
    }

    /// The session timeout to ask for (default 30 s). The server clamps it, silently, to
    /// between `minSessionTimeout` and `maxSessionTimeout` (by default 2 and 20 ticks: 4 s
    /// and 40 s with the usual 2 s tick); [`Client::session_timeout`](crate::Client::session_timeout) says what was granted.
    pub fn session_timeout(mut self, timeout: Duration) -> Self {
        self.session.session_timeout = timeout;
        self
    }

    /// How long one connection attempt (name resolution, TCP connect and handshake) may take
    /// (default 10 s). Once a session exists, an attempt takes at most the negotiated session
    /// timeout divided by the number of servers, and by three when fewer
    /// ([`MIN_ATTEMPTS_PER_SESSION`](crate::session::MIN_ATTEMPTS_PER_SESSION)), so that a
    /// server that accepts connections but never answers cannot use up the session.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.session.connect_timeout = timeout;
        self
    }

    /// Accept read-only servers (`canBeReadOnly`; default false).
    pub fn can_be_read_only(mut self, yes: bool) -> Self {
        self.session.can_be_read_only = yes;
        self
    }

    /// Authenticates the session with `digest` credentials right after connecting.
    pub fn digest_auth(self, user: &str, password: &str) -> Self {
        self.auth("digest", format!("{user}:{password}").into_bytes())
    }

    /// Authenticates the session with any scheme right after connecting.
    pub fn auth(mut self, scheme: &str, credentials: impl Into<Bytes>) -> Self {
        self.auth.push((scheme.to_owned(), credentials.into()));
        self
    }

    /// How long [`Client::close`](crate::Client::close) (and dropping the last handle) tries to close the session
    /// on the server while no server is connected (default [`DEFAULT_CLOSE_TIMEOUT`]); after
    /// that the client is closed here and the server expires the session after its timeout.
    pub fn close_timeout(mut self, timeout: Duration) -> Self {
        self.close_timeout = timeout;
        self
    }

    /// Resumes an existing session instead of starting a new one: its id and password, as
    /// [`Client::session_id`](crate::Client::session_id) and [`Client::session_password`](crate::Client::session_password) gave them to another client (a
    /// process handing its session, and its ephemeral nodes and locks, to its successor). The
    /// other client must have stopped using it: two clients on one session take it from
    /// each other. If the ensemble expired it, [`ClientBuilder::connect`] fails with
    /// [`Error::SessionExpired`]. Watches and credentials are not carried over.
    pub fn resume_session(mut self, session_id: i64, password: impl Into<Bytes>) -> Self {
        self.resume = Some((session_id, password.into()));
        self
    }

    /// A limit of its own on node data: larger data fails with [`Error::TooLarge`] (`max` is
    /// `len`) before anything is sent. By default there is none: data is limited by the
    /// request's encoded size ([`ClientBuilder::max_request_len`]). Also sets the request
    /// limit to `len` plus 1 KiB (the rest of a request), for servers whose
    /// `jute.maxbuffer` was raised.
    pub fn max_data_len(mut self, len: usize) -> Self {
        self.max_data_len = len;
        self.max_request_len(len.saturating_add(1024))
    }

    /// The longest request sent, as encoded (its frame without the 4-byte length prefix):
    /// the servers' `jute.maxbuffer` (default [`DEFAULT_MAX_REQUEST_LEN`], ZooKeeper's
    /// default), which the server checks every request against, closing the connection of one
    /// that is longer. A longer request fails here with [`Error::TooLarge`] (`len` is its
    /// encoded size) before anything is sent. Raise it only with the servers'
    /// `jute.maxbuffer`. Frames from the server are limited to this plus 1 KiB (a reply
    /// carries a little more than the data it returns).
    pub fn max_request_len(mut self, len: usize) -> Self {
        self.session.max_request_len = len;
        self.session.max_frame_len = len
            .saturating_add(1024)
            .max(zk_proto::DEFAULT_MAX_FRAME_LEN);
        self
    }

    /// Connects to one of the servers and establishes a session; returns once it is
    /// established, or with the reason none could be (the last server's: a name that does not
    /// resolve, a refused connection, a timeout, a server that is not ZooKeeper).
    ///
    /// The servers are tried in a random order (as the Java client does, so that clients
    /// spread over the ensemble), each once for the first session; names are resolved again
    /// on every attempt, and every address a name resolves to is tried, in a random order,
    /// within the connect timeout (`localhost` reaches a server on `127.0.0.1` or `::1`).
    pub async fn connect(self) -> Result<Client, Error> {
        // Boxed: the handshake's state machine is compiled once, not into each caller's future.
        let connecting: std::pin::Pin<Box<dyn Future<Output = Result<Client, Error>> + Send>> =
            Box::pin(self.connect_with(crate::io::system_resolver()));
        connecting.await
    }

    /// Authenticates every connection with SASL DIGEST-MD5 as `user` (feature
    /// `sasl-digest`): the servers' `SASLAuthenticationProvider` with a JAAS `Server` section
    /// holding `user_<user>="<password>"`. The exchange runs after each handshake, before
    /// any other request and before watches are restored; the session is `Connected` only
    /// once it succeeds, and the server must prove it knows the password too. A wrong
    /// password ends the session with [`Error::AuthFailed`]. The session's identity is then
    /// `sasl:<user>` (for ACLs).
    #[cfg(feature = "sasl-digest")]
    pub fn sasl_digest(mut self, user: &str, password: &str) -> Self {
        self.sasl = Some(crate::sasl::digest::DigestMd5::new(user, password));
        self
    }

    /// Connects over TLS to every server (their `secureClientPort`), with these settings
    /// (feature `tls`). Without it, connections are plain TCP.
    #[cfg(feature = "tls")]
    pub fn tls(mut self, config: crate::tls::TlsConfig) -> Self {
        self.tls = Some(config);
        self
    }

    #[cfg_attr(not(feature = "tls"), allow(unused_mut))]
    pub(crate) async fn connect_with(
        mut self,
        resolve: crate::io::Resolver,
    ) -> Result<Client, Error> {
        let seed = crate::dial::random_seed();
        #[cfg(feature = "tls")]
        if let Some(tls) = self.tls.take() {
            let connector = crate::io::TlsConnect::new(tls)?;
            return self.connect_via(resolve, connector, seed).await;
        }
        self.connect_via(resolve, crate::io::Tcp, seed).await
    }

    /// Connects over byte streams the caller opens (feature `transport`): an in-memory
    /// server, a simulator, a tunnel. Everything else is as [`ClientBuilder::connect`]: the
    /// handshake, pings, reconnects and session expiry all run over the streams `dial` gives.
    ///
    /// The connect string's hosts must be IP literals with ports (`127.0.0.1:2181`); each is
    /// handed to `dial` as a [`SocketAddr`](std::net::SocketAddr) on every connection attempt, and a name is an
    /// error (no resolver is asked). `seed` fixes the order the hosts are tried in and the
    /// random pauses before reconnecting, so a run on tokio's paused clock replays exactly.
    /// A `dial` error is reported as [`Error::Unreachable`] (within
    /// [`Error::NoServerReached`], one per server, when the first connect fails on several
    /// servers). TLS settings are not applied:
    /// the streams are used as they are.
    ///
    /// # Examples
    ///
    /// A server in memory is `zk_mem_server::MemServer` (its `client` method calls this).
    /// With a dial that refuses, the first connect fails after one attempt per host, and
    /// says what each did:
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), zk_client::Error> {
    /// use zk_client::Client;
    ///
    /// let refused = |_addr| async {
    ///     Err::<tokio::io::DuplexStream, _>(std::io::ErrorKind::ConnectionRefused.into())
    /// };
    /// let builder = Client::builder().hosts("127.0.0.1:2181,127.0.0.2:2181");
    /// let err = builder.connect_over(refused, 7).await.unwrap_err();
    /// let zk_client::Error::NoServerReached { failures } = err else { panic!("{err}") };
    /// assert_eq!(failures.len(), 2);
    /// assert!(matches!(failures[0], zk_client::Error::Unreachable { .. }));
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "transport")]
    pub async fn connect_over<F, Fut, S>(self, dial: F, seed: u64) -> Result<Client, Error>
    where
        F: Fn(std::net::SocketAddr) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::io::Result<S>> + Send + 'static,
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        let connector = crate::io::Dial::new(dial);
        self.connect_via(crate::io::literal_resolver(), connector, seed)
            .await
    }

    /// Connects through `resolve` and `connector`, the servers tried in the order `seed`
    /// decides (tests give in-memory ones and a fixed seed).
    pub(crate) async fn connect_via<C: crate::io::Connect>(
        self,
        resolve: crate::io::Resolver,
        connector: C,
        seed: u64,
    ) -> Result<Client, Error> {
        let cs = ConnectString::parse(&self.hosts)?;
        let (tx, rx) = mpsc::unbounded_channel();
        let (state_tx, state_rx) = watch::channel(SessionState::Connecting);
        let (states, _) = broadcast::channel(STATE_STREAM_CAPACITY);
        let (ready_tx, ready_rx) = oneshot::channel::<Result<(), Error>>();
        let chroot = Arc::new(Chroot::new(cs.chroot));
        let link = Arc::new(Mutex::new(Link::default()));
        let mut session = Session::new(self.session);
        #[cfg(feature = "sasl-digest")]
        if let Some(mechanism) = self.sasl {
            session.set_sasl(std::sync::Arc::new(mechanism));
        }
        if let Some((id, passwd)) = self.resume {
            session.resume(id, passwd);
        }
        let wiring = crate::io::Wiring {
            rx,
            state: state_tx,
            states: states.clone(),
            chroot: chroot.clone(),
            ready: ready_tx,
            link: link.clone(),
            close_timeout: self.close_timeout,
        };
        let task = SessionTask::new(session, cs.hosts, seed, resolve, connector, wiring);
        let runtime = tokio::runtime::Handle::current();
        let join = runtime.spawn(task.run());
        match ready_rx.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(e),
            Err(_) => {
                let _ = join.await;
                return Err(Error::Closed);
            }
        };
        let client = Client {
            inner: Arc::new(Inner {
                id: ClientId::next(),
                tx,
                state: state_rx,
                states,
                chroot,
                max_data_len: self.max_data_len,
                link,
                next_watcher: AtomicU64::new(1),
                replies: Arc::new(Replies::new()),
                runtime,
            }),
        };
        for (scheme, credentials) in self.auth {
            client.add_auth(&scheme, credentials).await?;
        }
        Ok(client)
    }
}
