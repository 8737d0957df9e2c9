//! [`Session`]: the ZooKeeper session as plain data driven by events. No IO, no tokio, no
//! clock: every input carries the current `Instant`.
//!
//! The calling contract is on [`Session`]. Its inputs and commands sit beside it, one concern
//! per module: `handshake` (the connect request and response, opening the session), `sasl`
//! (the session's SASL exchange), `restore` (credentials and watches sent again on a new
//! connection), `commands` (submitting requests, forgetting watchers), `reply` (frames from
//! the server), `timers` (the deadlines and `handle_timeout`), `end` (a connection or the
//! session ending). `pending`, `watches` and `xids` keep the books.

mod commands;
mod end;
mod handshake;
mod pending;
mod reply;
mod restore;
mod sasl;
mod timers;
mod watches;
mod xids;

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests;

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use zk_proto::records::AuthPacket;
use zk_proto::{DEFAULT_MAX_FRAME_LEN, EventType, KeeperState, Response};

use crate::Error;
use crate::sasl::Mechanism;
use pending::Pending;
use sasl::SaslRun;
use timers::Timers;
use watches::WatchTable;
pub use watches::{Fired, WatchKind, WatcherId};
use xids::Xids;

/// The most path bytes one `SetWatches` frame carries (the Java client's limit).
pub const SET_WATCHES_MAX_BYTES: usize = 128 * 1024;

/// The longest a connection stays idle before a ping, whatever the session timeout (the Java
/// client's `MAX_SEND_PING_INTERVAL`): idle connections through NAT and firewalls stay up.
pub const MAX_PING_INTERVAL: Duration = Duration::from_secs(10);

/// Once a session exists, one connection attempt takes at most this share of its timeout,
/// however few servers there are. The Java client divides the timeout by the number of
/// servers only: with one server, an attempt the server accepts and never answers then uses
/// up the whole session. ZooKeeper 3.8 does leave such a connection open while it starts (a
/// connect refused before its database is loaded fails to close, with a
/// `NullPointerException` in `NIOServerCnxn`), so a client of a restarted single server
/// would see its session expire although the server serves again within a second. A third
/// leaves room for two more attempts within the session.
pub const MIN_ATTEMPTS_PER_SESSION: u32 = 3;

/// How a session behaves. Durations are what the client asks for; the server negotiates the
/// session timeout.
#[derive(Debug, Clone)]
pub struct SessionConfig {
    /// The session timeout asked for.
    pub session_timeout: Duration,
    /// How long a handshake may take before the connection is given up.
    pub connect_timeout: Duration,
    /// Accept a read-only server (`canBeReadOnly`).
    pub can_be_read_only: bool,
    /// The longest frame accepted from the server.
    pub max_frame_len: usize,
    /// The longest request frame sent (the server's `jute.maxbuffer`).
    pub max_request_len: usize,
}

impl Default for SessionConfig {
    fn default() -> Self {
        Self {
            session_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
            can_be_read_only: false,
            max_frame_len: DEFAULT_MAX_FRAME_LEN,
            max_request_len: DEFAULT_MAX_FRAME_LEN,
        }
    }
}

/// The state of the session, as users see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SessionState {
    /// No session yet: the first connection is being made.
    Connecting,
    /// Connected to a read-write server.
    Connected,
    /// Connected to a read-only server: reads work, writes fail with `NotReadOnly`.
    ConnectedReadOnly,
    /// The connection was lost. The session may still be alive on the ensemble; no one can be
    /// sure of anything it holds until it connects again.
    Disconnected,
    /// No server has answered for longer than the negotiated session timeout: the ensemble
    /// has almost certainly expired the session, though no server could say so (Curator's
    /// LOST). Treat ephemeral nodes and locks as gone. The client keeps trying; a server will
    /// most likely answer `Expired`, or, if the session survived after all, `Connected`.
    Lost,
    /// The server rejected our credentials. Terminal.
    AuthFailed,
    /// The ensemble expired the session: its ephemeral nodes and watches are gone. Terminal.
    Expired,
    /// The session was closed by us. Terminal.
    Closed,
}

impl SessionState {
    /// Whether the session can never be used again.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            SessionState::AuthFailed | SessionState::Expired | SessionState::Closed
        )
    }

    /// Whether requests can be sent now.
    pub fn is_connected(self) -> bool {
        matches!(
            self,
            SessionState::Connected | SessionState::ConnectedReadOnly
        )
    }

    fn keeper_state(self) -> KeeperState {
        match self {
            SessionState::Connecting | SessionState::Disconnected | SessionState::Lost => {
                KeeperState::Disconnected
            }
            SessionState::Connected => KeeperState::SyncConnected,
            SessionState::ConnectedReadOnly => KeeperState::ConnectedReadOnly,
            SessionState::AuthFailed => KeeperState::AuthFailed,
            SessionState::Expired => KeeperState::Expired,
            SessionState::Closed => KeeperState::Closed,
        }
    }

    pub(crate) fn error(self) -> Error {
        match self {
            SessionState::AuthFailed => Error::AuthFailed,
            SessionState::Expired => Error::SessionExpired,
            SessionState::Closed => Error::Closed,
            _ => Error::ConnectionLoss,
        }
    }
}

/// What a watcher receives: a node event, or a final session event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchedEvent {
    /// What happened (`None` for a session event).
    pub event_type: EventType,
    /// The session's state when it happened.
    pub state: KeeperState,
    /// The node's server-side path (empty for a session event).
    pub path: String,
}

/// An output of the session, taken with [`Session::poll_event`].
#[derive(Debug)]
pub enum SessionEvent<T> {
    /// A request completed.
    Reply {
        /// The token given to [`Session::submit`].
        token: T,
        /// Its result.
        result: Result<Response, Error>,
    },
    /// A watcher fires. `last` says no more events will come to it.
    Watch {
        /// The watcher.
        id: WatcherId,
        /// What happened.
        event: WatchedEvent,
        /// Whether this is its last event.
        last: bool,
    },
    /// A watch asked for by a request was not set (the request failed): the watcher will get
    /// no event.
    Unwatched(WatcherId),
    /// The session's state changed.
    State(SessionState),
}

/// Where the connection is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// No connection.
    Down,
    /// The handshake is sent; waiting for the `ConnectResponse`.
    Handshaking,
    /// The session is granted; the SASL exchange runs before anything else is sent.
    Authenticating,
    /// Requests flow.
    Open,
}

/// A ZooKeeper session as plain data.
///
/// # Calling contract
///
/// Inputs (each takes `now`, which must never go back):
/// - [`Session::handle_connected`] when a TCP connection is up: queues the handshake;
/// - [`Session::handle_frame`] for every frame read (without its length prefix);
/// - [`Session::handle_timeout`] when [`Session::poll_timeout`]'s instant has passed
///   (a spurious call does nothing);
/// - [`Session::handle_unsent`] when the connection is going away with bytes handed out by
///   `poll_transmit` that were never written (before `handle_disconnect` or
///   [`Session::close_locally`]);
/// - [`Session::handle_disconnect`] when the connection is gone, including after an input
///   returned an error;
/// - commands: [`Session::submit`] a request with a caller's token `T`, [`Session::forget_watch`].
///
/// Outputs, to drain after every input: [`Session::poll_transmit`] (bytes to write, in
/// order), [`Session::poll_event`] (replies, watch events, state changes), then
/// [`Session::poll_timeout`] (when to call `handle_timeout` next).
///
/// `handle_frame` and `handle_timeout` return an error when the connection must be closed
/// (a protocol violation, a read timeout, a refused handshake); the caller then closes it and
/// calls `handle_disconnect`.
///
/// Replies to normal requests arrive in the order the requests were sent: each reply is
/// matched to the oldest pending request, and a reply whose xid differs is a protocol error.
///
/// # Sent or not
///
/// A request that fails without a reply fails with an error that says whether it may have
/// been applied. Every byte handed out by `poll_transmit` counts as written unless the driver
/// says otherwise with `handle_unsent`. A request any byte of which was written fails with
/// [`Error::ConnectionLoss`] (uncertain: the server may apply it), whatever ended the
/// connection or the session; a request none of which was written fails with a certain
/// error: [`Error::NotConnected`] when the connection is lost, the session's end
/// ([`Error::Closed`], [`Error::AuthFailed`], ...) when it ended.
#[derive(Debug)]
pub struct Session<T> {
    cfg: SessionConfig,
    state: SessionState,
    phase: Phase,
    session_id: i64,
    passwd: Option<Bytes>,
    negotiated: Duration,
    last_zxid: i64,
    xids: Xids,
    pending: VecDeque<Pending<T>>,
    /// The watchers whose registering request is in [`Session::pending`], each with whether
    /// it is still wanted (its handle was not dropped): the reply of an unwanted one
    /// registers nothing. By id, so that forgetting a watcher costs the same however many
    /// requests are in flight (a scan of `pending` per forget was quadratic when many holds
    /// ended at once, each forgetting its watch with its delete in flight).
    watches_in_flight: HashMap<WatcherId, bool>,
    /// Auth packets in flight: where each starts in the connection's output, and its
    /// caller (`None` for the session's own replays).
    auths: VecDeque<(u64, Option<T>)>,
    /// Every credential added, sent again on each new connection (the server keeps
    /// authentication per connection).
    auth_info: Vec<AuthPacket>,
    /// The number of servers in the connect string (the handshake budget is shared).
    hosts: usize,
    out: BytesMut,
    watches: WatchTable,
    timers: Timers,
    events: VecDeque<SessionEvent<T>>,
    closing: bool,
    /// When a server last answered (any frame), once a session exists.
    last_heard: Option<Instant>,
    /// Whether a read-write server has granted this session (see `handle_connected`).
    seen_rw_server: bool,
    /// The SASL mechanism run after every handshake, if any.
    sasl: Option<Arc<dyn Mechanism>>,
    /// The SASL exchange under way (while authenticating).
    exchange: Option<SaslRun>,
    /// Why the session ended, when more is known than its state says.
    ended_by: Option<Error>,
    /// Bytes of this connection handed out by [`Session::poll_transmit`].
    handed: u64,
    /// Of those, how many the driver reported never written ([`Session::handle_unsent`]).
    unsent: u64,
}

impl<T> Session<T> {
    /// A session that has not connected yet.
    pub fn new(cfg: SessionConfig) -> Self {
        Self {
            cfg,
            state: SessionState::Connecting,
            phase: Phase::Down,
            session_id: 0,
            passwd: None,
            negotiated: Duration::ZERO,
            last_zxid: 0,
            xids: Xids::default(),
            pending: VecDeque::new(),
            watches_in_flight: HashMap::new(),
            auths: VecDeque::new(),
            auth_info: Vec::new(),
            hosts: 1,
            out: BytesMut::new(),
            watches: WatchTable::default(),
            timers: Timers::default(),
            events: VecDeque::new(),
            closing: false,
            last_heard: None,
            seen_rw_server: false,
            sasl: None,
            exchange: None,
            ended_by: None,
            handed: 0,
            unsent: 0,
        }
    }

    /// The error requests fail with now that the session has ended (`None` while it has
    /// not): what its state says, or more when known (the server requiring authentication,
    /// a failed SASL exchange).
    pub fn ended_error(&self) -> Option<Error> {
        if !self.state.is_terminal() {
            return None;
        }
        Some(self.ended_by.clone().unwrap_or_else(|| self.state.error()))
    }

    /// The session's state.
    pub fn state(&self) -> SessionState {
        self.state
    }

    /// The session id (0 before the first handshake).
    pub fn session_id(&self) -> i64 {
        self.session_id
    }

    /// The session timeout the server granted (zero before the first handshake).
    pub fn negotiated_timeout(&self) -> Duration {
        self.negotiated
    }

    /// The last zxid seen in a reply.
    pub fn last_zxid(&self) -> i64 {
        self.last_zxid
    }

    /// Requests sent and not answered yet.
    pub fn pending_len(&self) -> usize {
        self.pending.len() + self.auths.len()
    }

    /// The configuration.
    pub fn config(&self) -> &SessionConfig {
        &self.cfg
    }

    /// Resumes an existing session (its id and password, as another client had it) instead
    /// of asking for a new one. Before the first connection only. If the ensemble has expired
    /// it, the handshake ends the session with [`Error::SessionExpired`].
    pub fn resume(&mut self, session_id: i64, passwd: Bytes) {
        if self.phase == Phase::Down && self.negotiated.is_zero() {
            self.session_id = session_id;
            self.passwd = Some(passwd);
            self.seen_rw_server = true;
        }
    }

    /// The session's password (with its id, what another client needs to resume it).
    pub fn password(&self) -> Option<&Bytes> {
        self.passwd.as_ref()
    }

    /// How many servers the connect string names (default 1): once a session exists, a
    /// connection attempt may take the negotiated timeout divided by this (by
    /// [`MIN_ATTEMPTS_PER_SESSION`] at least), so that a server that accepts TCP but never
    /// answers cannot use up the session.
    pub fn set_host_count(&mut self, hosts: usize) {
        self.hosts = hosts.max(1);
    }

    /// How long one connection attempt (TCP connect and handshake) may take now: the connect
    /// timeout, and once a session exists at most its timeout divided by the number of
    /// servers, or by [`MIN_ATTEMPTS_PER_SESSION`] when fewer.
    pub fn connect_budget(&self) -> Duration {
        if self.negotiated.is_zero() {
            return self.cfg.connect_timeout;
        }
        let shares = u32::try_from(self.hosts)
            .unwrap_or(u32::MAX)
            .max(MIN_ATTEMPTS_PER_SESSION);
        self.cfg.connect_timeout.min(self.negotiated / shares)
    }

    /// How long the connection may stay idle before a ping.
    fn ping_interval(&self) -> Duration {
        (self.negotiated / 3).min(MAX_PING_INTERVAL)
    }

    /// Where the next byte queued goes in the connection's output.
    fn next_offset(&self) -> u64 {
        self.handed + self.out.len() as u64
    }

    fn set_state(&mut self, state: SessionState) {
        if self.state != state {
            match state {
                SessionState::Expired | SessionState::AuthFailed => crate::log::warning!(
                    session = %format_args!("{:#x}", self.session_id),
                    from = ?self.state,
                    to = ?state,
                    "session ended"
                ),
                _ => crate::log::info!(
                    session = %format_args!("{:#x}", self.session_id),
                    timeout_ms = u64::try_from(self.negotiated.as_millis()).unwrap_or(u64::MAX),
                    from = ?self.state,
                    to = ?state,
                    "session state changed"
                ),
            }
            self.state = state;
            self.events.push_back(SessionEvent::State(state));
        }
    }

    /// Bytes to write to the connection, in order, if any.
    pub fn poll_transmit(&mut self) -> Option<BytesMut> {
        if self.out.is_empty() {
            return None;
        }
        self.handed += self.out.len() as u64;
        Some(self.out.split())
    }

    /// The next output event, if any.
    pub fn poll_event(&mut self) -> Option<SessionEvent<T>> {
        let event = self.events.pop_front();
        give_back_after_burst(&mut self.events);
        event
    }

    /// When [`Session::handle_timeout`] should be called next.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timers.earliest()
    }
}

/// Below this capacity a queue of the session keeps what it has.
const KEEP_CAPACITY: usize = 64;

/// A queue sized by a burst (100,000 requests in flight at once) gives its memory back once
/// the burst has drained: halved whenever it is less than a quarter full, so each request
/// pays amortized O(1) for it, and a steady load never shrinks and grows it back.
fn give_back_after_burst<T>(queue: &mut VecDeque<T>) {
    let capacity = queue.capacity();
    if capacity > KEEP_CAPACITY && queue.len() < capacity / 4 {
        queue.shrink_to(capacity / 2);
    }
}

/// [`give_back_after_burst`] for a map.
fn give_back_map_after_burst<K: Eq + std::hash::Hash, V>(map: &mut HashMap<K, V>) {
    let capacity = map.capacity();
    if capacity > KEEP_CAPACITY && map.len() < capacity / 4 {
        map.shrink_to(capacity / 2);
    }
}
