//! [`ServerMachine`]: the wire server's whole protocol as plain data — connections, the
//! handshake, sessions and their expiry deadlines, request dispatch, watches and
//! notifications — with no IO and no clock. [`super::MemServer`] drives it over tokio.
//!
//! # Calling contract
//!
//! (As quinn-proto's `Connection` and zk-client's `Session`.)
//! - Inputs: [`ServerMachine::handle_accept`] for a new connection,
//!   [`ServerMachine::handle_frame`] for each whole frame read from it (without the length
//!   prefix), [`ServerMachine::handle_disconnect`] when it ends,
//!   [`ServerMachine::handle_timeout`] when [`ServerMachine::poll_timeout`]'s instant comes.
//! - Commands: [`ServerMachine::cut`], [`ServerMachine::expire`].
//! - Output: after every input or command, drain [`ServerMachine::poll_output`]: frames to
//!   write, in order, per connection, and connections to close.
//! - `now` comes from the caller's clock and never goes back.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use zk_proto::records::{ConnectRequest, Id};
use zk_proto::{Decode, Encode, ErrorCode, ReplyHeader, Request};

mod read;
mod session;
mod snapshot;
mod watch;
mod write;

#[cfg(test)]
mod tests;

pub use snapshot::SnapshotError;

use super::acl;
use super::data_tree::DataTree;
use super::watches::WatchTable;
use crate::seeded::Seeded;

/// A connection's number, given by [`ServerMachine::handle_accept`].
pub type ConnId = u64;

/// The wall time (ms since the epoch) the simulated server's clock starts at: `ctime` and
/// `mtime` are this plus the time since the server started.
pub const EPOCH_MS: i64 = 1_700_000_000_000;

/// What the wire server does and how. [`ServerConfig::new`] gives a 3.8 server's defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// Seeds session ids, passwords and (when asked) the order of listed children.
    pub seed: u64,
    /// The shortest session timeout granted (ZooKeeper: two ticks, 4 s).
    pub min_session_timeout: Duration,
    /// The longest session timeout granted (ZooKeeper: twenty ticks, 40 s).
    pub max_session_timeout: Duration,
    /// The `cversion` (so the first sequence number) of every new node; near `i32::MAX`
    /// makes sequence numbers wrap, as ZooKeeper prints them.
    pub first_cversion: i32,
    /// List children in a seeded random order, as a real server's hash set may, instead of
    /// sorted.
    pub shuffle_children: bool,
    /// The longest request frame accepted; a longer one closes the connection.
    pub max_frame_len: usize,
    /// The longest a request takes to reach the server (each one a seeded time in
    /// `0..=latency`, in order per connection); zero: at once. A request still on its way
    /// when its connection drops never arrives.
    pub latency: Duration,
    /// How often the container manager runs: it removes each container whose last child is
    /// gone and each TTL node whose TTL passed with no children and no change. `Some(ZERO)`
    /// (the default) runs it after every request, so a container goes right after the write
    /// that took its last child; `Some(d)` runs it at the first request or timeout at least
    /// `d` after its last run, as ZooKeeper's timer (`znode.container.checkIntervalMs`, 60 s
    /// by default: what the `zk-mem-server` binary uses); `None` removes nothing, as a server
    /// whose interval is longer than the test (the differential run compares with such a
    /// server).
    pub container_manager: Option<Duration>,
    /// ZooKeeper's `zookeeper.skipACL`: no ACL is checked (a new one is still fixed up, so
    /// `auth` without an identity is still `InvalidACL`). Off by default.
    pub skip_acl: bool,
}

impl ServerConfig {
    /// A 3.8 server's defaults (2 s tick), with `seed`.
    pub fn new(seed: u64) -> Self {
        Self {
            seed,
            min_session_timeout: Duration::from_secs(4),
            max_session_timeout: Duration::from_secs(40),
            first_cversion: 0,
            shuffle_children: false,
            max_frame_len: zk_proto::DEFAULT_MAX_FRAME_LEN,
            latency: Duration::ZERO,
            container_manager: Some(Duration::ZERO),
            skip_acl: false,
        }
    }
}

/// What the driver must do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// Write this frame (length prefix included) to the connection.
    Send(ConnId, Bytes),
    /// Close the connection once the frames before this are written.
    Close(ConnId),
    /// Drop the connection now: frames not yet written are lost.
    Cut(ConnId),
}

/// A session as [`ServerMachine::sessions`] shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionInfo {
    /// Its id.
    pub id: i64,
    /// The negotiated timeout.
    pub timeout: Duration,
    /// Its connection, if one is attached.
    pub conn: Option<ConnId>,
    /// When it expires unless a frame comes before.
    pub deadline: Instant,
}

#[derive(Debug, Clone)]
struct Session {
    passwd: Bytes,
    timeout: Duration,
    deadline: Instant,
    conn: Option<ConnId>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Conn {
    /// Waiting for the `ConnectRequest`.
    Handshake,
    /// Serving this session.
    Open(i64),
}

/// A body to encode after a reply header.
type Body = Option<Box<dyn Encode>>;

fn body(record: impl Encode + 'static) -> Result<Body, ErrorCode> {
    Ok(Some(Box::new(record)))
}

/// The ZooKeeper server, single and in memory. See the module docs for its calling contract.
#[derive(Debug)]
pub struct ServerMachine {
    config: ServerConfig,
    tree: DataTree,
    watches: WatchTable,
    sessions: BTreeMap<i64, Session>,
    conns: BTreeMap<ConnId, Conn>,
    /// Each open connection's identities (ACL checks, `whoAmI`): its IP, and what `addAuth`
    /// added. Per connection, as in ZooKeeper: a client adds its credentials again after a
    /// reconnect.
    idents: BTreeMap<ConnId, Vec<Id>>,
    zxid: i64,
    rng: Seeded,
    next_session: i64,
    next_conn: ConnId,
    start: Instant,
    out: VecDeque<Output>,
    /// Frames read and written (`mntr`'s `zk_packets_received` and `zk_packets_sent`).
    packets: (u64, u64),
    /// When the container manager last ran.
    last_sweep: Instant,
}

impl ServerMachine {
    /// A server with an empty tree, started at `now`.
    pub fn new(config: ServerConfig, now: Instant) -> Self {
        let mut rng = Seeded::new(config.seed);
        // Server id 1 in the top byte and seeded bits below, as ZooKeeper's
        // `initializeNextSessionId` mixes its id with the clock.
        let next_session = (1 << 56) | ((rng.next_u64() & 0xff_ffff) << 24) as i64;
        Self {
            tree: DataTree::new(config.first_cversion),
            config,
            watches: WatchTable::default(),
            sessions: BTreeMap::new(),
            conns: BTreeMap::new(),
            idents: BTreeMap::new(),
            zxid: 0,
            rng,
            next_session,
            next_conn: 1,
            start: now,
            out: VecDeque::new(),
            packets: (0, 0),
            last_sweep: now,
        }
    }

    // ---- getters -------------------------------------------------------------------------

    /// The configuration.
    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// The last zxid given to a transaction.
    pub fn zxid(&self) -> i64 {
        self.zxid
    }

    /// The nodes.
    pub fn tree(&self) -> &DataTree {
        &self.tree
    }

    /// The number of watches set.
    pub fn watch_count(&self) -> usize {
        self.watches.len()
    }

    /// The live sessions, by id.
    pub fn sessions(&self) -> Vec<SessionInfo> {
        self.sessions
            .iter()
            .map(|(&id, s)| SessionInfo {
                id,
                timeout: s.timeout,
                conn: s.conn,
                deadline: s.deadline,
            })
            .collect()
    }

    /// The watches, for the four-letter words.
    pub(crate) fn watches(&self) -> &WatchTable {
        &self.watches
    }

    /// Frames read from clients and written to them so far.
    pub fn packets(&self) -> (u64, u64) {
        self.packets
    }

    /// The connections open (handshaken or not).
    pub fn connection_count(&self) -> usize {
        self.conns.len()
    }

    /// The connection serving `session`, if any.
    pub fn conn_of(&self, session: i64) -> Option<ConnId> {
        self.sessions.get(&session).and_then(|s| s.conn)
    }

    // ---- inputs --------------------------------------------------------------------------

    /// A new connection: its id. Its first frame must be a `ConnectRequest`.
    pub fn handle_accept(&mut self) -> ConnId {
        let id = self.next_conn;
        self.next_conn += 1;
        self.conns.insert(id, Conn::Handshake);
        id
    }

    /// A whole frame (without its length prefix) read from `conn`. Frames of a connection
    /// already closed or cut are ignored; a frame that does not decode cuts the connection,
    /// as ZooKeeper closes it.
    pub fn handle_frame(&mut self, now: Instant, conn: ConnId, frame: &[u8]) {
        self.packets.0 += 1;
        match self.conns.get(&conn).copied() {
            None => {}
            Some(Conn::Handshake) => match ConnectRequest::decode_exact(frame, "ConnectRequest") {
                Ok(req) => self.handshake(now, conn, &req),
                Err(_) => self.drop_conn(conn, Some(Output::Cut(conn))),
            },
            Some(Conn::Open(session)) => {
                if let Some(s) = self.sessions.get_mut(&session) {
                    s.deadline = now.checked_add(s.timeout).unwrap_or(now);
                }
                match Request::decode_frame(frame) {
                    Ok((header, request)) => self.request(now, conn, session, header.xid, request),
                    Err(_) => self.drop_conn(conn, Some(Output::Cut(conn))),
                }
            }
        }
    }

    /// `conn` ended (the client hung up, or the driver closed it). Its session stays until
    /// its deadline; its watches go.
    pub fn handle_disconnect(&mut self, conn: ConnId) {
        self.drop_conn(conn, None);
    }

    /// Expires the sessions whose deadline is `now` or past. A spurious call does nothing.
    pub fn handle_timeout(&mut self, now: Instant) {
        let due: Vec<i64> = self
            .sessions
            .iter()
            .filter(|(_, s)| s.deadline <= now)
            .map(|(&id, _)| id)
            .collect();
        for id in due {
            self.end_session(now, id, None);
        }
        self.sweep_containers(now);
    }

    /// The earliest session deadline.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.sessions.values().map(|s| s.deadline).min()
    }

    /// The next thing for the driver to do.
    pub fn poll_output(&mut self) -> Option<Output> {
        self.out.pop_front()
    }

    // ---- commands ------------------------------------------------------------------------

    /// Drops `session`'s connection now (replies not yet written are lost); the session
    /// stays. Whether it had one.
    pub fn cut(&mut self, session: i64) -> bool {
        match self.conn_of(session) {
            Some(conn) => {
                self.drop_conn(conn, Some(Output::Cut(conn)));
                true
            }
            None => false,
        }
    }

    /// Sets every session's deadline to `at` (a stopped server expires nobody: `at` far
    /// ahead), or, with `None`, to `now` plus its timeout (a server that starts gives every
    /// session it loads its whole timeout again, as ZooKeeper does).
    pub fn set_deadlines(&mut self, now: Instant, at: Option<Instant>) {
        for s in self.sessions.values_mut() {
            s.deadline = at.unwrap_or_else(|| now.checked_add(s.timeout).unwrap_or(now));
        }
    }

    /// Expires `session` now, as its deadline would. Whether it was live.
    pub fn expire(&mut self, now: Instant, session: i64) -> bool {
        let live = self.sessions.contains_key(&session);
        if live {
            self.end_session(now, session, None);
        }
        live
    }

    // ---- the zxid and the clock ----------------------------------------------------------

    fn next_zxid(&mut self) -> i64 {
        self.zxid += 1;
        self.zxid
    }

    fn wall_ms(&self, now: Instant) -> i64 {
        let since = now.saturating_duration_since(self.start).as_millis();
        EPOCH_MS.saturating_add(i64::try_from(since).unwrap_or(i64::MAX / 2))
    }

    // ---- requests ------------------------------------------------------------------------

    /// Answers one request: its opcode family's handler (`session.rs`, `watch.rs`, `read.rs`,
    /// `write.rs`), then the reply, then the container manager if it is due.
    fn request(&mut self, now: Instant, conn: ConnId, session: i64, xid: i32, request: Request) {
        use Request as R;
        let mut ids = self
            .idents
            .get(&conn)
            .cloned()
            .unwrap_or_else(acl::new_connection);
        if self.config.skip_acl {
            ids.push(acl::superuser());
        }
        let answer = match request {
            R::Ping | R::Auth(_) | R::WhoAmI | R::CloseSession => {
                match self.session_request(now, conn, session, xid, &ids, request) {
                    Some(answer) => answer,
                    // Answered already (`addAuth`), or the session ended (`closeSession`).
                    None => return,
                }
            }
            R::SetWatches(_)
            | R::SetWatches2(_)
            | R::AddWatch(_)
            | R::CheckWatches(_)
            | R::RemoveWatches(_) => self.watch_request(session, request),
            R::Exists(_)
            | R::GetData(_)
            | R::GetChildren(_)
            | R::GetChildren2(_)
            | R::GetAcl(_)
            | R::Sync(_)
            | R::GetEphemerals(_)
            | R::GetAllChildrenNumber(_)
            | R::MultiRead(_) => self.read_request(session, &ids, request),
            R::Create(_)
            | R::Create2(_)
            | R::CreateContainer(_)
            | R::CreateTtl(_)
            | R::Delete(_)
            | R::SetData(_)
            | R::SetAcl(_)
            | R::Check(_)
            | R::Multi(_) => self.write_request(now, session, &ids, request),
            // reconfig, SASL.
            _ => Err(ErrorCode::Unimplemented),
        };
        let zxid = self.zxid;
        self.send_reply(conn, xid, zxid, answer);
        self.sweep_containers(now);
    }

    // ---- output --------------------------------------------------------------------------

    fn send_reply(&mut self, conn: ConnId, xid: i32, zxid: i64, answer: Result<Body, ErrorCode>) {
        let (err, body) = match answer {
            Ok(body) => (ErrorCode::Ok, body),
            Err(code) => (code, None),
        };
        let header = ReplyHeader { xid, zxid, err };
        self.send_parts(conn, &header, body.as_deref());
    }

    fn send_record(&mut self, conn: ConnId, record: &dyn Encode) {
        self.send_parts(conn, record, None);
    }

    /// Frames `head` and `tail` as one message to `conn`. Nothing the server builds is over
    /// `i32::MAX` bytes; if it were, the connection would be cut rather than sent a lie.
    fn send_parts(&mut self, conn: ConnId, head: &dyn Encode, tail: Option<&dyn Encode>) {
        let len = head.encoded_len() + tail.map_or(0, Encode::encoded_len);
        let mut frame = BytesMut::with_capacity(4 + len);
        let encoded = i32::try_from(len).ok().and_then(|prefix| {
            frame.put_i32(prefix);
            head.encode(&mut frame).ok()?;
            tail.map_or(Ok(()), |t| t.encode(&mut frame)).ok()
        });
        match encoded {
            Some(()) => {
                self.packets.1 += 1;
                self.out.push_back(Output::Send(conn, frame.freeze()));
            }
            None => self.drop_conn(conn, Some(Output::Cut(conn))),
        }
    }
}
