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
use zk_proto::records::{
    Acl, Buffer, ConnectRequest, ConnectResponse, Create2Response, CreateRequest, CreateResponse,
    CreateTtlRequest, ErrorResponse, ExistsResponse, GetAclResponse, GetAllChildrenNumberResponse,
    GetChildren2Response, GetChildrenResponse, GetDataResponse, GetEphemeralsResponse, Id, Perms,
    SetAclResponse, SetDataResponse, SyncResponse, WatcherEvent, WhoAmIResponse,
};
use zk_proto::{
    AddWatchMode, CreateMode, Decode, Encode, ErrorCode, KeeperState, MultiOp, MultiRequest,
    MultiResponse, MultiResult, ReplyHeader, Request, xid,
};

mod snapshot;

pub use snapshot::SnapshotError;

use super::acl;
use super::data_tree::{Change, DataTree, split_path, validate_create};
use super::watches::{Notification, WatchKind, WatchTable};
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

    // ---- connections and sessions --------------------------------------------------------

    fn next_zxid(&mut self) -> i64 {
        self.zxid += 1;
        self.zxid
    }

    fn wall_ms(&self, now: Instant) -> i64 {
        let since = now.saturating_duration_since(self.start).as_millis();
        EPOCH_MS.saturating_add(i64::try_from(since).unwrap_or(i64::MAX / 2))
    }

    /// Forgets `conn` (detaching it from its session, whose watches go), then emits `how`.
    fn drop_conn(&mut self, conn: ConnId, how: Option<Output>) {
        self.idents.remove(&conn);
        if let Some(Conn::Open(session)) = self.conns.remove(&conn) {
            let attached = self
                .sessions
                .get_mut(&session)
                .filter(|s| s.conn == Some(conn));
            if let Some(s) = attached {
                s.conn = None;
                self.watches.remove_session(session);
            }
        }
        if let Some(out) = how {
            self.out.push_back(out);
        }
    }

    fn handshake(&mut self, now: Instant, conn: ConnId, req: &ConnectRequest) {
        if req.last_zxid_seen > self.zxid {
            // "Refusing session request for client as it has seen zxid ... our last zxid is
            // ...": the client has seen a newer server than this one, and must go elsewhere.
            self.drop_conn(conn, Some(Output::Cut(conn)));
            return;
        }
        let asked = Duration::from_millis(u64::try_from(req.time_out).unwrap_or(0));
        let timeout = asked.clamp(
            self.config.min_session_timeout,
            self.config
                .max_session_timeout
                .max(self.config.min_session_timeout),
        );
        let deadline = now.checked_add(timeout).unwrap_or(now);
        let id = if req.session_id == 0 {
            self.next_zxid(); // createSession is a transaction
            let id = self.next_session;
            self.next_session += 1;
            let mut passwd = BytesMut::with_capacity(16);
            passwd.put_u64(self.rng.next_u64());
            passwd.put_u64(self.rng.next_u64());
            self.sessions.insert(
                id,
                Session {
                    passwd: passwd.freeze(),
                    timeout,
                    deadline,
                    conn: None,
                },
            );
            id
        } else {
            match self.sessions.get_mut(&req.session_id) {
                Some(s) if req.passwd.as_deref() == Some(&s.passwd[..]) => {
                    s.timeout = timeout;
                    s.deadline = deadline;
                    req.session_id
                }
                _ => {
                    // Expired, unknown, or the wrong password: timeout 0, then close.
                    let refusal = ConnectResponse {
                        protocol_version: 0,
                        time_out: 0,
                        session_id: 0,
                        passwd: Some(Bytes::from_static(&[0; 16])),
                        read_only: Some(false),
                    };
                    self.send_record(conn, &refusal);
                    self.drop_conn(conn, Some(Output::Close(conn)));
                    return;
                }
            }
        };
        // A session moving to a new connection leaves its old one (and its watches).
        if let Some(old) = self.conn_of(id).filter(|&old| old != conn) {
            self.drop_conn(old, Some(Output::Cut(old)));
        }
        if let Some(s) = self.sessions.get_mut(&id) {
            s.conn = Some(conn);
        }
        self.conns.insert(conn, Conn::Open(id));
        let passwd = self.sessions.get(&id).map(|s| s.passwd.clone());
        let granted = ConnectResponse {
            protocol_version: 0,
            time_out: i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX),
            session_id: id,
            passwd,
            read_only: Some(false),
        };
        self.send_record(conn, &granted);
    }

    /// Ends `session` (closed, or expired): one transaction deletes its ephemerals, watches
    /// fire for the others, its connection is closed after `reply` (a `closeSession` xid) or
    /// cut (expiry).
    fn end_session(&mut self, now: Instant, session: i64, reply: Option<i32>) {
        let zxid = self.next_zxid();
        self.watches.remove_session(session);
        let mut changes = Vec::new();
        self.tree.kill_session(session, zxid, &mut changes);
        self.notify(zxid, &changes);
        if let Some(conn) = self.sessions.remove(&session).and_then(|s| s.conn) {
            self.conns.remove(&conn);
            self.idents.remove(&conn);
            match reply {
                Some(xid) => {
                    self.send_reply(conn, xid, zxid, Ok(None));
                    self.out.push_back(Output::Close(conn));
                }
                None => self.out.push_back(Output::Cut(conn)),
            }
        }
        self.sweep_containers(now);
    }

    // ---- requests ------------------------------------------------------------------------

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
            R::Ping => Ok(None),
            R::Auth(a) => {
                self.add_auth(conn, xid, &a.scheme, &a.auth);
                return;
            }
            R::WhoAmI => body(WhoAmIResponse {
                client_info: acl::client_infos(&ids),
            }),
            R::CloseSession => {
                self.end_session(now, session, Some(xid));
                return;
            }
            R::SetWatches(w) => {
                let lists = [
                    &w.data_watches[..],
                    &w.exist_watches[..],
                    &w.child_watches[..],
                    &[],
                    &[],
                ];
                self.set_watches(session, w.relative_zxid, lists);
                Ok(None)
            }
            R::SetWatches2(w) => {
                let lists = [
                    &w.data_watches[..],
                    &w.exist_watches[..],
                    &w.child_watches[..],
                    &w.persistent_watches[..],
                    &w.persistent_recursive_watches[..],
                ];
                self.set_watches(session, w.relative_zxid, lists);
                Ok(None)
            }
            R::AddWatch(r) => {
                let kind = match r.mode {
                    AddWatchMode::Persistent => WatchKind::Persistent,
                    AddWatchMode::PersistentRecursive => WatchKind::PersistentRecursive,
                };
                zk_proto::validate_path(&r.path, false)
                    .map_err(|_| ErrorCode::BadArguments)
                    .and_then(|()| {
                        self.watches.add(kind, &r.path, session);
                        // ZooKeeper answers addWatch with an ErrorResponse body saying Ok.
                        body(ErrorResponse { err: ErrorCode::Ok })
                    })
            }
            R::CheckWatches(r) => WatchKind::named_by(r.watcher_type).and_then(|kinds| {
                if self.watches.contains(kinds, &r.path, session) {
                    Ok(None)
                } else {
                    Err(ErrorCode::NoWatcher)
                }
            }),
            R::RemoveWatches(r) => WatchKind::named_by(r.watcher_type).and_then(|kinds| {
                if self.watches.remove(kinds, &r.path, session) {
                    Ok(None)
                } else {
                    Err(ErrorCode::NoWatcher)
                }
            }),
            R::Exists(r) => self.exists(session, &r.path, r.watch),
            R::GetData(r) => self.get_data(session, &ids, &r.path, r.watch),
            R::GetChildren(r) => self
                .children(session, &ids, &r.path, r.watch)
                .and_then(|(children, _)| body(GetChildrenResponse { children })),
            R::GetChildren2(r) => self
                .children(session, &ids, &r.path, r.watch)
                .and_then(|(children, stat)| body(GetChildren2Response { children, stat })),
            R::GetAcl(r) => match self.tree.get(&r.path) {
                Some(n) => {
                    let both = Perms(Perms::READ.0 | Perms::ADMIN.0);
                    acl::check(&n.acl, both, &ids).and_then(|()| {
                        // Without ADMIN, digest ids are shown as `user:x`.
                        let acl = match acl::check(&n.acl, Perms::ADMIN, &ids) {
                            Ok(()) => n.acl.clone(),
                            Err(_) => acl::redacted(&n.acl),
                        };
                        body(GetAclResponse {
                            acl,
                            stat: n.stat(),
                        })
                    })
                }
                None => Err(ErrorCode::NoNode),
            },
            R::Sync(r) => body(SyncResponse { path: r.path }),
            R::GetEphemerals(r) => {
                let prefix = r.prefix_path.trim();
                let all = prefix.is_empty() || prefix == "/";
                let ephemerals = self
                    .tree
                    .ephemerals()
                    .filter(|(p, owner)| *owner == session && (all || p.starts_with(prefix)))
                    .map(|(p, _)| p.to_owned())
                    .collect();
                body(GetEphemeralsResponse { ephemerals })
            }
            R::GetAllChildrenNumber(r) => match self.tree.get(&r.path) {
                Some(n) => acl::check(&n.acl, Perms::READ, &ids).and_then(|()| {
                    body(GetAllChildrenNumberResponse {
                        total_number: i32::try_from(self.tree.descendants(&r.path))
                            .unwrap_or(i32::MAX),
                    })
                }),
                None => Err(ErrorCode::NoNode),
            },
            R::MultiRead(m) => self.multi_read(session, &ids, &m),
            R::Create(r) => self
                .write(now, |t, zxid, time, ch| {
                    create(t, (&r).into(), &ids, session, zxid, time, ch)
                })
                .and_then(|(path, _)| body(CreateResponse { path })),
            R::Create2(r) | R::CreateContainer(r) => self
                .write(now, |t, zxid, time, ch| {
                    create(t, (&r).into(), &ids, session, zxid, time, ch)
                })
                .and_then(|(path, stat)| body(Create2Response { path, stat })),
            R::CreateTtl(r) => self
                .write(now, |t, zxid, time, ch| {
                    create(t, (&r).into(), &ids, session, zxid, time, ch)
                })
                .and_then(|(path, stat)| body(Create2Response { path, stat })),
            R::Delete(r) => self
                .write(now, |t, zxid, _, ch| {
                    delete(t, &r.path, r.version, &ids, zxid, ch)
                })
                .map(|()| None),
            R::SetData(r) => self
                .write(now, |t, zxid, time, ch| {
                    permitted(t, &r.path, Perms::WRITE, &ids)?;
                    t.set_data(&r.path, r.data.clone(), r.version, zxid, time, ch)
                })
                .and_then(|stat| body(SetDataResponse { stat })),
            R::SetAcl(r) => self
                .write(now, |t, _, _, _| {
                    set_acl(t, &r.path, &r.acl, r.version, &ids)
                })
                .and_then(|stat| body(SetAclResponse { stat })),
            R::Check(r) => self
                .write(now, |t, _, _, _| {
                    permitted(t, &r.path, Perms::READ, &ids)?;
                    t.check(&r.path, r.version)
                })
                .and_then(|stat| body(SetDataResponse { stat })),
            R::Multi(m) => self.multi(now, session, &ids, &m),
            // reconfig, SASL.
            _ => Err(ErrorCode::Unimplemented),
        };
        let zxid = self.zxid;
        self.send_reply(conn, xid, zxid, answer);
        self.sweep_containers(now);
    }

    /// `addAuth`: answered at once with zxid 0, as ZooKeeper does (not a transaction). A
    /// scheme no provider serves is `AuthFailed`, and the connection is closed after the reply.
    fn add_auth(&mut self, conn: ConnId, xid: i32, scheme: &str, auth: &Buffer) {
        let auth = auth.as_deref().unwrap_or_default();
        match acl::authenticate(scheme, auth) {
            Ok(id) => {
                let ids = self.idents.entry(conn).or_insert_with(acl::new_connection);
                if !ids.contains(&id) {
                    ids.push(id);
                }
                self.send_reply(conn, xid, 0, Ok(None));
            }
            Err(code) => {
                self.send_reply(conn, xid, 0, Err(code));
                self.drop_conn(conn, Some(Output::Close(conn)));
            }
        }
    }

    /// Runs one write as a transaction: a zxid (taken even when it fails, as ZooKeeper logs
    /// an error transaction), then the watches it fires.
    fn write<T>(
        &mut self,
        now: Instant,
        op: impl FnOnce(&mut DataTree, i64, i64, &mut Vec<Change>) -> Result<T, ErrorCode>,
    ) -> Result<T, ErrorCode> {
        let zxid = self.next_zxid();
        let time = self.wall_ms(now);
        let mut changes = Vec::new();
        let result = op(&mut self.tree, zxid, time, &mut changes);
        self.notify(zxid, &changes);
        result
    }

    fn exists(&mut self, session: i64, path: &str, watch: bool) -> Result<Body, ErrorCode> {
        zk_proto::validate_path(path, false).map_err(|_| ErrorCode::BadArguments)?;
        if watch {
            self.watches.add(WatchKind::Data, path, session);
        }
        match self.tree.get(path) {
            Some(n) => body(ExistsResponse { stat: n.stat() }),
            None => Err(ErrorCode::NoNode),
        }
    }

    fn get_data(
        &mut self,
        session: i64,
        ids: &[Id],
        path: &str,
        watch: bool,
    ) -> Result<Body, ErrorCode> {
        let n = self.tree.get(path).ok_or(ErrorCode::NoNode)?;
        acl::check(&n.acl, Perms::READ, ids)?;
        let reply = GetDataResponse {
            data: n.data.clone(),
            stat: n.stat(),
        };
        if watch {
            self.watches.add(WatchKind::Data, path, session);
        }
        body(reply)
    }

    fn children(
        &mut self,
        session: i64,
        ids: &[Id],
        path: &str,
        watch: bool,
    ) -> Result<(Vec<String>, zk_proto::records::Stat), ErrorCode> {
        let n = self.tree.get(path).ok_or(ErrorCode::NoNode)?;
        acl::check(&n.acl, Perms::READ, ids)?;
        let mut children: Vec<String> = n.children.iter().cloned().collect();
        let stat = n.stat();
        if self.config.shuffle_children {
            for i in (1..children.len()).rev() {
                let j = self.rng.index(i + 1);
                children.swap(i, j);
            }
        }
        if watch {
            self.watches.add(WatchKind::Child, path, session);
        }
        Ok((children, stat))
    }

    fn set_watches(&mut self, session: i64, relative_zxid: i64, lists: [&[String]; 5]) {
        let mut fired = Vec::new();
        self.watches
            .set_watches(&self.tree, session, relative_zxid, lists, &mut fired);
        let zxid = self.zxid;
        self.send_notifications(zxid, &fired);
    }

    fn multi_read(
        &mut self,
        session: i64,
        ids: &[Id],
        m: &MultiRequest,
    ) -> Result<Body, ErrorCode> {
        let mut results = Vec::with_capacity(m.ops.len());
        for op in &m.ops {
            let result = match op {
                MultiOp::GetChildren(r) => {
                    self.children(session, ids, &r.path, r.watch)
                        .map(|(children, _)| {
                            MultiResult::GetChildren(GetChildrenResponse { children })
                        })
                }
                MultiOp::GetData(r) => match self.tree.get(&r.path) {
                    Some(n) if acl::check(&n.acl, Perms::READ, ids).is_err() => {
                        Err(ErrorCode::NoAuth)
                    }
                    Some(n) => {
                        let data = GetDataResponse {
                            data: n.data.clone(),
                            stat: n.stat(),
                        };
                        if r.watch {
                            self.watches.add(WatchKind::Data, &r.path, session);
                        }
                        Ok(MultiResult::GetData(data))
                    }
                    None => Err(ErrorCode::NoNode),
                },
                _ => Err(ErrorCode::BadArguments),
            };
            results.push(result.unwrap_or_else(MultiResult::Error));
        }
        body(MultiResponse { results })
    }

    /// A transaction: every op applies, under one zxid, or none does. On failure the ops
    /// before the failing one answer `Ok`, it answers its code, the later ones
    /// `RuntimeInconsistency` (ZooKeeper's `DataTree.processTxn`).
    fn multi(
        &mut self,
        now: Instant,
        session: i64,
        ids: &[Id],
        m: &MultiRequest,
    ) -> Result<Body, ErrorCode> {
        let zxid = self.next_zxid();
        let time = self.wall_ms(now);
        let mut scratch = self.tree.clone();
        let mut changes = Vec::new();
        let mut results = Vec::with_capacity(m.ops.len());
        let mut failed = None;
        for (i, op) in m.ops.iter().enumerate() {
            let ch = &mut changes;
            let result = match op {
                MultiOp::Create(r) => create(&mut scratch, r.into(), ids, session, zxid, time, ch)
                    .map(|(path, _)| MultiResult::Create(CreateResponse { path })),
                MultiOp::Create2(r) | MultiOp::CreateContainer(r) => {
                    create(&mut scratch, r.into(), ids, session, zxid, time, ch)
                        .map(|(path, stat)| MultiResult::Create2(Create2Response { path, stat }))
                }
                MultiOp::Delete(r) => delete(&mut scratch, &r.path, r.version, ids, zxid, ch)
                    .map(|()| MultiResult::Delete),
                MultiOp::SetData(r) => permitted(&scratch, &r.path, Perms::WRITE, ids)
                    .and_then(|()| {
                        scratch.set_data(&r.path, r.data.clone(), r.version, zxid, time, ch)
                    })
                    .map(|stat| MultiResult::SetData(SetDataResponse { stat })),
                MultiOp::Check(r) => permitted(&scratch, &r.path, Perms::READ, ids)
                    .and_then(|()| scratch.check(&r.path, r.version))
                    .map(|_| MultiResult::Check),
                MultiOp::CreateTtl(r) => {
                    create(&mut scratch, r.into(), ids, session, zxid, time, ch)
                        .map(|(path, stat)| MultiResult::Create2(Create2Response { path, stat }))
                }
                MultiOp::GetChildren(_) | MultiOp::GetData(_) => Err(ErrorCode::BadArguments),
            };
            match result {
                Ok(r) => results.push(r),
                Err(code) => {
                    failed = Some((i, code));
                    break;
                }
            }
        }
        let results = match failed {
            None => {
                self.tree = scratch;
                self.notify(zxid, &changes);
                results
            }
            Some((at, code)) => (0..m.ops.len())
                .map(|i| {
                    MultiResult::Error(match i.cmp(&at) {
                        std::cmp::Ordering::Less => ErrorCode::Ok,
                        std::cmp::Ordering::Equal => code,
                        std::cmp::Ordering::Greater => ErrorCode::RuntimeInconsistency,
                    })
                })
                .collect(),
        };
        body(MultiResponse { results })
    }

    /// Removes every container that had a child and has none now, and every TTL node past
    /// its TTL with no children, each in its own transaction (ZooKeeper's container manager
    /// sends `deleteContainer` for each), when [`ServerConfig::container_manager`] says it is
    /// time.
    fn sweep_containers(&mut self, now: Instant) {
        let Some(interval) = self.config.container_manager else {
            return;
        };
        if now.saturating_duration_since(self.last_sweep) < interval {
            return;
        }
        self.last_sweep = now;
        let now_ms = self.wall_ms(now);
        loop {
            let due = self.tree.due_for_removal(now_ms);
            if due.is_empty() {
                return;
            }
            for path in due {
                let zxid = self.next_zxid();
                let mut changes = Vec::new();
                self.tree
                    .delete_container(&path, now_ms, zxid, &mut changes);
                self.notify(zxid, &changes);
            }
        }
    }

    // ---- output --------------------------------------------------------------------------

    fn notify(&mut self, zxid: i64, changes: &[Change]) {
        let mut fired = Vec::new();
        self.watches.fire(changes, &mut fired);
        self.send_notifications(zxid, &fired);
    }

    fn send_notifications(&mut self, zxid: i64, fired: &[Notification]) {
        for n in fired {
            let Some(conn) = self.conn_of(n.session) else {
                continue;
            };
            let header = ReplyHeader {
                xid: xid::NOTIFICATION,
                zxid,
                err: ErrorCode::Ok,
            };
            let event = WatcherEvent {
                event_type: n.event,
                state: KeeperState::SyncConnected,
                path: n.path.clone(),
            };
            self.send_parts(conn, &header, Some(&event));
        }
    }

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

/// What a create asks for: a `create`/`create2`/`createContainer` (no TTL) or a `createTTL`.
struct NewNode<'a> {
    path: &'a str,
    data: &'a Buffer,
    acl: &'a [Acl],
    mode: CreateMode,
    ttl: i64,
}

impl<'a> From<&'a CreateRequest> for NewNode<'a> {
    fn from(r: &'a CreateRequest) -> Self {
        NewNode {
            path: &r.path,
            data: &r.data,
            acl: &r.acl,
            mode: r.mode,
            ttl: -1,
        }
    }
}

impl<'a> From<&'a CreateTtlRequest> for NewNode<'a> {
    fn from(r: &'a CreateTtlRequest) -> Self {
        NewNode {
            path: &r.path,
            data: &r.data,
            acl: &r.acl,
            mode: r.mode,
            ttl: r.ttl,
        }
    }
}

/// A create with its ACL checks in ZooKeeper's order (`PrepRequestProcessor`): the TTL and
/// the path, the new ACL's fix-up (`InvalidAcl`), the parent (`NoNode`), `CREATE` on the
/// parent (`NoAuth`), then the tree's own checks (`NodeExists`, ...).
fn create(
    tree: &mut DataTree,
    new: NewNode<'_>,
    ids: &[Id],
    session: i64,
    zxid: i64,
    time: i64,
    changes: &mut Vec<Change>,
) -> Result<(String, zk_proto::records::Stat), ErrorCode> {
    validate_create(new.path, new.mode, new.ttl)?;
    let fixed = acl::fixup(new.acl, ids)?;
    if let Some(parent) = split_path(new.path).and_then(|(parent, _)| tree.get(parent)) {
        acl::check(&parent.acl, Perms::CREATE, ids)?;
    }
    tree.create(
        new.path,
        new.data.clone(),
        &fixed,
        new.mode,
        new.ttl,
        session,
        zxid,
        time,
        changes,
    )
}

/// `delete` with `DELETE` checked on the parent, after the parent's `NoNode` and before the
/// node's.
fn delete(
    tree: &mut DataTree,
    path: &str,
    version: i32,
    ids: &[Id],
    zxid: i64,
    changes: &mut Vec<Change>,
) -> Result<(), ErrorCode> {
    if zk_proto::validate_path(path, false).is_ok() {
        if let Some(parent) = split_path(path).and_then(|(parent, _)| tree.get(parent)) {
            acl::check(&parent.acl, Perms::DELETE, ids)?;
        }
    }
    tree.delete(path, version, zxid, changes)
}

/// `setACL`: the new ACL's fix-up (`InvalidAcl`), then the node (`NoNode`), `ADMIN` on it
/// (`NoAuth`), its `aversion` (`BadVersion`).
fn set_acl(
    tree: &mut DataTree,
    path: &str,
    new: &[Acl],
    version: i32,
    ids: &[Id],
) -> Result<zk_proto::records::Stat, ErrorCode> {
    zk_proto::validate_path(path, false).map_err(|_| ErrorCode::BadArguments)?;
    let fixed = acl::fixup(new, ids)?;
    permitted(tree, path, Perms::ADMIN, ids)?;
    tree.set_acl(path, &fixed, version)
}

/// `perm` on the node at `path` for `ids`; a missing node passes (its `NoNode` comes from the
/// operation itself, before `NoAuth` as in ZooKeeper).
fn permitted(tree: &DataTree, path: &str, perm: Perms, ids: &[Id]) -> Result<(), ErrorCode> {
    match tree.get(path) {
        Some(node) => acl::check(&node.acl, perm, ids),
        None => Ok(()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use zk_proto::records::{
        CheckVersionRequest, DeleteRequest, GetDataRequest, SetDataRequest, SetWatches,
    };
    use zk_proto::{CreateMode, EventType, OpCode, Response, ServerFrame, records::Acl};

    use super::*;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    /// A machine and a connected session on connection 1 (timeout 6 s), at `t0`.
    fn connected(t0: Instant) -> (ServerMachine, ConnId, i64, Bytes) {
        let mut m = ServerMachine::new(ServerConfig::new(1), t0);
        let (conn, id, passwd) = handshake(&mut m, t0, 0, None, 6000);
        let (id, passwd) = (id.unwrap(), passwd);
        (m, conn, id, passwd)
    }

    /// Opens a connection and shakes hands: the connection, the granted session (`None` for
    /// a refusal) and password.
    fn handshake(
        m: &mut ServerMachine,
        now: Instant,
        session_id: i64,
        passwd: Option<Bytes>,
        time_out: i32,
    ) -> (ConnId, Option<i64>, Bytes) {
        let conn = m.handle_accept();
        let req = ConnectRequest {
            protocol_version: 0,
            last_zxid_seen: 0,
            time_out,
            session_id,
            passwd: Some(passwd.unwrap_or_else(|| Bytes::from_static(&[0; 16]))),
            read_only: Some(false),
        };
        m.handle_frame(now, conn, &req.to_bytes().unwrap());
        // (A session moving here first cuts its old connection.)
        let frame = std::iter::from_fn(|| m.poll_output())
            .find_map(|o| match o {
                Output::Send(to, frame) if to == conn => Some(frame),
                _ => None,
            })
            .expect("an answer");
        let resp = ConnectResponse::decode_exact(&frame[4..], "ConnectResponse").unwrap();
        let granted = (resp.time_out > 0).then_some(resp.session_id);
        (conn, granted, resp.passwd.unwrap())
    }

    /// Sends `req` on `conn` and returns every output, frames decoded (replies as answers
    /// to `req`).
    fn send(
        m: &mut ServerMachine,
        now: Instant,
        conn: ConnId,
        xid: i32,
        req: Request,
    ) -> Vec<(ConnId, Result<ServerFrame, Output>)> {
        let op = req.op_code();
        let mut out = BytesMut::new();
        req.encode_frame(xid, &mut out, usize::MAX).unwrap();
        m.handle_frame(now, conn, &out[4..]);
        drain(m, op)
    }

    fn drain(m: &mut ServerMachine, op: OpCode) -> Vec<(ConnId, Result<ServerFrame, Output>)> {
        std::iter::from_fn(|| m.poll_output())
            .map(|o| match o {
                Output::Send(conn, frame) => (
                    conn,
                    Ok(ServerFrame::decode(&frame[4..], |_| Some(op)).unwrap()),
                ),
                Output::Close(conn) | Output::Cut(conn) => (conn, Err(o)),
            })
            .collect()
    }

    fn create(path: &str, mode: CreateMode) -> Request {
        Request::Create(CreateRequest {
            path: path.into(),
            data: None,
            acl: Acl::open_unsafe().into(),
            mode,
        })
    }

    #[test]
    fn timeouts_are_clamped_and_a_wrong_password_is_refused_then_closed() {
        let t0 = Instant::now();
        let mut m = ServerMachine::new(ServerConfig::new(1), t0);
        let (_, id, passwd) = handshake(&mut m, t0, 0, None, 100);
        assert_eq!(m.sessions()[0].timeout, secs(4), "raised to the minimum");
        let id = id.unwrap();
        let (conn, refused, _) = handshake(&mut m, t0, id, Some(Bytes::from_static(b"x")), 6000);
        assert_eq!(refused, None);
        assert_eq!(m.poll_output(), Some(Output::Close(conn)));
        let (_, resumed, again) = handshake(&mut m, t0, id, Some(passwd.clone()), 90_000);
        assert_eq!((resumed, again), (Some(id), passwd));
        assert_eq!(m.sessions()[0].timeout, secs(40), "lowered to the maximum");
    }

    #[test]
    fn a_silent_session_expires_at_its_deadline_and_others_hear_of_its_ephemerals() {
        let t0 = Instant::now();
        let (mut m, a, _, _) = connected(t0);
        let (b, b_id, _) = handshake(&mut m, t0 + secs(1), 0, None, 6000);
        send(&mut m, t0, a, 1, create("/e", CreateMode::Ephemeral));
        let get = Request::GetData(GetDataRequest {
            path: "/e".into(),
            watch: true,
        });
        send(&mut m, t0 + secs(1), b, 1, get);
        assert_eq!(m.poll_timeout(), Some(t0 + secs(6)));
        m.handle_timeout(t0 + secs(6) - Duration::from_millis(1));
        assert!(m.poll_output().is_none(), "not yet");
        m.handle_timeout(t0 + secs(6));
        let out = drain(&mut m, OpCode::GetData);
        let [
            (to_b, Ok(ServerFrame::Notification(_, event))),
            (to_a, Err(Output::Cut(_))),
        ] = &out[..]
        else {
            panic!("{out:?}")
        };
        assert_eq!((*to_b, *to_a), (b, a));
        assert_eq!(
            (event.event_type, event.path.as_str()),
            (EventType::NodeDeleted, "/e")
        );
        assert!(m.tree().get("/e").is_none());
        assert_eq!(m.sessions().len(), 1);
        assert_eq!(m.poll_timeout(), Some(t0 + secs(7)), "b's deadline");
        assert!(b_id.is_some());
    }

    #[test]
    fn set_watches_fires_what_changed_since_the_clients_zxid_and_sets_the_rest() {
        let t0 = Instant::now();
        let (mut m, a, id, passwd) = connected(t0);
        for path in ["/d", "/same", "/p"] {
            send(&mut m, t0, a, 1, create(path, CreateMode::Persistent));
        }
        let seen = m.zxid();
        m.handle_disconnect(a);
        let set = Request::SetData(SetDataRequest {
            path: "/d".into(),
            data: None,
            version: -1,
        });
        let (b, _, _) = handshake(&mut m, t0, 0, None, 6000);
        send(&mut m, t0, b, 1, set);
        send(&mut m, t0, b, 2, create("/p/c", CreateMode::Persistent));
        send(&mut m, t0, b, 3, create("/new", CreateMode::Persistent));

        let (a, resumed, _) = handshake(&mut m, t0, id, Some(passwd), 6000);
        assert_eq!(resumed, Some(id));
        let watches = SetWatches {
            relative_zxid: seen,
            data_watches: vec!["/d".into(), "/same".into(), "/gone".into()],
            exist_watches: vec!["/new".into(), "/absent".into()],
            child_watches: vec!["/p".into()],
        };
        let events: Vec<(EventType, String)> = send(
            &mut m,
            t0,
            a,
            xid::SET_WATCHES,
            Request::SetWatches(watches),
        )
        .into_iter()
        .filter_map(|(_, f)| match f {
            Ok(ServerFrame::Notification(_, e)) => Some((e.event_type, e.path)),
            Ok(ServerFrame::Reply(h, _)) => {
                assert_eq!(h.xid, xid::SET_WATCHES, "the reply comes last");
                None
            }
            Err(o) => panic!("{o:?}"),
        })
        .collect();
        let expected = [
            (EventType::NodeDataChanged, "/d"),
            (EventType::NodeDeleted, "/gone"),
            (EventType::NodeCreated, "/new"),
            (EventType::NodeChildrenChanged, "/p"),
        ];
        assert_eq!(
            events,
            expected.map(|(e, p)| (e, p.to_owned())),
            "changed since {seen}"
        );
        assert_eq!(m.watch_count(), 2, "/same and /absent are set");
    }

    #[test]
    fn a_failed_multi_changes_nothing_and_says_which_op_failed() {
        let t0 = Instant::now();
        let (mut m, a, _, _) = connected(t0);
        let multi = MultiRequest {
            ops: vec![
                MultiOp::Create(CreateRequest {
                    path: "/x".into(),
                    data: None,
                    acl: Acl::open_unsafe().into(),
                    mode: CreateMode::Persistent,
                }),
                MultiOp::Delete(DeleteRequest {
                    path: "/nope".into(),
                    version: -1,
                }),
                MultiOp::Check(CheckVersionRequest {
                    path: "/".into(),
                    version: -1,
                }),
            ],
        };
        let before = m.zxid();
        let out = send(&mut m, t0, a, 1, Request::Multi(multi));
        let [(_, Ok(ServerFrame::Reply(header, Some(Response::Multi(r)))))] = &out[..] else {
            panic!("{out:?}")
        };
        assert_eq!((header.err, header.zxid), (ErrorCode::Ok, before + 1));
        assert_eq!(
            r.results,
            [
                MultiResult::Error(ErrorCode::Ok),
                MultiResult::Error(ErrorCode::NoNode),
                MultiResult::Error(ErrorCode::RuntimeInconsistency)
            ]
        );
        assert!(m.tree().get("/x").is_none());
    }
}
