//! The session task: the one place that touches the socket and the clock.
//!
//! It moves bytes and events between a [`Session`] and a TCP connection and makes no protocol
//! decision: frames read go to `handle_frame`, the timer to `handle_timeout`, commands to
//! `submit`; after each input it drains `poll_event` (completing callers, feeding watchers)
//! and `poll_transmit` (queueing bytes to write).

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;
use tokio_util::codec::Decoder;
use zk_proto::{Request, Response};

use crate::framing::ZkFrames;
use crate::session::{Session, SessionEvent, SessionState, WatchedEvent, WatcherId};
use crate::watcher::WatchSink;
use crate::{Error, chroot::Chroot};

/// The caller waiting for a reply (none for requests the task sends on its own).
pub(crate) type Token = Option<oneshot::Sender<Result<Response, Error>>>;

/// What a [`crate::Client`] asks of the session task.
#[derive(Debug)]
pub(crate) enum Command {
    /// Send a request; reply on `reply`; if it leaves a watch, deliver to `watch`.
    Submit {
        request: Request,
        reply: oneshot::Sender<Result<Response, Error>>,
        watch: Option<(WatcherId, WatchSink)>,
    },
    /// A watcher's handle was dropped.
    ForgetWatch { path: String, id: WatcherId },
    /// Close the session: on the server if one answers within the close timeout, else here.
    Close {
        reply: oneshot::Sender<Result<(), Error>>,
    },
    /// A new list of servers for the same session (`updateServerList`).
    UpdateHosts { hosts: Vec<(String, u16)> },
    /// Remove watches here only.
    RemoveWatchesLocally {
        path: String,
        which: zk_proto::WatcherType,
        reply: oneshot::Sender<Result<(), Error>>,
    },
}

/// Resolves a host name of the connect string, on each connection attempt (a server that
/// moves to a new address is found again, as the Java client's `StaticHostProvider` does).
pub(crate) type Resolver = Arc<
    dyn Fn(String, u16) -> Pin<Box<dyn Future<Output = std::io::Result<Vec<SocketAddr>>> + Send>>
        + Send
        + Sync,
>;

/// The system resolver (tokio's `lookup_host`).
pub(crate) fn system_resolver() -> Resolver {
    Arc::new(|host: String, port: u16| {
        Box::pin(async move {
            tokio::net::lookup_host((host.as_str(), port))
                .await
                .map(Iterator::collect)
        })
    })
}

/// Before reconnecting after an established connection was lost, a random pause of up to
/// this long (the Java client's): when a server dies, its clients do not all land on the next
/// one at the same instant.
const RECONNECT_JITTER_MS: u64 = 1000;

/// A close under way.
struct Closing {
    /// When to give up reaching a server and close here.
    deadline: Option<Instant>,
    /// Who waits for it.
    waiters: Vec<oneshot::Sender<Result<(), Error>>>,
    /// Whether `closeSession` was sent.
    sent: bool,
}

/// How many queued commands are taken in one go, so that bursts from many tasks leave in
/// few writes.
const COMMAND_BATCH: usize = 256;

/// The read buffer's initial size.
const READ_BUFFER: usize = 64 * 1024;

pub(crate) struct SessionTask {
    pub session: Session<Token>,
    /// The connect string's servers, shuffled, resolved on each attempt.
    pub hosts: Vec<(String, u16)>,
    pub resolve: Resolver,
    pub rx: mpsc::UnboundedReceiver<Command>,
    pub state: watch::Sender<SessionState>,
    /// Every state change, for [`crate::StateStream`]s.
    pub states: tokio::sync::broadcast::Sender<SessionState>,
    pub chroot: Arc<Chroot>,
    pub sinks: HashMap<WatcherId, WatchSink>,
    /// Told once: the first handshake's outcome.
    pub ready: Option<oneshot::Sender<Result<(), Error>>>,
    /// Every `Client` handle is gone: no command will come any more.
    pub rx_done: bool,
    /// How long a close may try to reach a server.
    pub close_timeout: Duration,
    /// A close under way.
    closing: Option<Closing>,
    /// For the reconnect jitter and picking one of a name's addresses.
    rng: u64,
    /// The connect-string entry of the current connection (not set for a read-write server
    /// found while on a read-only one).
    current: Option<(String, u16)>,
    /// The current server left the list of servers: leave it.
    leave: bool,
    /// What clients can read about the connection and session.
    pub link: Arc<Mutex<Link>>,
    /// The host to try next, ahead of the rotation (a read-write server found while on a
    /// read-only one).
    pub preferred: Option<SocketAddr>,
}

/// While connected to a read-only server, looks for a read-write one in the background with
/// the `isro` four-letter word (as the Java client does), at growing intervals.
struct RwSearch {
    next_at: Instant,
    every: Duration,
    pending: Option<oneshot::Receiver<Option<SocketAddr>>>,
}

impl RwSearch {
    const FIRST: Duration = Duration::from_millis(100);
    const MAX: Duration = Duration::from_secs(60);

    fn new() -> Self {
        Self {
            next_at: Instant::now() + Self::FIRST,
            every: Self::FIRST,
            pending: None,
        }
    }

    fn start_if_due(
        &mut self,
        state: SessionState,
        hosts: &[(String, u16)],
        resolve: &Resolver,
        current: Option<SocketAddr>,
    ) {
        if state != SessionState::ConnectedReadOnly || self.pending.is_some() || hosts.len() < 2 {
            return;
        }
        if Instant::now() < self.next_at {
            return;
        }
        let (hosts, resolve) = (hosts.to_vec(), resolve.clone());
        let (tx, rx) = oneshot::channel();
        tokio::spawn(async move {
            let mut others = Vec::new();
            for (host, port) in hosts {
                if let Ok(addrs) = resolve(host, port).await {
                    others.extend(addrs.into_iter().filter(|a| Some(*a) != current));
                }
            }
            let _ = tx.send(find_rw_server(others).await);
        });
        self.pending = Some(rx);
        self.every = (self.every * 2).min(Self::MAX);
        self.next_at = Instant::now() + self.every;
    }

    /// When the next search is due: only while read-only and no search is under way (else
    /// the pump would wake for nothing).
    fn deadline(&self, state: SessionState) -> Option<Instant> {
        (state == SessionState::ConnectedReadOnly && self.pending.is_none()).then_some(self.next_at)
    }

    /// The outcome of the search under way; pending while none is.
    async fn result(&mut self) -> Option<SocketAddr> {
        let Some(rx) = self.pending.as_mut() else {
            return std::future::pending().await;
        };
        let found = rx.await.unwrap_or(None);
        self.pending = None;
        found
    }
}

/// The first of `hosts` that says it is read-write (`isro` answers `rw`).
async fn find_rw_server(hosts: Vec<SocketAddr>) -> Option<SocketAddr> {
    const PROBE_TIMEOUT: Duration = Duration::from_secs(1);
    for addr in hosts {
        let probe = async {
            let mut stream = TcpStream::connect(addr).await?;
            stream.write_all(b"isro").await?;
            let mut answer = Vec::new();
            stream.read_to_end(&mut answer).await?;
            Ok::<_, std::io::Error>(answer)
        };
        if let Ok(Ok(answer)) = tokio::time::timeout(PROBE_TIMEOUT, probe).await {
            if answer.starts_with(b"rw") {
                return Some(addr);
            }
        }
    }
    None
}

/// The connection and session as `Client` getters report them.
#[derive(Debug, Default, Clone)]
pub(crate) struct Link {
    /// The session's password.
    pub passwd: Bytes,
    /// The server of the current connection.
    pub server: Option<SocketAddr>,
    /// The session's id (it changes only when a session made by a read-only server moves to
    /// a read-write one).
    pub session_id: i64,
    /// The negotiated session timeout.
    pub timeout: Duration,
}

fn unreachable(server: &str, e: std::io::Error) -> Error {
    Error::Unreachable {
        server: server.to_owned(),
        error: crate::IoError(Arc::new(e)),
    }
}

fn update(link: &Mutex<Link>, f: impl FnOnce(&mut Link)) {
    if let Ok(mut link) = link.lock() {
        f(&mut link);
    }
}

/// A random seed (the standard library's per-process random hasher keys).
pub(crate) fn random_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish()
        | 1
}

/// xorshift64: the next number of `seed`'s sequence.
fn next_random(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

/// Shuffles `hosts` (as the Java client does), so that clients spread over the ensemble.
pub(crate) fn shuffle<H>(hosts: &mut [H], seed: &mut u64) {
    for i in (1..hosts.len()).rev() {
        let j = usize::try_from(next_random(seed) % (i as u64 + 1)).unwrap_or(0);
        hosts.swap(i, j);
    }
}

enum Ended {
    /// The connection is gone; the session may go on elsewhere. `handshaken` says whether
    /// the session was established on it (else it counts as a failed attempt).
    Lost {
        handshaken: bool,
        /// Why, when the session logic or the framing said so (else the socket just ended).
        cause: Option<Error>,
    },
    /// The session ended (closed, expired, auth failed) or nobody holds a handle any more.
    Done,
}

impl SessionTask {
    /// A task for `session` over `hosts` (shuffled here), reporting the first handshake's
    /// outcome on `ready`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        mut session: Session<Token>,
        mut hosts: Vec<(String, u16)>,
        resolve: Resolver,
        rx: mpsc::UnboundedReceiver<Command>,
        state: watch::Sender<SessionState>,
        states: tokio::sync::broadcast::Sender<SessionState>,
        chroot: Arc<Chroot>,
        ready: oneshot::Sender<Result<(), Error>>,
        link: Arc<Mutex<Link>>,
        close_timeout: Duration,
    ) -> Self {
        let mut rng = random_seed();
        shuffle(&mut hosts, &mut rng);
        session.set_host_count(hosts.len());
        Self {
            session,
            hosts,
            resolve,
            rx,
            state,
            states,
            chroot,
            sinks: HashMap::new(),
            ready: Some(ready),
            rx_done: false,
            close_timeout,
            closing: None,
            rng,
            current: None,
            leave: false,
            link,
            preferred: None,
        }
    }

    /// Runs connections until the session ends.
    pub(crate) async fn run(mut self) {
        let mut attempt = 0usize;
        // Failed attempts in a row; a round of failures over every host backs off.
        let mut failures = 0usize;
        // Why the last attempt failed, for the first connect's error.
        let mut last_error: Option<Error> = None;
        // An established connection was just lost: pause at random before the next.
        let mut jitter = false;
        loop {
            if self.session.state().is_terminal() {
                break;
            }
            if std::mem::take(&mut jitter) {
                let pause = Duration::from_millis(next_random(&mut self.rng) % RECONNECT_JITTER_MS);
                if self
                    .while_waiting(tokio::time::sleep(pause))
                    .await
                    .is_none()
                {
                    break;
                }
                continue;
            }
            let budget = self.session.connect_budget();
            let hosts = self.hosts.len().max(1);
            self.current = None;
            let next = match self.preferred.take() {
                Some(addr) => Ok(addr),
                None => {
                    attempt += 1;
                    match self.hosts.get((attempt - 1) % hosts).cloned() {
                        Some((host, port)) => {
                            self.current = Some((host.clone(), port));
                            self.resolve_one(host, port, budget).await
                        }
                        None => break,
                    }
                }
            };
            let addr = match next {
                Ok(addr) => Some(addr),
                Err(Some(e)) => {
                    last_error = Some(e);
                    failures += 1;
                    None
                }
                // Every `Client` is gone or the session ended meanwhile.
                Err(None) => break,
            };
            if let Some(addr) = addr {
                let connect = tokio::time::timeout(budget, TcpStream::connect(addr));
                match self.while_waiting(connect).await {
                    None => break,
                    Some(Ok(Ok(stream))) => {
                        let _ = stream.set_nodelay(true);
                        match self.connection(stream, addr).await {
                            Ended::Done => break,
                            Ended::Lost {
                                handshaken: true, ..
                            } => {
                                failures = 0;
                                // Not when moving on purpose (a read-write server found, a
                                // server removed from the list).
                                jitter =
                                    self.preferred.is_none() && !std::mem::take(&mut self.leave);
                            }
                            Ended::Lost {
                                handshaken: false,
                                cause,
                            } => {
                                failures += 1;
                                last_error = cause.or(last_error);
                            }
                        }
                    }
                    Some(Ok(Err(e))) => {
                        failures += 1;
                        last_error = Some(Error::Unreachable {
                            server: addr.to_string(),
                            error: crate::IoError(Arc::new(e)),
                        });
                    }
                    Some(Err(_)) => {
                        failures += 1;
                        last_error = Some(Error::ConnectTimeout);
                    }
                }
            }
            if self.ready.is_some() && attempt >= hosts {
                // The first session: one try per host, then report.
                if let Some(ready) = self.ready.take() {
                    let _ = ready.send(Err(last_error.take().unwrap_or(Error::ConnectTimeout)));
                }
                break;
            }
            if failures > 0 && failures % hosts == 0 {
                // Every host failed in a row: back off before the next round, bounded.
                let round = u32::try_from(failures / hosts).unwrap_or(u32::MAX).min(5);
                let pause =
                    (Duration::from_millis(50) * 2u32.pow(round)).min(Duration::from_secs(1));
                if self
                    .while_waiting(tokio::time::sleep(pause))
                    .await
                    .is_none()
                {
                    break;
                }
            }
        }
        self.finish();
    }

    /// Resolves `host` (within `budget`) and picks one of its addresses at random. `Err(None)`
    /// when the task must stop meanwhile.
    async fn resolve_one(
        &mut self,
        host: String,
        port: u16,
        budget: Duration,
    ) -> Result<SocketAddr, Option<Error>> {
        let server = if host.contains(':') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        };
        let lookup = tokio::time::timeout(budget, (self.resolve)(host, port));
        let resolved = match self.while_waiting(lookup).await {
            None => return Err(None),
            Some(Ok(Ok(addrs))) if !addrs.is_empty() => addrs,
            Some(Ok(Ok(_))) => Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "the name has no address",
            ))
            .map_err(|e| Some(unreachable(&server, e)))?,
            Some(Ok(Err(e))) => return Err(Some(unreachable(&server, e))),
            Some(Err(_)) => return Err(Some(Error::ConnectTimeout)),
        };
        let i = usize::try_from(next_random(&mut self.rng) % resolved.len() as u64).unwrap_or(0);
        resolved.get(i).copied().ok_or(Some(Error::ConnectTimeout))
    }

    /// Waits for `fut` while there is no connection, still running the session's timers
    /// (a session with no server for its whole timeout is reported lost) and answering
    /// commands (they fail at once: nothing can be sent). `None` when the session ended
    /// meanwhile (a close that could not reach a server in time).
    async fn while_waiting<F: std::future::Future>(&mut self, fut: F) -> Option<F::Output> {
        tokio::pin!(fut);
        loop {
            if self.session.state().is_terminal() {
                return None;
            }
            let deadline = self.session.poll_timeout().map(Instant::from_std);
            let close_at = self.close_deadline();
            tokio::select! {
                out = &mut fut => return Some(out),
                _ = sleep_until(deadline) => {
                    let _ = self.session.handle_timeout(Instant::now().into_std());
                }
                _ = sleep_until(close_at) => self.close_here(),
                cmd = self.rx.recv(), if !self.rx_done => match cmd {
                    Some(cmd) => self.command(cmd),
                    None => self.every_client_gone(),
                },
            }
            self.drain_events();
        }
    }

    /// Every `Client` is gone: close the session so its ephemeral nodes go now.
    fn every_client_gone(&mut self) {
        self.rx_done = true;
        self.begin_close(None);
    }

    /// Starts closing (or joins the close under way): `closeSession` now if connected, else
    /// once a connection is made, until the close timeout; then here.
    fn begin_close(&mut self, waiter: Option<oneshot::Sender<Result<(), Error>>>) {
        if self.session.state().is_terminal() {
            if let Some(w) = waiter {
                let _ = w.send(Ok(()));
            }
            return;
        }
        let close_timeout = self.close_timeout;
        let closing = self.closing.get_or_insert_with(|| Closing {
            deadline: Instant::now().checked_add(close_timeout),
            waiters: Vec::new(),
            sent: false,
        });
        closing.waiters.extend(waiter);
        self.send_close();
    }

    /// Sends `closeSession` if a close is under way and the session is connected.
    fn send_close(&mut self) {
        let Some(closing) = self.closing.as_mut() else {
            return;
        };
        if closing.sent || !self.session.state().is_connected() {
            return;
        }
        let now = Instant::now().into_std();
        if self
            .session
            .submit(now, Request::CloseSession, None, None)
            .is_ok()
        {
            closing.sent = true;
        }
    }

    /// When a close under way gives up on the server.
    fn close_deadline(&self) -> Option<Instant> {
        self.closing.as_ref().and_then(|c| c.deadline)
    }

    /// No server confirmed the close in time: end the session here (the server expires it).
    fn close_here(&mut self) {
        self.session.close_locally();
        self.drain_events();
    }

    /// The session ended: whoever waits for a close is done.
    fn closed(&mut self) {
        if let Some(closing) = self.closing.as_mut() {
            for w in closing.waiters.drain(..) {
                let _ = w.send(Ok(()));
            }
        }
    }

    fn finish(&mut self) {
        if !self.session.state().is_terminal() {
            // Stopped without a session end (cannot happen but by a bug): end it here.
            self.session.close_locally();
        }
        self.drain_events();
        self.closed();
        // Whatever is still queued fails.
        self.rx.close();
        while let Ok(cmd) = self.rx.try_recv() {
            self.command(cmd);
        }
        self.drain_events();
        for (_, sink) in self.sinks.drain() {
            drop(sink);
        }
        if let Some(ready) = self.ready.take() {
            let err = match self.session.state() {
                s if s.is_terminal() => s.error(),
                _ => Error::ConnectTimeout,
            };
            let _ = ready.send(Err(err));
        }
    }

    async fn connection(&mut self, stream: TcpStream, addr: SocketAddr) -> Ended {
        update(&self.link, |l| l.server = Some(addr));
        let (mut reader, mut writer) = stream.into_split();
        self.session.handle_connected(Instant::now().into_std());
        let mut ended = self.pump(&mut reader, &mut writer).await;
        if let Ended::Lost { handshaken, cause } = &mut ended {
            *handshaken = self.session.state().is_connected();
            if !*handshaken {
                // Garbage instead of a handshake: not a ZooKeeper server.
                if let Some(Error::Protocol(p)) = cause.as_ref() {
                    *cause = Some(Error::NotZooKeeper {
                        server: addr.to_string(),
                        detail: p.to_string(),
                    });
                }
            }
        }
        update(&self.link, |l| l.server = None);
        self.session.handle_disconnect(Instant::now().into_std());
        self.drain_events();
        let _ = writer.shutdown().await;
        ended
    }

    async fn pump(&mut self, reader: &mut OwnedReadHalf, writer: &mut OwnedWriteHalf) -> Ended {
        let mut codec = ZkFrames {
            max: self.session.config().max_frame_len,
        };
        let mut rbuf = BytesMut::with_capacity(READ_BUFFER);
        let mut wbuf = BytesMut::new();
        let mut rw_search = RwSearch::new();
        let peer = reader.peer_addr().ok();
        loop {
            self.drain_events();
            if let Some(bytes) = self.session.poll_transmit() {
                if wbuf.is_empty() {
                    wbuf = bytes;
                } else {
                    wbuf.extend_from_slice(&bytes);
                }
            }
            if self.session.state().is_terminal() {
                // Flush what is queued (the closeSession reply is in), then stop.
                let _ = writer.write_all(&wbuf).await;
                return Ended::Done;
            }
            let deadline = self.session.poll_timeout().map(Instant::from_std);
            rw_search.start_if_due(self.session.state(), &self.hosts, &self.resolve, peer);
            let close_at = self.close_deadline();
            tokio::select! {
                biased;
                read = reader.read_buf(&mut rbuf) => match read {
                    Ok(0) | Err(_) => return Ended::Lost { handshaken: false, cause: None },
                    Ok(_) => loop {
                        match codec.decode(&mut rbuf) {
                            Ok(Some(frame)) => {
                                if let Err(e) = self.session.handle_frame(Instant::now().into_std(), &frame) {
                                    return self.lost_or_done(e);
                                }
                            }
                            Ok(None) => break,
                            Err(e) => return Ended::Lost { handshaken: false, cause: Some(e) },
                        }
                    },
                },
                written = writer.write(&wbuf), if !wbuf.is_empty() => match written {
                    Ok(0) | Err(_) => return Ended::Lost { handshaken: false, cause: None },
                    Ok(n) => {
                        let _ = wbuf.split_to(n.min(wbuf.len()));
                    }
                },
                cmd = self.rx.recv(), if !self.rx_done => match cmd {
                    Some(cmd) => {
                        self.command(cmd);
                        for _ in 0..COMMAND_BATCH {
                            match self.rx.try_recv() {
                                Ok(cmd) => self.command(cmd),
                                Err(_) => break,
                            }
                        }
                    }
                    None => self.every_client_gone(),
                },
                _ = sleep_until(close_at) => {
                    self.close_here();
                    return Ended::Done;
                },
                _ = std::future::ready(()), if self.leave => {
                    return Ended::Lost { handshaken: true, cause: None };
                },
                _ = sleep_until(earliest(deadline, rw_search.deadline(self.session.state()))) => {
                    if let Err(e) = self.session.handle_timeout(Instant::now().into_std()) {
                        return self.lost_or_done(e);
                    }
                },
                found = rw_search.result() => {
                    if let Some(addr) = found {
                        // Leave the read-only server for the read-write one.
                        self.preferred = Some(addr);
                        return Ended::Lost { handshaken: true, cause: None };
                    }
                },
            }
        }
    }

    fn lost_or_done(&self, cause: Error) -> Ended {
        if self.session.state().is_terminal() {
            Ended::Done
        } else {
            Ended::Lost {
                handshaken: false,
                cause: Some(cause),
            }
        }
    }

    fn command(&mut self, cmd: Command) {
        match cmd {
            Command::Submit { reply, .. } if self.closing.is_some() => {
                let _ = reply.send(Err(Error::Closed));
            }
            Command::Close { reply } => self.begin_close(Some(reply)),
            Command::UpdateHosts { mut hosts } => {
                shuffle(&mut hosts, &mut self.rng);
                self.session.set_host_count(hosts.len());
                self.leave = self.current.as_ref().is_some_and(|c| !hosts.contains(c))
                    && self.session.state().is_connected();
                self.hosts = hosts;
            }
            Command::RemoveWatchesLocally { path, which, reply } => {
                let result = match self.chroot.to_server(&path) {
                    Some(p) if self.session.remove_watches_locally(&p, which) => Ok(()),
                    Some(_) => Err(Error::NoWatcher),
                    None => Err(Error::InvalidArgument("path outside the chroot")),
                };
                let _ = reply.send(result);
            }
            Command::Submit {
                request,
                reply,
                watch,
            } => {
                let id = watch.as_ref().map(|(id, _)| *id);
                match self
                    .session
                    .submit(Instant::now().into_std(), request, Some(reply), id)
                {
                    Ok(()) => {
                        if let Some((id, sink)) = watch {
                            self.sinks.insert(id, sink);
                        }
                    }
                    Err((token, err)) => {
                        if let Some(reply) = token {
                            let _ = reply.send(Err(err));
                        }
                    }
                }
            }
            Command::ForgetWatch { path, id } => {
                if self.sinks.remove(&id).is_some() {
                    if let Some(server_path) = self.chroot.to_server(&path) {
                        if let Some(remove) = self.session.forget_watch(&server_path, id) {
                            // The last persistent watcher of the path: end the watch on the
                            // server too (if not connected, the reconnect does not restore
                            // it, as it is gone from the table).
                            let now = Instant::now().into_std();
                            let _ = self.session.submit(now, remove, None, None);
                        }
                    }
                }
            }
        }
    }

    fn drain_events(&mut self) {
        while let Some(event) = self.session.poll_event() {
            match event {
                SessionEvent::Reply { token, result } => {
                    if let Some(reply) = token {
                        let _ = reply.send(result);
                    }
                }
                SessionEvent::Watch { id, event, last } => {
                    let event = WatchedEvent {
                        path: self.chroot.to_client(&event.path),
                        ..event
                    };
                    if last {
                        match self.sinks.remove(&id) {
                            Some(WatchSink::Oneshot(tx)) => {
                                let _ = tx.send(event);
                            }
                            Some(WatchSink::Stream(tx)) => {
                                let _ = tx.send(event);
                            }
                            None => {}
                        }
                    } else if let Some(WatchSink::Stream(tx)) = self.sinks.get(&id) {
                        let _ = tx.send(event);
                    }
                }
                SessionEvent::Unwatched(id) => {
                    self.sinks.remove(&id);
                }
                SessionEvent::State(state) => {
                    // What the getters report first, so that whoever sees the new state
                    // reads the new session's id and timeout.
                    if state.is_connected() {
                        let (id, timeout) =
                            (self.session.session_id(), self.session.negotiated_timeout());
                        let passwd = self.session.password().cloned().unwrap_or_default();
                        update(&self.link, |l| {
                            l.session_id = id;
                            l.timeout = timeout;
                            l.passwd = passwd;
                        });
                    }
                    self.state.send_replace(state);
                    let _ = self.states.send(state);
                    if state.is_connected() {
                        if let Some(ready) = self.ready.take() {
                            let _ = ready.send(Ok(()));
                        }
                        // A close waiting for a connection can go now.
                        self.send_close();
                    }
                    if state.is_terminal() {
                        self.closed();
                    }
                }
            }
        }
    }
}

/// The earlier of two optional deadlines.
fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::io;

    use super::*;
    use crate::Client;

    /// Defect 6: names are resolved on every attempt, not once at `connect()`: a name that
    /// does not resolve yet is kept, and a server that moves to a new address is found there.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn names_are_resolved_on_every_attempt() {
        let zk = xtask::ZkServer::start().unwrap();
        let a = xtask::FaultProxy::start(zk.addr()).unwrap();
        let b = xtask::FaultProxy::start(zk.addr()).unwrap();
        let target: Arc<Mutex<Option<SocketAddr>>> = Arc::new(Mutex::new(None));
        let answers = target.clone();
        let resolve: Resolver = Arc::new(move |host: String, _port: u16| {
            let answers = answers.clone();
            Box::pin(async move {
                assert_eq!(host, "zk.test");
                let addr = *answers.lock().unwrap();
                addr.map(|a| vec![a])
                    .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "unknown name"))
            })
        });
        let builder = Client::builder()
            .hosts("zk.test:2181")
            .session_timeout(Duration::from_secs(10));
        let err = builder
            .clone()
            .connect_with(resolve.clone())
            .await
            .unwrap_err();
        assert!(
            matches!(&err, Error::Unreachable { server, .. } if server == "zk.test:2181"),
            "{err:?}"
        );
        *target.lock().unwrap() = Some(a.addr());
        let c = builder.connect_with(resolve).await.unwrap();
        let session = c.session_id();
        assert_eq!(c.server_addr(), Some(a.addr()));
        // The server moves: the name now points to `b`, and `a` is gone.
        *target.lock().unwrap() = Some(b.addr());
        a.refuse(true);
        a.cut();
        let mut states = c.state_watch();
        tokio::time::timeout(
            Duration::from_secs(30),
            states.wait_for(|s| *s == SessionState::Disconnected),
        )
        .await
        .unwrap()
        .unwrap();
        tokio::time::timeout(
            Duration::from_secs(30),
            states.wait_for(|s| *s == SessionState::Connected),
        )
        .await
        .unwrap()
        .unwrap();
        assert_eq!(c.server_addr(), Some(b.addr()));
        assert_eq!(c.session_id(), session);
        c.close().await.unwrap();
    }
}
