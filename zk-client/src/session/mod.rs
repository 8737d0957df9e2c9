//! [`Session`]: the ZooKeeper session as plain data driven by events. No IO, no tokio, no
//! clock: every input carries the current `Instant`.

mod pending;
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
use zk_proto::records::{
    AuthPacket, ConnectRequest, ConnectResponse, GetSaslRequest, RemoveWatchesRequest,
    SetSaslResponse, SetWatches, SetWatches2,
};
use zk_proto::{
    DEFAULT_MAX_FRAME_LEN, Decode, DecodeError, ErrorCode, EventType, KeeperState, OpCode, Reader,
    ReplyHeader, Request, Response, WatcherEvent, WatcherType, encode_frame, xid,
};

use crate::sasl::{self, Mechanism};
use crate::{Error, ProtocolError};
use pending::{Effect, Pending};
use timers::{Timers, expired};
use watches::WatchTable;
pub use watches::{Fired, WatchKind, WatcherId};
use xids::Xids;

/// The most path bytes one `SetWatches` frame carries (the Java client's limit).
pub const SET_WATCHES_MAX_BYTES: usize = 128 * 1024;

/// The longest a connection stays idle before a ping, whatever the session timeout (the Java
/// client's `MAX_SEND_PING_INTERVAL`): idle connections through NAT and firewalls stay up.
pub const MAX_PING_INTERVAL: Duration = Duration::from_secs(10);

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

/// A SASL exchange under way on the current connection.
struct SaslRun {
    exchange: Box<dyn sasl::Exchange>,
    /// The xid of the token in flight.
    xid: i32,
    /// Whether the server is read-only (the state to enter once authenticated).
    read_only: bool,
}

impl std::fmt::Debug for SaslRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SaslRun").field("xid", &self.xid).finish()
    }
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

    /// Authenticates every connection with `mechanism` right after its handshake, before
    /// anything else is sent; the session is `Connected` only once it succeeds.
    #[cfg_attr(not(feature = "sasl-digest"), allow(dead_code))]
    pub(crate) fn set_sasl(&mut self, mechanism: Arc<dyn Mechanism>) {
        self.sasl = Some(mechanism);
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
    /// connection attempt may take the negotiated timeout divided by this, so that a server
    /// that accepts TCP but never answers cannot use up the session (the Java client's rule).
    pub fn set_host_count(&mut self, hosts: usize) {
        self.hosts = hosts.max(1);
    }

    /// How long one connection attempt (TCP connect and handshake) may take now: the connect
    /// timeout, and once a session exists at most its timeout divided by the number of
    /// servers.
    pub fn connect_budget(&self) -> Duration {
        if self.negotiated.is_zero() {
            return self.cfg.connect_timeout;
        }
        let share = self.negotiated / u32::try_from(self.hosts).unwrap_or(u32::MAX);
        self.cfg.connect_timeout.min(share)
    }

    /// How long the connection may stay idle before a ping.
    fn ping_interval(&self) -> Duration {
        (self.negotiated / 3).min(MAX_PING_INTERVAL)
    }

    /// Ends the session here and now, without telling the server (which expires it after its
    /// timeout): pending requests fail, with [`Error::Closed`] if they were never written and
    /// [`Error::ConnectionLoss`] if they were (the server may still apply them), and every
    /// watcher gets its final event. For a close that could not reach a server in time.
    pub fn close_locally(&mut self) {
        self.closing = true;
        self.phase = Phase::Down;
        self.out.clear();
        // Already ended or not, nothing is due any more (`end` returns early on an ended one).
        self.timers.clear();
        self.end(SessionState::Closed);
    }

    /// A TCP connection is up: queues the `ConnectRequest` (resuming this session if it has
    /// one) and starts the connect deadline.
    pub fn handle_connected(&mut self, now: Instant) {
        if self.state.is_terminal() {
            return;
        }
        // A session made by a read-only server is known to no read-write one: until a
        // read-write server has seen us, every connection asks for a new session (as the Java
        // client does).
        let (session_id, passwd) = match (&self.passwd, self.seen_rw_server) {
            (Some(passwd), true) => (self.session_id, passwd.clone()),
            _ => (0, Bytes::from_static(&[0; 16])),
        };
        let request = ConnectRequest {
            protocol_version: 0,
            last_zxid_seen: self.last_zxid,
            time_out: i32::try_from(self.cfg.session_timeout.as_millis()).unwrap_or(i32::MAX),
            session_id,
            passwd: Some(passwd),
            read_only: Some(self.cfg.can_be_read_only),
        };
        self.out.clear();
        self.handed = 0;
        self.unsent = 0;
        // A handshake is a few dozen bytes: it always fits the frame limit.
        let _ = encode_frame(&request, &mut self.out, usize::MAX);
        self.phase = Phase::Handshaking;
        self.timers.clear_connection();
        // `None` (no deadline) for a budget too large to add, such as `Duration::MAX`.
        self.timers.connect = now.checked_add(self.connect_budget());
    }

    /// Sends `request`, to complete `token` with its reply; `watch` leaves a watch of that
    /// kind on the request's path for that watcher if the request succeeds (for `exists`, a
    /// data watch when the node exists and an exists watch when it does not; the kind given
    /// is ignored for `addWatch`, whose mode decides). A watcher is registered by one request
    /// at a time.
    ///
    /// Fails at once, giving the token back, when the session cannot send (not connected,
    /// closing, or ended) or the request is over the frame limit; nothing is sent then.
    pub fn submit(
        &mut self,
        now: Instant,
        request: Request,
        token: T,
        watch: Option<WatcherId>,
    ) -> Result<(), (T, Error)> {
        if self.state.is_terminal() || self.closing {
            let err = self.ended_error().unwrap_or(Error::Closed);
            return Err((token, err));
        }
        if self.phase != Phase::Open {
            return Err((token, Error::NotConnected));
        }
        let effect = match Effect::for_request(&request, watch) {
            Ok(effect) => effect,
            Err(e) => return Err((token, e)),
        };
        if let Effect::Watch { id, .. } = &effect {
            if self.watches_in_flight.contains_key(id) {
                return Err((
                    token,
                    Error::InvalidArgument("this watcher already has a request in flight"),
                ));
            }
        }
        let xids_before = self.xids.clone();
        let at = self.next_offset();
        let xid = match request {
            Request::Auth(_) => xid::AUTH,
            Request::Ping | Request::SetWatches(_) | Request::SetWatches2(_) => {
                return Err((
                    token,
                    Error::InvalidArgument("pings and set-watches are the session's own"),
                ));
            }
            _ => self.xids.next(),
        };
        if let Err(e) = request.encode_frame(xid, &mut self.out, self.cfg.max_request_len) {
            self.xids = xids_before; // nothing was sent: the xid is still free
            return Err((token, e.into()));
        }
        if xid == xid::AUTH {
            self.auths.push_back((at, Some(token)));
            if let Request::Auth(packet) = request {
                self.auth_info.push(packet);
            }
        } else {
            if request.op_code() == OpCode::CloseSession {
                self.closing = true;
            }
            crate::log::debug!(xid, op = ?request.op_code(), "request");
            if let Effect::Watch { id, .. } = &effect {
                self.watches_in_flight.insert(*id, true);
            }
            self.pending.push_back(Pending {
                xid,
                op: request.op_code(),
                token,
                effect,
                at,
            });
        }
        self.sent(now);
        Ok(())
    }

    /// A watcher's handle was dropped: stop routing events to it. Returns the
    /// `removeWatches` request to send when it was the last persistent watcher of its kind on
    /// `path` (the server would otherwise keep sending that watch's events for nothing).
    pub fn forget_watch(&mut self, path: &str, id: WatcherId) -> Option<Request> {
        let emptied = self.watches.forget(path, id);
        // Its request may still be in flight: then its reply must not register it.
        if let Some(wanted) = self.watches_in_flight.get_mut(&id) {
            *wanted = false;
        }
        // ZooKeeper 3.8 removes persistent watches only with `Any`, which would take the
        // path's other watches with them: remove only when no other watcher is left on it
        // (else the persistent watch stays on the server, its events reaching nobody).
        if emptied.is_empty() || self.watches.has_path(path) {
            return None;
        }
        Some(Request::RemoveWatches(RemoveWatchesRequest {
            path: path.to_owned(),
            watcher_type: WatcherType::Any,
        }))
    }

    fn sent(&mut self, now: Instant) {
        if self.phase == Phase::Open {
            self.timers.ping = now.checked_add(self.ping_interval());
        }
    }

    /// Handles one frame from the server. An error means the connection must be closed.
    pub fn handle_frame(&mut self, now: Instant, frame: &[u8]) -> Result<(), Error> {
        if self.phase != Phase::Down && self.session_id != 0 {
            self.last_heard = Some(now);
        }
        match self.phase {
            Phase::Down => Err(ProtocolError::Unexpected("frame while not connected").into()),
            Phase::Handshaking => self.handle_handshake(now, frame),
            Phase::Authenticating => self.handle_sasl(now, frame),
            Phase::Open => {
                // An ended session waits for no more frames (its connection is being closed).
                if !self.state.is_terminal() {
                    self.timers.read = Some(now + self.negotiated * 2 / 3);
                }
                self.handle_reply(frame)
            }
        }
    }

    fn handle_handshake(&mut self, now: Instant, frame: &[u8]) -> Result<(), Error> {
        // Bytes after the fields we know are ignored, as Java does (a newer server's fields).
        let resp = match ConnectResponse::decode_prefix(frame) {
            Ok(resp) => resp,
            Err(e) => return Err(refused_handshake(frame).unwrap_or(e.into())),
        };
        if resp.time_out <= 0 {
            self.end(SessionState::Expired);
            return Err(Error::SessionExpired);
        }
        if self.seen_rw_server && resp.session_id != self.session_id {
            return Err(ProtocolError::Unexpected("server answered with another session").into());
        }
        self.session_id = resp.session_id;
        self.passwd = resp.passwd;
        let negotiated = Duration::from_millis(u64::try_from(resp.time_out).unwrap_or(0));
        if negotiated != self.negotiated && negotiated != self.cfg.session_timeout {
            // The server bounds the timeout (2 to 20 ticks by default): say so once per change.
            crate::log::info!(
                session = %format_args!("{:#x}", resp.session_id),
                asked_ms = u64::try_from(self.cfg.session_timeout.as_millis()).unwrap_or(u64::MAX),
                granted_ms = u64::try_from(negotiated.as_millis()).unwrap_or(u64::MAX),
                "the server changed the session timeout asked for"
            );
        }
        self.negotiated = negotiated;
        self.last_heard = Some(now);
        let read_only = resp.read_only == Some(true);
        if !read_only {
            self.seen_rw_server = true;
        }
        match &self.sasl {
            Some(mechanism) => {
                // The handshake's deadline goes on until the exchange is done.
                let connect = self.timers.connect;
                self.timers.clear();
                self.timers.connect = connect;
                self.phase = Phase::Authenticating;
                let mut exchange = mechanism.start();
                let token = exchange.initial();
                let xid = self.send_sasl(token);
                self.exchange = Some(SaslRun {
                    exchange,
                    xid,
                    read_only,
                });
            }
            None => self.open(now, read_only),
        }
        Ok(())
    }

    /// Sends a SASL token; its xid.
    fn send_sasl(&mut self, token: Vec<u8>) -> i32 {
        let xid = self.xids.next();
        let request = Request::Sasl(GetSaslRequest {
            token: Some(Bytes::from(token)),
        });
        // A token is at most a few hundred bytes: it fits any frame limit.
        let _ = request.encode_frame(xid, &mut self.out, usize::MAX);
        xid
    }

    /// A reply in the SASL exchange: answer, or open the session, or end it.
    fn handle_sasl(&mut self, now: Instant, frame: &[u8]) -> Result<(), Error> {
        let mut r = Reader::new(frame);
        let header = ReplyHeader::decode(&mut r)?;
        let expected = self.exchange.as_ref().map(|run| run.xid);
        if expected != Some(header.xid) {
            return Err(ProtocolError::UnexpectedXid {
                expected,
                got: header.xid,
            }
            .into());
        }
        if !header.err.is_ok() {
            // A wrong password: the server answers `AuthFailed` and closes.
            let err = match header.err {
                ErrorCode::SessionClosedRequireSaslAuth => Error::AuthRequired,
                _ => Error::AuthFailed,
            };
            return Err(self.end_with(SessionState::AuthFailed, err));
        }
        // Bytes after the reply are ignored, as Java does.
        let reply = SetSaslResponse::decode(&mut r)?;
        let token = reply.token.unwrap_or_default();
        let Some(mut run) = self.exchange.take() else {
            return Err(ProtocolError::Unexpected("SASL reply without an exchange").into());
        };
        match run.exchange.step(&token) {
            Ok(sasl::Step::Respond(token)) => {
                run.xid = self.send_sasl(token);
                self.exchange = Some(run);
                Ok(())
            }
            Ok(sasl::Step::Done) => {
                self.open(now, run.read_only);
                Ok(())
            }
            Err(why) => Err(self.end_with(SessionState::AuthFailed, Error::Sasl(why))),
        }
    }

    /// The session is usable on this connection: requests flow, credentials and watches
    /// are sent again.
    fn open(&mut self, now: Instant, read_only: bool) {
        self.phase = Phase::Open;
        self.timers.clear();
        self.timers.read = Some(now + self.negotiated * 2 / 3);
        self.timers.ping = now.checked_add(self.ping_interval());
        let state = if read_only {
            SessionState::ConnectedReadOnly
        } else {
            SessionState::Connected
        };
        self.set_state(state);
        // As the Java client: credentials first (the server keeps them per connection, and a
        // watch restored on an ACL'd node needs them), then the watches.
        self.replay_auths();
        self.restore_watches();
    }

    /// Sends every credential added so far again, on a new connection.
    fn replay_auths(&mut self) {
        if !self.auth_info.is_empty() {
            crate::log::debug!(
                credentials = self.auth_info.len(),
                "credentials sent again on the new connection"
            );
        }
        for packet in &self.auth_info {
            // An auth packet was within the frame limit when it was first sent.
            let at = self.next_offset();
            let request = Request::Auth(packet.clone());
            if request
                .encode_frame(xid::AUTH, &mut self.out, usize::MAX)
                .is_ok()
            {
                self.auths.push_back((at, None));
            }
        }
    }

    /// After a reconnect, re-registers every watch before any new request, so a change made
    /// while we were away fires at once (the server compares with our last zxid). Like the Java
    /// client, uses `SetWatches` unless persistent watches need `SetWatches2`, and splits the
    /// paths over several frames of at most [`SET_WATCHES_MAX_BYTES`].
    fn restore_watches(&mut self) {
        if self.watches.is_empty() {
            return;
        }
        let paths = self.watches.watched_paths();
        crate::log::debug!(
            data = paths.data.len(),
            exists = paths.exists.len(),
            child = paths.child.len(),
            persistent = paths.persistent.len(),
            recursive = paths.recursive.len(),
            "watches restored on the new connection"
        );
        let persistent = !paths.persistent.is_empty() || !paths.recursive.is_empty();
        let mut lists = [
            paths.data,
            paths.exists,
            paths.child,
            paths.persistent,
            paths.recursive,
        ]
        .map(std::collections::VecDeque::from);
        while lists.iter().any(|l| !l.is_empty()) {
            let mut batch: [Vec<String>; 5] = Default::default();
            let mut bytes = 0;
            for (list, out) in lists.iter_mut().zip(batch.iter_mut()) {
                while let Some(path) = list.front() {
                    if bytes > 0 && bytes + path.len() + 4 > SET_WATCHES_MAX_BYTES {
                        break;
                    }
                    bytes += path.len() + 4;
                    out.extend(list.pop_front());
                }
            }
            let [data, exist, child, persistent_watches, recursive] = batch;
            let request = if persistent {
                Request::SetWatches2(SetWatches2 {
                    relative_zxid: self.last_zxid,
                    data_watches: data,
                    exist_watches: exist,
                    child_watches: child,
                    persistent_watches,
                    persistent_recursive_watches: recursive,
                })
            } else {
                Request::SetWatches(SetWatches {
                    relative_zxid: self.last_zxid,
                    data_watches: data,
                    exist_watches: exist,
                    child_watches: child,
                })
            };
            // Batches are bounded well under any frame limit.
            let _ = request.encode_frame(xid::SET_WATCHES, &mut self.out, usize::MAX);
        }
    }

    fn handle_reply(&mut self, frame: &[u8]) -> Result<(), Error> {
        let mut r = Reader::new(frame);
        let header = ReplyHeader::decode(&mut r)?;
        if header.err == ErrorCode::SessionClosedRequireSaslAuth {
            // The server requires SASL (`enforce.auth`) and closes the session, whichever
            // request (a ping too) it answers so: every connection would end the same way.
            // The request it answers was refused; the others fail as the session's end says.
            self.refused(header.xid, Error::AuthRequired);
            return Err(self.end_with(SessionState::AuthFailed, Error::AuthRequired));
        }
        match header.xid {
            xid::NOTIFICATION => {
                let event = match WatcherEvent::decode(&mut r) {
                    Ok(event) => event,
                    // A path that is not UTF-8 matches no watch of ours (ours are valid
                    // strings); the Java client decodes it lossily, with the same effect.
                    Err(DecodeError::BadUtf8 { .. }) => return Ok(()),
                    Err(e) => return Err(e.into()),
                };
                // Bytes after the event are ignored, as Java does.
                self.dispatch_event(event);
                Ok(())
            }
            xid::PING | xid::SET_WATCHES => Ok(()),
            xid::AUTH => {
                let (_, token) = self.auths.pop_front().ok_or(ProtocolError::UnexpectedXid {
                    expected: None,
                    got: header.xid,
                })?;
                if header.err == ErrorCode::AuthFailed {
                    if let Some(token) = token {
                        self.events.push_back(SessionEvent::Reply {
                            token,
                            result: Err(Error::AuthFailed),
                        });
                    }
                    self.end(SessionState::AuthFailed);
                    return Err(Error::AuthFailed);
                }
                let result = match Error::from_code(header.err) {
                    None => Ok(Response::Empty),
                    Some(e) => Err(e),
                };
                if let Some(token) = token {
                    self.events.push_back(SessionEvent::Reply { token, result });
                }
                Ok(())
            }
            got => {
                let expected = self.pending.front().map(|p| p.xid);
                if expected != Some(got) {
                    return Err(ProtocolError::UnexpectedXid { expected, got }.into());
                }
                let Some(p) = self.pending.pop_front() else {
                    return Err(ProtocolError::UnexpectedXid { expected, got }.into());
                };
                let p = self.settle(p);
                if header.zxid > 0 {
                    self.last_zxid = header.zxid;
                }
                self.complete(p, header.err, r)
            }
        }
    }

    fn complete(&mut self, p: Pending<T>, err: ErrorCode, mut r: Reader<'_>) -> Result<(), Error> {
        // An error reply's body, if the server sent one, is not read, nor are bytes after a
        // body (as the Java client: a newer server's fields).
        let decoded = if err.is_ok() {
            Response::decode(p.op, &mut r).map(Some)
        } else {
            Ok(None)
        };
        let body = match decoded {
            Ok(body) => body,
            Err(DecodeError::BadUtf8 { at, offset }) => {
                // A string that is not UTF-8: this reply cannot be read, but the frame was
                // whole, so the connection and the other requests go on.
                let e = Error::from(DecodeError::BadUtf8 { at, offset });
                self.events.push_back(SessionEvent::Reply {
                    token: p.token,
                    result: Err(e),
                });
                if let Effect::Watch { id, .. } = p.effect {
                    self.events.push_back(SessionEvent::Unwatched(id));
                }
                return Ok(());
            }
            Err(e) => {
                // The server did answer, but with bytes we cannot read: the caller gets the
                // decode error and the connection goes.
                let e = Error::from(e);
                self.events.push_back(SessionEvent::Reply {
                    token: p.token,
                    result: Err(e.clone()),
                });
                if let Effect::Watch { id, .. } = p.effect {
                    self.events.push_back(SessionEvent::Unwatched(id));
                }
                return Err(e);
            }
        };
        crate::log::debug!(xid = p.xid, op = ?p.op, result = ?err, "reply");
        self.apply_effect(&p.effect, err);
        if p.op == OpCode::CloseSession {
            self.events.push_back(SessionEvent::Reply {
                token: p.token,
                result: Ok(Response::Empty),
            });
            self.end(SessionState::Closed);
            return Ok(());
        }
        let result = match (body, Error::from_code(err)) {
            (Some(body), _) => Ok(body),
            (None, Some(e)) => Err(e),
            (None, None) => Err(ProtocolError::Unexpected("reply without a body").into()),
        };
        self.events.push_back(SessionEvent::Reply {
            token: p.token,
            result,
        });
        Ok(())
    }

    /// A request leaving [`Session::pending`]: its watch effect is dropped if its watcher was
    /// forgotten meanwhile.
    fn settle(&mut self, mut p: Pending<T>) -> Pending<T> {
        if let Effect::Watch { id, .. } = &p.effect {
            if self.watches_in_flight.remove(id) == Some(false) {
                p.effect = Effect::None;
            }
        }
        p
    }

    fn apply_effect(&mut self, effect: &Effect, err: ErrorCode) {
        match effect {
            Effect::None => {}
            Effect::Watch {
                path,
                kind,
                id,
                on_missing,
            } => {
                let kind = match err {
                    ErrorCode::Ok => Some(*kind),
                    ErrorCode::NoNode => *on_missing,
                    _ => None,
                };
                match kind {
                    Some(kind) => self.watches.add(path, kind, *id),
                    None => self.events.push_back(SessionEvent::Unwatched(*id)),
                }
            }
            Effect::RemoveWatches { path, which } => {
                if err.is_ok() {
                    self.remove_watches_locally(path, *which);
                }
            }
        }
    }

    /// Removes this session's watches of `which` kind on (server path) `path` here only, the
    /// server keeping its own (their events then reach nobody): each removed watcher gets a
    /// last `*WatchRemoved` event. Whether any was removed. (The Java client's
    /// `removeWatches(.., local = true)`, for when no server can be reached.)
    pub fn remove_watches_locally(&mut self, path: &str, which: WatcherType) -> bool {
        let removed = self.watches.remove(path, which);
        let any = !removed.is_empty();
        for (id, event_type) in removed {
            let event = WatchedEvent {
                event_type,
                state: KeeperState::SyncConnected,
                path: path.to_owned(),
            };
            self.events.push_back(SessionEvent::Watch {
                id,
                event,
                last: true,
            });
        }
        any
    }

    fn dispatch_event(&mut self, event: WatcherEvent) {
        for Fired { id, last } in self.watches.fire(event.event_type, &event.path) {
            let event = WatchedEvent {
                event_type: event.event_type,
                state: event.state,
                path: event.path.clone(),
            };
            self.events
                .push_back(SessionEvent::Watch { id, event, last });
        }
    }

    /// Handles the passing of time: a ping when nothing was sent for a third of the session
    /// timeout, and an error (close the connection) when nothing was read for two thirds of
    /// it, or the handshake took longer than the connect timeout.
    ///
    /// Every deadline that has passed is acted on in one call, so no timer is left in the past
    /// (a driver would wake again at once).
    pub fn handle_timeout(&mut self, now: Instant) -> Result<(), Error> {
        if self.state.is_terminal() && self.phase == Phase::Down {
            // An ended session has no deadlines: one left armed would be due forever.
            self.timers.clear();
            return Ok(());
        }
        if self.phase != Phase::Open && expired(self.timers.lost, now) {
            self.timers.lost = None;
            if !self.state.is_terminal() {
                self.set_state(SessionState::Lost);
            }
        }
        match self.phase {
            Phase::Down => Ok(()),
            Phase::Handshaking | Phase::Authenticating => {
                if expired(self.timers.connect, now) {
                    return Err(Error::ConnectTimeout);
                }
                Ok(())
            }
            Phase::Open => {
                if expired(self.timers.read, now) {
                    return Err(Error::ConnectionLoss);
                }
                if expired(self.timers.ping, now) {
                    // A ping is 12 bytes: it always fits the frame limit.
                    let _ = Request::Ping.encode_frame(xid::PING, &mut self.out, usize::MAX);
                    self.sent(now);
                }
                Ok(())
            }
        }
    }

    /// The connection is gone. Every request written on it fails with `ConnectionLoss` (it
    /// may or may not have been applied), every request never written with `NotConnected`
    /// (see [`Session::handle_unsent`]); watches stay registered for a later reconnect.
    ///
    /// From then on, if no server answers for the negotiated session timeout (counted from
    /// the last frame heard), [`Session::handle_timeout`] reports [`SessionState::Lost`].
    pub fn handle_disconnect(&mut self, _now: Instant) {
        if self.phase == Phase::Down && self.pending.is_empty() && self.auths.is_empty() {
            return;
        }
        self.phase = Phase::Down;
        self.exchange = None;
        self.timers.clear_connection();
        if self.state.is_connected() {
            self.timers.lost = self.last_heard.map(|heard| heard + self.negotiated);
        }
        self.out.clear();
        let err = self.ended_error().unwrap_or(Error::NotConnected);
        self.fail_pending(&err);
        if self.closing {
            self.end(SessionState::Closed);
        } else if self.state.is_connected() {
            self.set_state(SessionState::Disconnected);
        }
    }

    /// Fails every request in flight: with `ConnectionLoss` if any of its bytes was written
    /// (the server may apply it), else with `unsent` (it surely was not).
    fn fail_pending(&mut self, unsent: &Error) {
        let written = self.handed.saturating_sub(self.unsent);
        let err = |at: u64| {
            if at < written {
                Error::ConnectionLoss
            } else {
                unsent.clone()
            }
        };
        for p in std::mem::take(&mut self.pending) {
            let p = self.settle(p);
            if let Effect::Watch { id, .. } = p.effect {
                self.events.push_back(SessionEvent::Unwatched(id));
            }
            self.events.push_back(SessionEvent::Reply {
                token: p.token,
                result: Err(err(p.at)),
            });
        }
        for (at, token) in std::mem::take(&mut self.auths) {
            if let Some(token) = token {
                self.events.push_back(SessionEvent::Reply {
                    token,
                    result: Err(err(at)),
                });
            }
        }
    }

    /// The server answered request `xid` (the oldest in flight) with a refusal: it fails
    /// with `err`, the others stay in flight.
    fn refused(&mut self, xid: i32, err: Error) {
        if xid == xid::AUTH {
            if let Some((_, Some(token))) = self.auths.pop_front() {
                self.events.push_back(SessionEvent::Reply {
                    token,
                    result: Err(err),
                });
            }
            return;
        }
        if self.pending.front().map(|p| p.xid) != Some(xid) {
            return;
        }
        if let Some(p) = self.pending.pop_front() {
            let p = self.settle(p);
            if let Effect::Watch { id, .. } = p.effect {
                self.events.push_back(SessionEvent::Unwatched(id));
            }
            self.events.push_back(SessionEvent::Reply {
                token: p.token,
                result: Err(err),
            });
        }
    }

    /// The driver is giving up the connection with the last `n` bytes handed out by
    /// [`Session::poll_transmit`] never written (they sat in its buffer, the peer not
    /// reading). The requests in them fail as certainly not sent rather than as uncertain.
    /// Call it before [`Session::handle_disconnect`] or [`Session::close_locally`]; a driver
    /// that never calls it makes every request handed out count as written.
    pub fn handle_unsent(&mut self, n: usize) {
        self.unsent = (n as u64).min(self.handed);
    }

    /// Where the next byte queued goes in the connection's output.
    fn next_offset(&self) -> u64 {
        self.handed + self.out.len() as u64
    }

    /// Ends the session for good with `err` as the reason requests fail from now on; returns
    /// it (the error that closes the connection).
    fn end_with(&mut self, state: SessionState, err: Error) -> Error {
        if !self.state.is_terminal() {
            self.ended_by = Some(err.clone());
            self.end(state);
        }
        err
    }

    /// Ends the session for good: pending requests fail, every watcher gets a final event.
    fn end(&mut self, state: SessionState) {
        if self.state.is_terminal() {
            return;
        }
        self.set_state(state);
        self.timers.clear();
        let err = self.ended_error().unwrap_or_else(|| state.error());
        self.fail_pending(&err);
        for id in self.watches.drain() {
            let event = WatchedEvent {
                event_type: EventType::None,
                state: state.keeper_state(),
                path: String::new(),
            };
            self.events.push_back(SessionEvent::Watch {
                id,
                event,
                last: true,
            });
        }
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
        self.events.pop_front()
    }

    /// When [`Session::handle_timeout`] should be called next.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timers.earliest()
    }
}

/// A read-only server that cannot create a session (it would be a write, unless the servers
/// run with `localSessionsEnabled`) answers the handshake with a bare `ReplyHeader` carrying
/// `NotReadOnly` instead of a `ConnectResponse`. Recognise that, and any other such refusal.
fn refused_handshake(frame: &[u8]) -> Option<Error> {
    let header = ReplyHeader::decode_exact(frame, "ReplyHeader").ok()?;
    Error::from_code(header.err)
}

/// The kind of watch a request of this opcode leaves (for `exists`: when the node exists).
pub(crate) fn watch_kind_of(request: &Request) -> Option<(WatchKind, Option<WatchKind>)> {
    Some(match request {
        Request::Exists(r) if r.watch => (WatchKind::Data, Some(WatchKind::Exists)),
        Request::GetData(r) if r.watch => (WatchKind::Data, None),
        Request::GetChildren(r) if r.watch => (WatchKind::Child, None),
        Request::GetChildren2(r) if r.watch => (WatchKind::Child, None),
        Request::AddWatch(r) => match r.mode {
            zk_proto::AddWatchMode::Persistent => (WatchKind::Persistent, None),
            zk_proto::AddWatchMode::PersistentRecursive => (WatchKind::PersistentRecursive, None),
        },
        _ => return None,
    })
}

/// The watcher type a `removeWatches` request removes, and its path.
pub(crate) fn removed_watches(request: &Request) -> Option<(&str, WatcherType)> {
    match request {
        Request::RemoveWatches(r) => Some((&r.path, r.watcher_type)),
        _ => None,
    }
}
