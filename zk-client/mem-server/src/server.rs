//! [`MemServer`]: the handle a test holds: connections in, faults on command, the tree to
//! inspect.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::io::DuplexStream;
use tokio::sync::Notify;
use tokio::time::Instant;
use zk_proto::records::Stat;

use crate::chaos::Fault;
use crate::conn::open;
use crate::machine::{ConnId, ServerConfig, ServerMachine, SessionInfo};
use crate::seeded::Seeded;
use crate::shared::{Shared, State, expire_sessions};
use crate::tcp::accept_loop;

/// The bytes a connection buffers each way before the writer waits.
const STREAM_BUFFER: usize = 64 * 1024;

/// The address [`MemServer::connect_string`] names (any address dials the same server).
pub const ADDR: &str = "127.0.0.1:2181";

/// A handle on the simulated server; clones share it. Create it inside a tokio runtime: it
/// spawns its session-expiry task there, and each connection's task on [`MemServer::dial`].
#[derive(Debug, Clone)]
pub struct MemServer {
    shared: Arc<Shared>,
}

impl MemServer {
    /// A server with an empty tree (`/` and `/zookeeper` only), accepting connections.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime.
    pub fn new(config: ServerConfig) -> Self {
        let now = Instant::now().into_std();
        Self::serving(ServerMachine::new(config, now), None)
    }

    /// A server that keeps its state in the file at `path`, as a ZooKeeper server keeps its
    /// data directory: started from the snapshot there if there is one (its nodes, sessions
    /// and zxids; each session given its whole timeout again), and writing it after every
    /// transaction, before the reply leaves, so a process killed at any moment comes back
    /// with every write it acknowledged. The `zk-mem-server` binary's `--data-dir`. Each
    /// write rewrites the whole tree: for tests' trees, not a large one. Not synced to disk:
    /// it survives the process, not the machine. If a write fails the server stops serving.
    ///
    /// # Errors
    /// The file exists but cannot be read or is not a snapshot (`InvalidData`).
    pub fn open(
        config: ServerConfig,
        path: impl Into<std::path::PathBuf>,
    ) -> std::io::Result<Self> {
        let path = path.into();
        let now = Instant::now().into_std();
        let machine = match std::fs::read(&path) {
            Ok(bytes) => ServerMachine::restore(config, now, &bytes).map_err(|e| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("{}: {e}", path.display()),
                )
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => ServerMachine::new(config, now),
            Err(e) => return Err(e),
        };
        let server = Self::serving(machine, Some(path));
        // The first snapshot, so a restart before any write finds the same server.
        server.shared.with(State::persist);
        Ok(server)
    }

    /// Why the server stopped keeping its snapshot ([`MemServer::open`]), if it did.
    pub fn snapshot_failure(&self) -> Option<String> {
        self.shared.with(|s| s.snapshot_failure.clone())
    }

    fn serving(machine: ServerMachine, snapshot_path: Option<std::path::PathBuf>) -> Self {
        let seed = machine.config().seed;
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                machine,
                links: BTreeMap::new(),
                refuse: false,
                down: false,
                partitioned: Default::default(),
                tags: BTreeMap::new(),
                #[cfg(feature = "client")]
                observers: BTreeMap::new(),
                silenced: BTreeMap::new(),
                next_tag: 1,
                trace: None,
                started: Instant::now(),
                chaos: Seeded::new(seed ^ 0xc4a0_5eed_c4a0_5eed),
                listeners: Vec::new(),
                snapshot_path,
                snapshot_failure: None,
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

    /// Listens on a free loopback TCP port and gives its address (`127.0.0.1:port`): for
    /// code that takes a connect string, and for other processes. Every port it listens on
    /// reaches the same server and tree, so a connect string of several (`a,b,c`) looks like
    /// an ensemble to a client, which spreads its connections over them; faults strike the
    /// server, whatever port a client came through. The ports close when the server is gone
    /// (its last handle and connection dropped).
    ///
    /// Over TCP the bytes move in real time, so use the real clock (tokio's paused clock
    /// would jump ahead while a socket waits): the in-memory streams of
    /// [`MemServer::client`] and [`MemServer::dial`] are for the paused clock.
    ///
    /// # Errors
    ///
    /// When no loopback port can be bound.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime.
    pub fn listen(&self) -> std::io::Result<SocketAddr> {
        self.listen_on(SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, 0)))
    }

    /// Listens on `addr` (port 0: a free one) and gives the address bound: as
    /// [`MemServer::listen`], for a port chosen by the caller (the `zk-mem-server` binary's
    /// `--port`).
    ///
    /// # Errors
    ///
    /// When `addr` cannot be bound (taken, or not local).
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime.
    pub fn listen_on(&self, addr: SocketAddr) -> std::io::Result<SocketAddr> {
        let std_listener = std::net::TcpListener::bind(addr)?;
        std_listener.set_nonblocking(true)?;
        let addr = std_listener.local_addr()?;
        let listener = tokio::net::TcpListener::from_std(std_listener)?;
        let task = tokio::spawn(accept_loop(Arc::downgrade(&self.shared), listener));
        self.shared.with(|s| {
            s.note(|| format!("listening on {addr}"));
            s.listeners.push(task.abort_handle());
        });
        Ok(addr)
    }

    /// Opens a connection to the server, as a TCP connect would: the client's end of a new
    /// in-memory stream, or `ConnectionRefused` while [`MemServer::refuse`] or
    /// [`MemServer::down`] is on. Every address reaches the same server. Give it to
    /// `ClientBuilder::connect_over`: `move |addr| server.dial(addr)`.
    pub fn dial(&self, _addr: SocketAddr) -> std::future::Ready<std::io::Result<DuplexStream>> {
        std::future::ready(self.accept(None))
    }

    fn accept(&self, tag: Option<u64>) -> std::io::Result<DuplexStream> {
        let (client, server) = tokio::io::duplex(STREAM_BUFFER);
        open(&self.shared, tag, server)?;
        Ok(client)
    }

    /// Connects a client built by `builder` (its hosts replaced by this server's), the order
    /// of servers and its reconnect pauses fixed by `seed`.
    ///
    /// The client's connections carry a tag, so that [`MemServer::partition`] can cut it off
    /// from the server, new connections included.
    #[cfg(feature = "client")]
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
        let states = client.state_watch();
        self.shared.with(|s| {
            s.tags.insert(session, tag);
            s.observers.insert(session, states);
        });
        Ok(client)
    }

    /// Returns once every client of [`MemServer::client`] has seen the faults applied so far
    /// (at once if there is nothing to see), within [`WAIT_BOUND`](crate::WAIT_BOUND).
    ///
    /// A fault strikes the server when its call returns; a client hears of it only when its
    /// own task next runs. So right after [`MemServer::cut`] the client's state still reads
    /// `Connected`, and a request made then fails `NotConnected` or `ConnectionLoss`. After
    /// `landed`, for each client:
    ///
    /// - its session live, its connection dropped by the server ([`cut`](MemServer::cut),
    ///   [`down`](MemServer::down), [`stop`](MemServer::stop), [`expire`](MemServer::expire)
    ///   while [`refuse`](MemServer::refuse) or `down` is on): its state is no longer
    ///   `Connected` (it has seen the loss: `Disconnected` or later, perhaps already
    ///   `Connected` again through a new connection the server has);
    /// - its session expired ([`expire`](MemServer::expire), or its deadline) while the server
    ///   accepts connections: its state is `Expired` (it reconnected and was told);
    /// - [`stall`](MemServer::stall), [`refuse`](MemServer::refuse),
    ///   [`partition`](MemServer::partition), and any fault while it is partitioned: nothing
    ///   to wait for, since the client sees nothing yet (its own clock will say `Disconnected`
    ///   and `Lost`; [`wait_state`](crate::wait_state) waits for those).
    ///
    /// Clients connected through [`MemServer::dial`] or [`MemServer::listen`] are not
    /// followed.
    ///
    /// # Errors
    ///
    /// [`WaitError::TimedOut`](crate::WaitError::TimedOut) when a client has not seen a
    /// fault within the bound (its task is starved, or it was told nothing it can act on).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use zk_client::{Client, SessionState};
    /// use zk_mem_server::{MemServer, ServerConfig};
    ///
    /// let server = MemServer::new(ServerConfig::new(1));
    /// let client = server.client(Client::builder(), 1).await?;
    /// server.cut(client.session_id());
    /// assert_eq!(client.state(), SessionState::Connected); // not heard yet
    /// server.landed().await?;
    /// assert_ne!(client.state(), SessionState::Connected);
    ///
    /// server.expire(client.session_id());
    /// server.landed().await?;
    /// assert_eq!(client.state(), SessionState::Expired);
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "client")]
    pub async fn landed(&self) -> Result<(), crate::WaitError> {
        let deadline = Instant::now() + crate::WAIT_BOUND;
        loop {
            let unseen = self.shared.with(|s| {
                // A client dropped sees nothing more.
                s.observers.retain(|_, states| states.has_changed().is_ok());
                let accepting = !s.refuse && !s.down;
                let live: std::collections::BTreeSet<i64> =
                    s.machine.sessions().iter().map(|i| i.id).collect();
                for (&session, states) in &mut s.observers {
                    let state = *states.borrow_and_update();
                    let partitioned = s
                        .tags
                        .get(&session)
                        .is_some_and(|t| s.partitioned.contains(t));
                    let seen = partitioned
                        || match (live.contains(&session), s.machine.conn_of(session)) {
                            (true, Some(_)) => true,
                            (true, None) => !state.is_connected(),
                            (false, _) if accepting => state.is_terminal(),
                            (false, _) => state.is_terminal() || !state.is_connected(),
                        };
                    if !seen {
                        return Some((session, state, states.clone()));
                    }
                }
                None
            });
            let Some((session, state, mut states)) = unseen else {
                return Ok(());
            };
            // Marked seen above: wakes on the client's next state.
            if tokio::time::timeout_at(deadline, states.changed())
                .await
                .is_err()
            {
                return Err(crate::WaitError::TimedOut {
                    what: format!(
                        "the client of session {session:#x}, {state:?}, seeing the faults"
                    ),
                    bound: crate::WAIT_BOUND,
                });
            }
        }
    }

    // ---- faults --------------------------------------------------------------------------

    /// Drops `session`'s connection now: requests already applied stay applied, replies not
    /// yet written are lost, the session stays. Whether it had a connection.
    ///
    /// The client sees `Disconnected` (requests in flight fail `ConnectionLoss`, applied or
    /// not), then reconnects to the same session: not when this returns, but when its task
    /// next runs; [`MemServer::landed`] waits for that.
    pub fn cut(&self, session: i64) -> bool {
        self.shared.with(|s| {
            s.note(|| format!("fault: cut {session:#x}"));
            s.machine.cut(session)
        })
    }

    /// Stops (`true`) or restarts (`false`) the bytes of `session`'s current connection,
    /// both ways, without closing it: what the client sends waits unread, and what the
    /// server has for it waits unwritten. Whether it had a connection.
    ///
    /// The client sees nothing (its state stays `Connected`, its requests wait) until its own
    /// read deadline, two thirds of its session timeout after it last read, drops the link:
    /// then `Disconnected`, and a reconnect. [`MemServer::landed`] has nothing to wait for.
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
    /// deadline (or on [`MemServer::expire`]) and the client can learn it only from its own
    /// clock (no server heard for its session timeout: `Lost`). On the heal a connection the
    /// server cut meanwhile is cut (the client reconnects and hears `Expired`); the others
    /// move again. Whether the session has a tagged client ([`MemServer::client`]).
    ///
    /// The client sees nothing when this returns ([`MemServer::landed`] has nothing to wait
    /// for): `Disconnected` at its read deadline, `Lost` at its session timeout, each on its
    /// own clock; after the heal, `Connected` or `Expired`.
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

    /// Whether `session`'s client is cut off ([`MemServer::partition`]).
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

    /// The trace kept since [`MemServer::record`] (empty without it).
    pub fn trace(&self) -> Vec<String> {
        self.shared.with(|s| s.trace.clone().unwrap_or_default())
    }

    /// Refuses (`true`) or accepts (`false`) new connections; open ones are untouched.
    ///
    /// A connected client sees nothing; one reconnecting meanwhile has its attempts refused
    /// (`ConnectionRefused` in its outage report) and stays `Disconnected`.
    pub fn refuse(&self, on: bool) {
        self.shared.with(|s| {
            s.note(|| format!("fault: refuse {on}"));
            s.refuse = on;
        });
    }

    /// Expires `session` now: its ephemerals go, others' watches fire, its connection is
    /// dropped, and its client is told `Expired` when it reconnects. Whether it was live.
    ///
    /// The client sees `Disconnected`, then `Expired` once it reconnects (at once, unless
    /// connections are refused or it is partitioned): when its task runs, not when this
    /// returns; [`MemServer::landed`] waits for that.
    pub fn expire(&self, session: i64) -> bool {
        let now = Instant::now().into_std();
        self.shared.with(|s| {
            s.note(|| format!("fault: expire {session:#x}"));
            s.machine.expire(now, session)
        })
    }

    /// The server becomes unreachable: every connection is dropped and new ones are refused
    /// until [`MemServer::up`]. Sessions keep their deadlines, so a session whose client
    /// cannot come back within its timeout expires.
    ///
    /// Each connected client sees `Disconnected` when its task next runs
    /// ([`MemServer::landed`] waits for that), then refused reconnects, `Lost` at its session
    /// timeout, and `Expired` on the first reconnect after [`MemServer::up`] if the session
    /// timed out meanwhile.
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

    /// The server is reachable again (unless [`MemServer::refuse`] is on). Clients reconnect
    /// on their own schedule (their back-off); [`wait_state`](crate::wait_state) waits for one.
    pub fn up(&self) {
        self.shared.with(|s| {
            s.note(|| "fault: up".to_owned());
            s.down = false;
        });
    }

    /// The server process stops: as [`MemServer::down`], but no session expires while it is
    /// stopped (there is no server to expire it); [`MemServer::start`] gives every session
    /// its whole timeout again, as a restarted ZooKeeper does with the sessions it loads. A
    /// client whose session timeout runs out meanwhile says `Lost`, yet its session survives
    /// if it reconnects within that timeout of the start.
    ///
    /// Each connected client sees `Disconnected` when its task next runs
    /// ([`MemServer::landed`] waits for that), then refused reconnects until the start.
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
    /// Clients reconnect to their sessions on their own schedule.
    pub fn start(&self) {
        let now = Instant::now().into_std();
        self.shared.with(|s| {
            s.note(|| "fault: start".to_owned());
            s.machine.set_deadlines(now, None);
            s.down = false;
        });
        self.shared.timer.notify_one();
    }

    /// Picks a fault against one of the live sessions and applies it: a cut (7 in 10), a
    /// stall started or lifted (1 in 4), or an expiry (1 in 20); `None` without sessions.
    /// Drawn from the server's seed (a stream of its own), so a seeded test calling it at the
    /// same points replays the same faults. Stalls are lifted only by a later pick or by
    /// [`MemServer::stall`]; refusals and outages are left to the test, which knows how long
    /// they should last. What the client sees is the picked fault's (see each);
    /// [`MemServer::landed`] waits for it.
    pub fn chaos(&self) -> Option<Fault> {
        let fault = self.shared.with(|s| {
            let sessions: Vec<i64> = s.machine.sessions().iter().map(|s| s.id).collect();
            Fault::pick(&mut s.chaos, &sessions)
        })?;
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
            .with(|s| s.machine.tree().get(path).map(|n| n.stat()))
    }

    /// The data of `path`, or `None` if there is no node there. Null data (a node created
    /// with none, as Java clients can) reads as empty, as `zk_client::Client::get_data` gives
    /// it; [`MemServer::node`] tells the two apart.
    pub fn data(&self, path: &str) -> Option<Bytes> {
        self.shared.with(|s| {
            s.machine
                .tree()
                .get(path)
                .map(|n| n.data.clone().unwrap_or_default())
        })
    }

    /// Everything the server keeps of the node at `path` (its data, null or not, ACL, stat,
    /// kind and children), or `None` if there is none.
    pub fn node(&self, path: &str) -> Option<crate::Node> {
        self.shared.with(|s| s.machine.tree().get(path).cloned())
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
