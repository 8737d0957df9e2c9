//! [`SimServer`]: a single ZooKeeper server in memory that speaks the real wire protocol, for
//! running the real `zk_client::Client` (and the async lock crates on it) on tokio's paused
//! clock, seeded and with faults on command.
//!
//! Clients reach it through [`SimServer::dial`], a `tokio::io::duplex` stream per connection
//! (no socket, no thread, no std clock: every deadline is on tokio's clock, so
//! `#[tokio::test(start_paused = true)]` runs hours of session time in no wall time). The
//! protocol lives in [`ServerMachine`] (plain data, no IO, see its calling contract); this
//! module only moves bytes between it and the streams, and sleeps until its next session
//! deadline.
//!
//! # What it serves
//!
//! The handshake (new sessions; resuming one with its id and password; `timeOut` 0 for an
//! expired, unknown or wrongly-passworded session, then close), `ping`, `closeSession`,
//! `create`/`create2`/`createContainer` in every non-TTL mode (`%010d` sequence numbers from
//! the parent's `cversion`), `delete`, `exists`, `getData`, `setData`, `getChildren`,
//! `getChildren2`, `getACL`/`setACL` (kept, not enforced), `sync`, `check`, `multi`
//! (all-or-nothing, per-op results as ZooKeeper gives them), `multiRead`, `getEphemerals`,
//! `getAllChildrenNumber`, `addAuth` (accepted, ignored), one-shot watches with ZooKeeper's
//! firing rules, and `setWatches`/`setWatches2` after a reconnect (what changed since the
//! client's zxid fires at once). Replies carry the zxid of the last transaction; every write,
//! failed or not, and every session start and end is a transaction.
//!
//! Not served (answered `Unimplemented`): TTL nodes, persistent watches (`addWatch`), watch
//! removal, `reconfig`, SASL, `whoAmI`. ACLs are not enforced. There is one server, so no
//! read-only mode, no `SessionMoved`, no stale reads.
//!
//! Containers are removed right after the write that took their last child (each removal its
//! own transaction), not by a timer as ZooKeeper's container manager does.
//!
//! Sessions expire when no frame has come from their client for their negotiated timeout,
//! connected or not (ZooKeeper's session tracker, without its tick rounding). [`SimServer::down`]
//! is the client's server becoming unreachable, not an ensemble restart: session deadlines
//! keep running.
//!
//! # Examples
//!
//! ```
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> Result<(), zk_client::Error> {
//! use zk_client::{Client, CreateMode, CreateOptions, SessionState};
//! use zk_sim::wire::{SimServer, WireConfig};
//!
//! let server = SimServer::new(WireConfig::new(7));
//! let client = server.client(Client::builder(), 1).await?;
//! client.create("/a", b"x", &CreateOptions::new(CreateMode::Ephemeral)).await?;
//! assert!(server.exists("/a").is_some());
//!
//! // The server expires the session: the ephemeral goes, and the client hears so.
//! server.expire(client.session_id());
//! assert!(server.exists("/a").is_none());
//! let mut states = client.state_watch();
//! states.wait_for(|s| *s == SessionState::Expired).await.ok();
//! # Ok(()) }
//! ```

mod chaos;
mod data_tree;
mod machine;
mod watches;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};
use tokio::sync::{Notify, mpsc, watch};
use tokio::time::Instant;
use zk_proto::records::Stat;

pub use chaos::Fault;
pub use data_tree::{Change, DataTree, Node};
pub use machine::{ConnId, EPOCH_MS, Output, ServerMachine, SessionInfo, WireConfig};
pub use watches::{Notification, WatchKind, WatchTable};

/// The bytes a connection buffers each way before the writer waits.
const STREAM_BUFFER: usize = 64 * 1024;

/// The address [`SimServer::connect_string`] names (any address dials the same server).
pub const ADDR: &str = "127.0.0.1:2181";

/// A connection's switches, set by the handle and read by its task.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Switches {
    /// No bytes move either way until cleared.
    stalled: bool,
    /// Drop the stream now.
    cut: bool,
}

/// What a connection task writes.
#[derive(Debug)]
enum Outgoing {
    Frame(Bytes),
    /// Shut the stream down after the frames before.
    Close,
}

#[derive(Debug)]
struct Link {
    frames: mpsc::UnboundedSender<Outgoing>,
    switches: watch::Sender<Switches>,
    /// The tag of the client that dialled it (`None`: dialled through [`SimServer::dial`]).
    tag: Option<u64>,
}

#[derive(Debug)]
struct State {
    machine: ServerMachine,
    links: BTreeMap<ConnId, Link>,
    refuse: bool,
    down: bool,
    /// Clients cut off from the server, by tag ([`SimServer::partition`]): their connections
    /// stall, new ones are born stalled, and a cut the server makes waits for the heal.
    partitioned: std::collections::BTreeSet<u64>,
    /// Each session's client tag ([`SimServer::client`]).
    tags: BTreeMap<i64, u64>,
    /// The connections of partitioned clients, with whether the server cut them meanwhile.
    silenced: BTreeMap<ConnId, (u64, bool)>,
    /// The next client tag.
    next_tag: u64,
    /// Every frame and event, in order, when asked for ([`SimServer::record`]).
    trace: Option<Vec<String>>,
    /// When the server started (the trace's clock).
    started: Instant,
}

impl State {
    /// Appends a line to the trace, if one is kept.
    fn note(&mut self, line: impl FnOnce() -> String) {
        if let Some(trace) = self.trace.as_mut() {
            let ms = self.started.elapsed().as_millis();
            trace.push(format!("{ms:>8} {}", line()));
        }
    }

    /// Moves the machine's outputs to the connection tasks.
    fn route(&mut self) {
        while let Some(out) = self.machine.poll_output() {
            if self.trace.is_some() {
                let line = match &out {
                    Output::Send(conn, frame) => format!("c{conn} < {}", describe_out(frame)),
                    Output::Close(conn) => format!("c{conn} < close"),
                    Output::Cut(conn) => format!("c{conn} < cut"),
                };
                self.note(|| line);
            }
            match out {
                Output::Send(conn, frame) => {
                    if let Some(link) = self.links.get(&conn) {
                        let _ = link.frames.send(Outgoing::Frame(frame));
                    }
                }
                Output::Close(conn) => {
                    if let Some(link) = self.links.get(&conn) {
                        let _ = link.frames.send(Outgoing::Close);
                    }
                }
                Output::Cut(conn) => {
                    if let Some((_, cut)) = self.silenced.get_mut(&conn) {
                        // A partitioned connection: its client hears of the cut only when
                        // the partition heals.
                        *cut = true;
                    } else if let Some(link) = self.links.get(&conn) {
                        link.switches.send_modify(|s| s.cut = true);
                    }
                }
            }
        }
    }
}

#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
    /// Wakes the expiry task when a deadline may have come earlier.
    timer: Arc<Notify>,
}

impl Shared {
    /// Runs `f` on the state, routes the outputs, and wakes the expiry task if the next
    /// deadline moved earlier.
    fn with<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let before = state.machine.poll_timeout();
        let r = f(&mut state);
        state.route();
        let after = state.machine.poll_timeout();
        drop(state);
        if after.is_some() && (before.is_none() || after < before) {
            self.timer.notify_one();
        }
        r
    }
}

/// A handle on the simulated server; clones share it. Create it inside a tokio runtime: it
/// spawns its session-expiry task there, and each connection's task on [`SimServer::dial`].
#[derive(Debug, Clone)]
pub struct SimServer {
    shared: Arc<Shared>,
}

impl SimServer {
    /// A server with an empty tree (`/` and `/zookeeper` only), accepting connections.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime.
    pub fn new(config: WireConfig) -> Self {
        let now = Instant::now().into_std();
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                machine: ServerMachine::new(config, now),
                links: BTreeMap::new(),
                refuse: false,
                down: false,
                partitioned: Default::default(),
                tags: BTreeMap::new(),
                silenced: BTreeMap::new(),
                next_tag: 1,
                trace: None,
                started: Instant::now(),
            }),
            timer: Arc::new(Notify::new()),
        });
        tokio::spawn(expire_sessions(
            Arc::downgrade(&shared),
            shared.timer.clone(),
        ));
        Self { shared }
    }

    /// The connect string to give a client: `127.0.0.1:2181`.
    pub fn connect_string(&self) -> &'static str {
        ADDR
    }

    /// Opens a connection to the server, as a TCP connect would: the client's end of a new
    /// in-memory stream, or `ConnectionRefused` while [`SimServer::refuse`] or
    /// [`SimServer::down`] is on. Every address reaches the same server. Give it to
    /// `ClientBuilder::connect_over`: `move |addr| server.dial(addr)`.
    pub fn dial(&self, _addr: SocketAddr) -> std::future::Ready<std::io::Result<DuplexStream>> {
        std::future::ready(self.accept(None))
    }

    fn accept(&self, tag: Option<u64>) -> std::io::Result<DuplexStream> {
        let (client, server) = tokio::io::duplex(STREAM_BUFFER);
        let (frames_tx, frames_rx) = mpsc::unbounded_channel();
        let (switches_tx, switches_rx) = watch::channel(Switches::default());
        let conn = self.shared.with(|state| {
            if state.refuse || state.down {
                state.note(|| format!("t{} dial refused", tag.unwrap_or(0)));
                return None;
            }
            let conn = state.machine.handle_accept();
            // A partitioned client's connection is born stalled: no bytes either way.
            let cut_off = tag.is_some_and(|t| state.partitioned.contains(&t));
            if let (true, Some(t)) = (cut_off, tag) {
                switches_tx.send_modify(|sw| sw.stalled = true);
                state.silenced.insert(conn, (t, false));
            }
            state.note(|| {
                format!(
                    "t{} dial: c{conn}{}",
                    tag.unwrap_or(0),
                    if cut_off { " (partitioned)" } else { "" }
                )
            });
            let link = Link {
                frames: frames_tx,
                switches: switches_tx,
                tag,
            };
            state.links.insert(conn, link);
            Some(conn)
        });
        let conn =
            conn.ok_or_else(|| std::io::Error::from(std::io::ErrorKind::ConnectionRefused))?;
        tokio::spawn(serve(
            self.shared.clone(),
            conn,
            server,
            frames_rx,
            switches_rx,
        ));
        Ok(client)
    }

    /// Connects a client built by `builder` (its hosts replaced by this server's), the order
    /// of servers and its reconnect pauses fixed by `seed`.
    ///
    /// The client's connections carry a tag, so that [`SimServer::partition`] can cut it off
    /// from the server, new connections included.
    pub async fn client(
        &self,
        builder: zk_client::ClientBuilder,
        seed: u64,
    ) -> Result<zk_client::Client, zk_client::Error> {
        let server = self.clone();
        let tag = self.shared.with(|s| {
            s.next_tag += 1;
            s.next_tag - 1
        });
        let client = builder
            .hosts(ADDR)
            .connect_over(
                move |_addr| std::future::ready(server.accept(Some(tag))),
                seed,
            )
            .await?;
        let session = client.session_id();
        self.shared.with(|s| s.tags.insert(session, tag));
        Ok(client)
    }

    // ---- faults --------------------------------------------------------------------------

    /// Drops `session`'s connection now: requests already applied stay applied, replies not
    /// yet written are lost, the session stays. Whether it had a connection.
    pub fn cut(&self, session: i64) -> bool {
        self.shared.with(|s| {
            s.note(|| format!("fault: cut {session:#x}"));
            s.machine.cut(session)
        })
    }

    /// Stops (`true`) or restarts (`false`) the bytes of `session`'s current connection,
    /// both ways, without closing it: what the client sends waits unread, and what the
    /// server has for it waits unwritten. Whether it had a connection.
    pub fn stall(&self, session: i64, on: bool) -> bool {
        self.shared.with(|s| {
            s.note(|| format!("fault: stall {session:#x} {on}"));
            let link = s
                .machine
                .conn_of(session)
                .and_then(|conn| s.links.get(&conn));
            link.map(|l| l.switches.send_modify(|sw| sw.stalled = on))
                .is_some()
        })
    }

    /// Cuts `session`'s client off from the server (`true`), as a network partition does, or
    /// heals it (`false`). While cut off, no bytes move either way on its connections, new
    /// ones included, and nothing tells the client: the server expires the session at its
    /// deadline (or on [`SimServer::expire`]) and the client can learn it only from its own
    /// clock (no server heard for its session timeout: `Lost`). On the heal a connection the
    /// server cut meanwhile is cut (the client reconnects and hears `Expired`); the others
    /// move again. Whether the session has a tagged client ([`SimServer::client`]).
    pub fn partition(&self, session: i64, on: bool) -> bool {
        self.shared.with(|s| {
            let Some(&tag) = s.tags.get(&session) else {
                return false;
            };
            s.note(|| format!("partition t{tag} {on}"));
            if on {
                s.partitioned.insert(tag);
                for (&conn, link) in &s.links {
                    if link.tag == Some(tag) {
                        link.switches.send_modify(|sw| sw.stalled = true);
                        s.silenced.entry(conn).or_insert((tag, false));
                    }
                }
            } else {
                s.partitioned.remove(&tag);
                let healed: Vec<(ConnId, bool)> = s
                    .silenced
                    .iter()
                    .filter(|(_, (t, _))| *t == tag)
                    .map(|(&conn, &(_, cut))| (conn, cut))
                    .collect();
                for (conn, cut) in healed {
                    s.silenced.remove(&conn);
                    if let Some(link) = s.links.get(&conn) {
                        link.switches.send_modify(|sw| match cut {
                            true => sw.cut = true,
                            false => sw.stalled = false,
                        });
                    }
                }
            }
            true
        })
    }

    /// Whether `session`'s client is cut off ([`SimServer::partition`]).
    pub fn is_partitioned(&self, session: i64) -> bool {
        self.shared.with(|s| {
            s.tags
                .get(&session)
                .is_some_and(|t| s.partitioned.contains(t))
        })
    }

    /// Starts keeping a trace: every frame the server reads and writes (requests decoded,
    /// replies by header and digest), every connection, fault and session end, in order, with
    /// the time since the server started. Two runs of one seed must give the same trace.
    pub fn record(&self) {
        self.shared.with(|s| s.trace = Some(Vec::new()));
    }

    /// Appends `line` to the trace (the harness's own events: holds, faults), if one is kept.
    pub fn note(&self, line: impl FnOnce() -> String) {
        self.shared.with(|s| s.note(line));
    }

    /// The trace kept since [`SimServer::record`] (empty without it).
    pub fn trace(&self) -> Vec<String> {
        self.shared.with(|s| s.trace.clone().unwrap_or_default())
    }

    /// Refuses (`true`) or accepts (`false`) new connections; open ones are untouched.
    pub fn refuse(&self, on: bool) {
        self.shared.with(|s| {
            s.note(|| format!("fault: refuse {on}"));
            s.refuse = on;
        });
    }

    /// Expires `session` now: its ephemerals go, others' watches fire, its connection is
    /// dropped, and its client is told `Expired` when it reconnects. Whether it was live.
    pub fn expire(&self, session: i64) -> bool {
        let now = Instant::now().into_std();
        self.shared.with(|s| {
            s.note(|| format!("fault: expire {session:#x}"));
            s.machine.expire(now, session)
        })
    }

    /// The server becomes unreachable: every connection is dropped and new ones are refused
    /// until [`SimServer::up`]. Sessions keep their deadlines, so a session whose client
    /// cannot come back within its timeout expires.
    pub fn down(&self) {
        self.shared.with(|s| {
            s.note(|| "fault: down".to_owned());
            s.down = true;
            for session in s.machine.sessions() {
                s.machine.cut(session.id);
            }
            // Connections still in their handshake have no session to cut through.
            for link in s.links.values() {
                link.switches.send_modify(|sw| sw.cut = true);
            }
        });
    }

    /// The server is reachable again (unless [`SimServer::refuse`] is on).
    pub fn up(&self) {
        self.shared.with(|s| {
            s.note(|| "fault: up".to_owned());
            s.down = false;
        });
    }

    /// The server process stops: as [`SimServer::down`], but no session expires while it is
    /// stopped (there is no server to expire it); [`SimServer::start`] gives every session
    /// its whole timeout again, as a restarted ZooKeeper does with the sessions it loads. A
    /// client whose session timeout runs out meanwhile says `Lost`, yet its session survives
    /// if it reconnects within that timeout of the start.
    pub fn stop(&self) {
        self.down();
        let now = Instant::now().into_std();
        let far = now.checked_add(std::time::Duration::from_secs(365 * 24 * 3600));
        self.shared.with(|s| {
            s.note(|| "fault: stop".to_owned());
            s.machine.set_deadlines(now, far.or(Some(now)));
        });
        self.shared.timer.notify_one();
    }

    /// The stopped server starts again: every session gets its whole timeout from now.
    pub fn start(&self) {
        let now = Instant::now().into_std();
        self.shared.with(|s| {
            s.note(|| "fault: start".to_owned());
            s.machine.set_deadlines(now, None);
            s.down = false;
        });
        self.shared.timer.notify_one();
    }

    /// Picks a fault with `rng` against the live sessions ([`Fault::pick`]) and applies it.
    pub fn chaos(&self, rng: &mut crate::rng::Rng) -> Option<Fault> {
        let sessions: Vec<i64> = self.sessions().iter().map(|s| s.id).collect();
        let fault = Fault::pick(rng, &sessions)?;
        self.apply(&fault);
        Some(fault)
    }

    /// Applies `fault` (see [`Fault`]).
    pub fn apply(&self, fault: &Fault) {
        match *fault {
            Fault::Cut(session) => {
                self.cut(session);
            }
            Fault::Stall(session, on) => {
                self.stall(session, on);
            }
            Fault::Expire(session) => {
                self.expire(session);
            }
            Fault::Refuse(on) => self.refuse(on),
            Fault::Down => self.down(),
            Fault::Up => self.up(),
        }
    }

    // ---- inspection ----------------------------------------------------------------------

    /// The children of `path` (names, sorted), or `None` if it does not exist.
    pub fn children(&self, path: &str) -> Option<Vec<String>> {
        self.shared.with(|s| {
            s.machine
                .tree()
                .get(path)
                .map(|n| n.children.iter().cloned().collect())
        })
    }

    /// The stat of `path`, if it exists.
    pub fn exists(&self, path: &str) -> Option<Stat> {
        self.shared
            .with(|s| s.machine.tree().get(path).map(|n| n.stat.clone()))
    }

    /// The data of `path`, if it exists (`None` inside for null data).
    pub fn data(&self, path: &str) -> Option<Option<Bytes>> {
        self.shared
            .with(|s| s.machine.tree().get(path).map(|n| n.data.clone()))
    }

    /// Every ephemeral node with its owner, by path.
    pub fn ephemerals(&self) -> Vec<(String, i64)> {
        self.shared.with(|s| {
            s.machine
                .tree()
                .ephemerals()
                .map(|(p, o)| (p.to_owned(), o))
                .collect()
        })
    }

    /// The live sessions, by id.
    pub fn sessions(&self) -> Vec<SessionInfo> {
        self.shared.with(|s| s.machine.sessions())
    }

    /// The last zxid.
    pub fn zxid(&self) -> i64 {
        self.shared.with(|s| s.machine.zxid())
    }

    /// The number of watches set on the server.
    pub fn watch_count(&self) -> usize {
        self.shared.with(|s| s.machine.watch_count())
    }
}

/// One connection: frames read go to the machine, its outputs are written, the switches
/// stall or cut it. When it ends, for whatever reason, the machine hears so.
async fn serve(
    shared: Arc<Shared>,
    conn: ConnId,
    stream: DuplexStream,
    mut frames: mpsc::UnboundedReceiver<Outgoing>,
    mut switches: watch::Receiver<Switches>,
) {
    let (max_frame_len, latency, seed) = shared.with(|s| {
        let config = s.machine.config();
        (config.max_frame_len, config.latency, config.seed)
    });
    let mut rng = crate::rng::Rng::new(seed ^ conn.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let latency_ms = u64::try_from(latency.as_millis()).unwrap_or(u64::MAX);
    // Requests on their way to the server, with when each arrives (in order).
    let mut arriving: std::collections::VecDeque<(Instant, BytesMut)> = Default::default();
    let (mut rd, mut wr) = tokio::io::split(stream);
    let mut buf = BytesMut::new();
    'run: loop {
        let now_switches = *switches.borrow_and_update();
        if now_switches.cut {
            break;
        }
        if now_switches.stalled {
            if switches.changed().await.is_err() {
                break;
            }
            continue;
        }
        let next_arrival = arriving.front().map(|(at, _)| *at);
        tokio::select! {
            biased;
            changed = switches.changed() => {
                if changed.is_err() {
                    break;
                }
            }
            () = sleep_until(next_arrival) => {
                while arriving.front().is_some_and(|(at, _)| *at <= Instant::now()) {
                    if let Some((_, frame)) = arriving.pop_front() {
                        deliver(&shared, conn, &frame);
                    }
                }
            }
            out = frames.recv() => match out {
                Some(Outgoing::Frame(frame)) => {
                    if wr.write_all(&frame).await.is_err() {
                        break;
                    }
                }
                Some(Outgoing::Close) | None => {
                    let _ = wr.shutdown().await;
                    break;
                }
            },
            read = rd.read_buf(&mut buf) => {
                if !matches!(read, Ok(n) if n > 0) {
                    break;
                }
                loop {
                    match zk_proto::split_frame(&mut buf, max_frame_len) {
                        Ok(Some(frame)) if latency_ms == 0 && arriving.is_empty() => {
                            deliver(&shared, conn, &frame);
                        }
                        Ok(Some(frame)) => {
                            let delay = Duration::from_millis(rng.below(latency_ms + 1));
                            let after = arriving.back().map(|(at, _)| *at);
                            let at = (Instant::now() + delay).max(after.unwrap_or_else(Instant::now));
                            arriving.push_back((at, frame));
                        }
                        Ok(None) => break,
                        Err(_) => break 'run,
                    }
                }
            }
        }
    }
    shared.with(|s| {
        s.note(|| format!("c{conn} ended"));
        s.machine.handle_disconnect(conn);
        s.links.remove(&conn);
        s.silenced.remove(&conn);
    });
}

/// Hands a whole frame read from `conn` to the machine (noting it in the trace).
fn deliver(shared: &Shared, conn: ConnId, frame: &[u8]) {
    let now = Instant::now().into_std();
    shared.with(|s| {
        s.note(|| format!("c{conn} > {}", describe_in(frame)));
        s.machine.handle_frame(now, conn, frame);
    });
}

/// A request frame (no length prefix) for the trace: decoded if it decodes as a request,
/// else its length and digest (a `ConnectRequest`).
fn describe_in(frame: &[u8]) -> String {
    match zk_proto::Request::decode_frame(frame) {
        Ok((header, request)) => format!("xid {} {request:?}", header.xid),
        Err(_) => format!("{} bytes #{:016x}", frame.len(), digest(frame)),
    }
}

/// A frame the server writes (length prefix included) for the trace: its reply header and
/// the digest of all of it.
fn describe_out(frame: &[u8]) -> String {
    let body = frame.get(4..).unwrap_or_default();
    let header = <zk_proto::ReplyHeader as zk_proto::Decode>::decode_exact(
        body.get(..16).unwrap_or_default(),
        "ReplyHeader",
    );
    match header {
        Ok(h) => format!(
            "xid {} zxid {} {:?} {} bytes #{:016x}",
            h.xid,
            h.zxid,
            h.err,
            frame.len(),
            digest(frame)
        ),
        Err(_) => format!("{} bytes #{:016x}", frame.len(), digest(frame)),
    }
}

/// FNV-1a over `bytes`: a digest for the trace.
fn digest(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Sleeps until `at`, or forever without one.
async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Sleeps until the machine's next session deadline, then lets it expire what is due; ends
/// with the last handle.
async fn expire_sessions(shared: Weak<Shared>, timer: Arc<Notify>) {
    loop {
        let Some(next) = shared
            .upgrade()
            .map(|s| s.with(|s| s.machine.poll_timeout()))
        else {
            return;
        };
        let wake = async {
            match next {
                Some(at) => tokio::time::sleep_until(Instant::from_std(at)).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            () = wake => {}
            () = timer.notified() => {}
        }
        let now = Instant::now().into_std();
        let Some(strong) = shared.upgrade() else {
            return;
        };
        strong.with(|s| s.machine.handle_timeout(now));
    }
}
