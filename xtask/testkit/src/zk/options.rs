//! [`ZkOptions`]: how to configure and run the ZooKeeper servers that xtask starts.

use std::time::Duration;

use super::secure::{SaslOptions, TlsOptions};

/// How to configure and run the ZooKeeper servers of an [`Ensemble`](super::Ensemble) or a
/// [`ZkServer`](super::ZkServer).
///
/// Every field is public, and each has a chainable setter of the same name:
///
/// ```no_run
/// use std::time::Duration;
/// use zk_testkit::zk::{Ensemble, ZkOptions};
///
/// # fn main() -> std::io::Result<()> {
/// let opts = ZkOptions::default()
///     .tick_time_ms(200)
///     .session_timeouts_ms(400, 10_000)
///     .config("snapCount", "1000")
///     .start_timeout(Duration::from_secs(30));
/// let ensemble = Ensemble::start(3, opts)?;
/// println!("{}", ensemble.connect_string());
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZkOptions {
    /// ZooKeeper's `tickTime` in milliseconds; session timeouts and the quorum's limits are
    /// counted in ticks. Default 500.
    pub tick_time_ms: u32,
    /// `minSessionTimeout` in milliseconds; `None` keeps ZooKeeper's default of 2 ticks.
    pub min_session_timeout_ms: Option<u32>,
    /// `maxSessionTimeout` in milliseconds; `None` keeps ZooKeeper's default of 20 ticks.
    pub max_session_timeout_ms: Option<u32>,
    /// The JVM's maximum heap (`-Xmx`) in MiB. Default 256.
    pub jvm_heap_mb: u32,
    /// More `key=value` lines for `zoo.cfg`, written after xtask's own (a later line wins).
    pub extra_config: Vec<(String, String)>,
    /// More JVM system properties (`-Dkey=value`), for settings ZooKeeper reads only from
    /// there, such as `readonlymode.enabled`.
    pub system_properties: Vec<(String, String)>,
    /// `forceSync`: whether the transaction log is fsynced before a write is acknowledged.
    /// Default true, as in production; false makes writes faster on slow disks.
    pub force_sync: bool,
    /// The client port of the first member; `None` (the default) picks a free port. The other
    /// ports are always picked free.
    pub port: Option<u16>,
    /// How long a start or restart may take before it fails. Default 60 s.
    pub start_timeout: Duration,
    /// A TLS client port on every member besides the plain one, with certificates made for
    /// the ensemble ([`Ensemble::pki`](super::Ensemble::pki),
    /// [`Ensemble::secure_addr`](super::Ensemble::secure_addr)). Default none.
    pub tls: Option<TlsOptions>,
    /// SASL DIGEST-MD5 users (and whether SASL is enforced). Default none.
    pub sasl: Option<SaslOptions>,
    /// Whether the members reach each other through fault proxies, so that
    /// [`Ensemble::isolate`](super::Ensemble::isolate) can cut one off and
    /// [`Ensemble::heal`](super::Ensemble::heal) reconnect it. Default false (direct links).
    ///
    /// Each member dials every other member's quorum and election ports through a
    /// [`FaultProxy`](crate::FaultProxy) of its own (two per ordered pair of members, in this
    /// process: the ensemble cannot be detached). Each member's `zoo.cfg` lists the proxies
    /// for the others and `0.0.0.0` for itself, so its quorum and election ports listen on
    /// every interface (see [`render_routed`](super::config::render_routed) for why). The
    /// members also get `zookeeper.fastleader.maxNotificationInterval=2000` (unless set in
    /// [`system_properties`](Self::system_properties)): a member looking for a leader retries
    /// its peers at least every 2 s instead of backing off to 60 s, so it rejoins soon after a
    /// heal. The quorum links' proxies keep trying a member's quorum port for up to 3 s when
    /// it is not listening yet ([`FaultProxy::retry_connect`](crate::FaultProxy::retry_connect)),
    /// as a follower dialing it directly would. Needs at least two members.
    pub partitionable: bool,
}

impl Default for ZkOptions {
    fn default() -> Self {
        ZkOptions {
            tick_time_ms: 500,
            min_session_timeout_ms: None,
            max_session_timeout_ms: None,
            jvm_heap_mb: 256,
            extra_config: Vec::new(),
            system_properties: Vec::new(),
            force_sync: true,
            port: None,
            start_timeout: Duration::from_secs(60),
            tls: None,
            sasl: None,
            partitionable: false,
        }
    }
}

impl ZkOptions {
    /// Adds a JVM system property; see [`system_properties`](Self::system_properties).
    pub fn system_property(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.system_properties.push((key.into(), value.into()));
        self
    }

    /// Sets [`tick_time_ms`](Self::tick_time_ms).
    pub fn tick_time_ms(mut self, ms: u32) -> Self {
        self.tick_time_ms = ms;
        self
    }

    /// Sets [`min_session_timeout_ms`](Self::min_session_timeout_ms) and
    /// [`max_session_timeout_ms`](Self::max_session_timeout_ms).
    pub fn session_timeouts_ms(mut self, min_ms: u32, max_ms: u32) -> Self {
        self.min_session_timeout_ms = Some(min_ms);
        self.max_session_timeout_ms = Some(max_ms);
        self
    }

    /// Sets [`jvm_heap_mb`](Self::jvm_heap_mb).
    pub fn jvm_heap_mb(mut self, mb: u32) -> Self {
        self.jvm_heap_mb = mb;
        self
    }

    /// Adds one `key=value` line to [`extra_config`](Self::extra_config).
    pub fn config(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.extra_config.push((key.into(), value.into()));
        self
    }

    /// Sets [`force_sync`](Self::force_sync).
    pub fn force_sync(mut self, on: bool) -> Self {
        self.force_sync = on;
        self
    }

    /// Sets [`port`](Self::port), the first member's client port.
    pub fn port(mut self, port: u16) -> Self {
        self.port = Some(port);
        self
    }

    /// Sets [`start_timeout`](Self::start_timeout).
    pub fn start_timeout(mut self, timeout: Duration) -> Self {
        self.start_timeout = timeout;
        self
    }

    /// Sets [`tls`](Self::tls).
    pub fn tls(mut self, tls: TlsOptions) -> Self {
        self.tls = Some(tls);
        self
    }

    /// Sets [`sasl`](Self::sasl).
    pub fn sasl(mut self, sasl: SaslOptions) -> Self {
        self.sasl = Some(sasl);
        self
    }

    /// Sets [`partitionable`](Self::partitionable).
    pub fn partitionable(mut self, on: bool) -> Self {
        self.partitionable = on;
        self
    }
}
