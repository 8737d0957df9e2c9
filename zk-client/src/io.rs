//! The session task: the one place that touches the socket and the clock.
//!
//! It moves bytes and events between a [`Session`] and a TCP connection and makes no protocol
//! decision: frames read go to `handle_frame`, the timer to `handle_timeout`, commands to
//! `submit`; after each input it drains `poll_event` (completing callers, feeding watchers)
//! and `poll_transmit` (queueing bytes to write).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::BytesMut;
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
}

/// How many queued commands are taken in one go, so that bursts from many tasks leave in
/// few writes.
const COMMAND_BATCH: usize = 256;

/// The read buffer's initial size.
const READ_BUFFER: usize = 64 * 1024;

pub(crate) struct SessionTask {
    pub session: Session<Token>,
    pub hosts: Vec<SocketAddr>,
    pub rx: mpsc::UnboundedReceiver<Command>,
    pub state: watch::Sender<SessionState>,
    /// Every state change, for [`crate::StateStream`]s.
    pub states: tokio::sync::broadcast::Sender<SessionState>,
    pub chroot: Arc<Chroot>,
    pub sinks: HashMap<WatcherId, WatchSink>,
    /// Told once: the first handshake's outcome.
    pub ready: Option<oneshot::Sender<Result<(), Error>>>,
    /// Set when every `Client` handle is gone: close the session and stop.
    pub closing: bool,
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
        hosts: &[SocketAddr],
        current: Option<SocketAddr>,
    ) {
        if state != SessionState::ConnectedReadOnly || self.pending.is_some() || hosts.len() < 2 {
            return;
        }
        if Instant::now() < self.next_at {
            return;
        }
        let others: Vec<SocketAddr> = hosts
            .iter()
            .copied()
            .filter(|h| Some(*h) != current)
            .collect();
        let (tx, rx) = oneshot::channel();
        tokio::spawn(async move {
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
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Link {
    /// The server of the current connection.
    pub server: Option<SocketAddr>,
    /// The session's id (it changes only when a session made by a read-only server moves to
    /// a read-write one).
    pub session_id: i64,
    /// The negotiated session timeout.
    pub timeout: Duration,
}

fn update(link: &Mutex<Link>, f: impl FnOnce(&mut Link)) {
    if let Ok(mut link) = link.lock() {
        f(&mut link);
    }
}

/// Shuffles `hosts` (as the Java client does), so that clients spread over the ensemble.
pub(crate) fn shuffle(hosts: &mut [SocketAddr]) {
    use std::hash::{BuildHasher, Hasher};
    let mut seed = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish()
        | 1;
    for i in (1..hosts.len()).rev() {
        // xorshift64
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let j = usize::try_from(seed % (i as u64 + 1)).unwrap_or(0);
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
    /// Runs connections until the session ends.
    pub(crate) async fn run(mut self) {
        let hosts = self.hosts.len().max(1);
        let mut attempt = 0usize;
        // Failed attempts in a row; a round of failures over every host backs off.
        let mut failures = 0usize;
        // Why the last attempt failed, for the first connect's error.
        let mut last_error: Option<Error> = None;
        loop {
            if self.session.state().is_terminal() || self.closing {
                break;
            }
            let next = match self.preferred.take() {
                Some(addr) => Some(addr),
                None => {
                    attempt += 1;
                    self.hosts.get((attempt - 1) % hosts).copied()
                }
            };
            let Some(addr) = next else { break };
            let connect_timeout = self.session.config().connect_timeout;
            let connect = tokio::time::timeout(connect_timeout, TcpStream::connect(addr));
            match self.while_waiting(connect).await {
                None => break,
                Some(Ok(Ok(stream))) => {
                    let _ = stream.set_nodelay(true);
                    match self.connection(stream, addr).await {
                        Ended::Done => break,
                        Ended::Lost {
                            handshaken: true, ..
                        } => failures = 0,
                        Ended::Lost {
                            handshaken: false,
                            cause,
                        } => {
                            failures += 1;
                            last_error = cause.or(last_error);
                        }
                    }
                }
                Some(_) => failures += 1,
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

    /// Waits for `fut` while there is no connection, still running the session's timers
    /// (a session with no server for its whole timeout is reported lost) and answering
    /// commands (they fail at once: nothing can be sent). `None` when every `Client` is gone.
    async fn while_waiting<F: std::future::Future>(&mut self, fut: F) -> Option<F::Output> {
        tokio::pin!(fut);
        loop {
            let deadline = self.session.poll_timeout().map(Instant::from_std);
            tokio::select! {
                out = &mut fut => return Some(out),
                _ = sleep_until(deadline) => {
                    let _ = self.session.handle_timeout(Instant::now().into_std());
                }
                cmd = self.rx.recv() => match cmd {
                    Some(cmd) => self.command(cmd),
                    None => {
                        self.closing = true;
                        return None;
                    }
                },
            }
            self.drain_events();
        }
    }

    fn finish(&mut self) {
        self.drain_events();
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
        if let Ended::Lost { handshaken, .. } = &mut ended {
            *handshaken = self.session.state().is_connected();
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
            rw_search.start_if_due(self.session.state(), &self.hosts, peer);
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
                cmd = self.rx.recv(), if !self.closing => match cmd {
                    Some(cmd) => {
                        self.command(cmd);
                        for _ in 0..COMMAND_BATCH {
                            match self.rx.try_recv() {
                                Ok(cmd) => self.command(cmd),
                                Err(_) => break,
                            }
                        }
                    }
                    None => {
                        // Every Client is gone: close the session so its ephemerals go now.
                        self.closing = true;
                        let now = Instant::now().into_std();
                        let _ = self.session.submit(now, Request::CloseSession, None, None);
                    }
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
                        self.session.forget_watch(&server_path, id);
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
                        update(&self.link, |l| {
                            l.session_id = id;
                            l.timeout = timeout;
                        });
                    }
                    self.state.send_replace(state);
                    let _ = self.states.send(state);
                    if state.is_connected() {
                        if let Some(ready) = self.ready.take() {
                            let _ = ready.send(Ok(()));
                        }
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
