//! The session task: the one place that touches the stream and the clock.
//!
//! It moves bytes and events between a [`Session`] and a connection and makes no protocol
//! decision: frames read go to `handle_frame`, the timer to `handle_timeout`, commands to
//! `submit`; after each input it drains `poll_event` (completing callers, feeding watchers)
//! and `poll_transmit` (queueing bytes to write). Which server to try next, and when, is the
//! [`Dialer`]'s decision; it only does what the dialer says and reports how it went. The
//! stream and the resolver are injected ([`connect`]), so tests run the whole task over
//! in-memory streams on tokio's paused clock.

mod connect;
mod rw_search;
#[cfg(feature = "tls")]
mod tls;

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;
use tokio_util::codec::Decoder;
use zk_proto::Request;

pub(crate) use connect::{Connect, Resolver, Tcp, system_resolver, unreachable};
#[cfg(feature = "transport")]
pub(crate) use connect::{Dial, literal_resolver};
#[cfg(feature = "tls")]
pub(crate) use tls::TlsConnect;

use crate::command::{Command, WatchSink};
use crate::dial::{Dialer, Step};
use crate::framing::ZkFrames;
use crate::session::{Session, SessionEvent, SessionState, WatcherId};
use crate::{Error, chroot::Chroot};
use rw_search::RwSearch;

/// The caller waiting for a reply (none for requests the task sends on its own).
pub(crate) type Token = Option<crate::command::ReplyTo>;

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

/// The read buffer's initial size: room for a burst of small replies. It is every
/// connection's (a process with a thousand sessions has a thousand), and a larger frame makes
/// room for itself (`zk_proto::frame` reserves its whole length once the length is read), so
/// it is kept small: at 64 KiB it was four fifths of a session's heap (`bench many`).
const READ_BUFFER: usize = 16 * 1024;

/// How long a connection's teardown (the last bytes of a session that ended, then the
/// shutdown: a TLS `close_notify`) may wait for a peer that does not read. It runs in the
/// background: the session goes on (reconnects, answers calls, closes) meanwhile.
const TEARDOWN: Duration = Duration::from_secs(1);

pub(crate) struct SessionTask<C: Connect = Tcp> {
    session: Session<Token>,
    /// Which server next, and when.
    dialer: Dialer,
    resolve: Resolver,
    connector: Arc<C>,
    rx: mpsc::UnboundedReceiver<Command>,
    state: watch::Sender<SessionState>,
    /// Every state change, for [`crate::StateStream`]s.
    states: tokio::sync::broadcast::Sender<SessionState>,
    chroot: Arc<Chroot>,
    sinks: HashMap<WatcherId, WatchSink>,
    /// Told once: the first handshake's outcome.
    ready: Option<oneshot::Sender<Result<(), Error>>>,
    /// Every `Client` handle is gone: no command will come any more.
    rx_done: bool,
    /// How long a close may try to reach a server.
    close_timeout: Duration,
    /// A close under way.
    closing: Option<Closing>,
    /// The connect-string entry of the current connection (not set for a read-write server
    /// found while on a read-only one).
    current: Option<(String, u16)>,
    /// Leave the current server on purpose (it left the list, or a read-write one was found).
    leave: bool,
    /// What clients can read about the connection and session.
    link: Arc<Mutex<Link>>,
}

/// What a session task is made of, besides the session, the transport and the channels.
pub(crate) struct Wiring {
    pub rx: mpsc::UnboundedReceiver<Command>,
    pub state: watch::Sender<SessionState>,
    pub states: tokio::sync::broadcast::Sender<SessionState>,
    pub chroot: Arc<Chroot>,
    pub ready: oneshot::Sender<Result<(), Error>>,
    pub link: Arc<Mutex<Link>>,
    pub close_timeout: Duration,
}

/// What the pump keeps for one connection.
struct Pump {
    codec: ZkFrames,
    rbuf: BytesMut,
    rw_search: RwSearch,
    /// The session's timer (and the read-write search's), armed at `armed`.
    timer: Pin<Box<tokio::time::Sleep>>,
    armed: Option<Instant>,
    /// The close's deadline, once a close is under way.
    close_timer: Option<Pin<Box<tokio::time::Sleep>>>,
    /// Bytes were written since the stream was last flushed.
    unflushed: bool,
}

/// The connection and session as `Client` getters report them.
#[derive(Debug, Default)]
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
    /// Since when no server is connected, and the attempts since.
    pub down: crate::outage::Down,
}

/// The servers as `host:port` (an IPv6 host in brackets).
fn servers(hosts: &[(String, u16)]) -> Vec<String> {
    hosts
        .iter()
        .map(|(host, port)| {
            if host.contains(':') {
                format!("[{host}]:{port}")
            } else {
                format!("{host}:{port}")
            }
        })
        .collect()
}

fn update(link: &Mutex<Link>, f: impl FnOnce(&mut Link)) {
    if let Ok(mut link) = link.lock() {
        f(&mut link);
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

impl<C: Connect> SessionTask<C> {
    /// A task for `session` over the connect string's `hosts` (tried in a random order that
    /// `seed` decides), reaching them with `resolve` and `connector`.
    pub(crate) fn new(
        mut session: Session<Token>,
        hosts: Vec<(String, u16)>,
        seed: u64,
        resolve: Resolver,
        connector: C,
        wiring: Wiring,
    ) -> Self {
        let dialer = Dialer::new(hosts, seed);
        session.set_host_count(dialer.hosts().len());
        update(&wiring.link, |l| l.down.servers = servers(dialer.hosts()));
        Self {
            session,
            dialer,
            resolve,
            connector: Arc::new(connector),
            rx: wiring.rx,
            state: wiring.state,
            states: wiring.states,
            chroot: wiring.chroot,
            sinks: HashMap::new(),
            ready: Some(wiring.ready),
            rx_done: false,
            close_timeout: wiring.close_timeout,
            closing: None,
            current: None,
            leave: false,
            link: wiring.link,
        }
    }

    /// Runs connections until the session ends: the dialer says where and when, this does it
    /// and tells the dialer how it went.
    pub(crate) async fn run(mut self) {
        loop {
            if self.session.state().is_terminal() {
                break;
            }
            let budget = self.session.connect_budget();
            self.current = None;
            let addrs = match self.dialer.next(Instant::now().into_std()) {
                Step::WaitUntil(until) => {
                    let until = Instant::from_std(until);
                    if self
                        .while_waiting(tokio::time::sleep_until(until))
                        .await
                        .is_none()
                    {
                        break;
                    }
                    continue;
                }
                Step::GiveUp(e) => {
                    crate::log::warning!(error = %e, "no server could be reached: giving up");
                    if let Some(ready) = self.ready.take() {
                        let _ = ready.send(Err(e));
                    }
                    break;
                }
                Step::Addr(addr) => {
                    crate::log::debug!(%addr, "connecting to the read-write server found");
                    vec![addr]
                }
                Step::Host(host, port) => {
                    crate::log::debug!(server = %format_args!("{host}:{port}"), "connecting");
                    self.current = Some((host.clone(), port));
                    match self.resolve(host, port, budget).await {
                        Ok(addrs) => addrs,
                        Err(Some(e)) => {
                            crate::log::warning!(error = %e, "connection attempt failed");
                            update(&self.link, |l| l.down.failed(e.clone()));
                            self.dialer.failed(Instant::now().into_std(), e);
                            continue;
                        }
                        Err(None) => break,
                    }
                }
            };
            let failure = match self.connect_any(addrs, budget).await {
                None => break,
                Some(Ok((stream, addr))) => match self.connection(stream, addr).await {
                    Ended::Done => break,
                    Ended::Lost {
                        handshaken: true,
                        cause,
                    } => {
                        let on_purpose = std::mem::take(&mut self.leave);
                        self.dialer.lost(Instant::now().into_std(), on_purpose);
                        crate::log::info!(
                            server = %addr,
                            cause = %cause.as_ref().map_or_else(|| "the connection ended".to_owned(), ToString::to_string),
                            on_purpose,
                            "connection lost: reconnecting"
                        );
                        let _ = cause; // read by the log only
                        continue;
                    }
                    Ended::Lost {
                        handshaken: false,
                        cause,
                    } => cause.unwrap_or_else(|| {
                        let eof = std::io::Error::new(
                            std::io::ErrorKind::UnexpectedEof,
                            "the server closed the connection during the handshake",
                        );
                        unreachable(&addr.to_string(), eof)
                    }),
                },
                Some(Err(e)) => e,
            };
            crate::log::warning!(error = %failure, "connection attempt failed");
            update(&self.link, |l| l.down.failed(failure.clone()));
            self.dialer.failed(Instant::now().into_std(), failure);
        }
        self.finish();
    }

    /// Opens a stream to one of `addrs` (every address of one server, shuffled), trying them
    /// in turn until one accepts, all within `budget`: each gets an equal share of what is
    /// left, so a refusal passes on at once and a silent address cannot use up the others'
    /// time. The last failure when none accepts; `None` when the task must stop meanwhile.
    async fn connect_any(
        &mut self,
        addrs: Vec<SocketAddr>,
        budget: Duration,
    ) -> Option<Result<(C::Stream, SocketAddr), Error>> {
        let host = self.current.as_ref().map(|(host, _)| host.clone());
        let started = Instant::now();
        let mut failure = Error::ConnectTimeout;
        let count = addrs.len();
        for (i, addr) in addrs.into_iter().enumerate() {
            let left = budget.saturating_sub(started.elapsed());
            let share = left / u32::try_from(count - i).unwrap_or(u32::MAX);
            let connect = self.connector.connect(host.as_deref(), addr);
            match self
                .while_waiting(tokio::time::timeout(share, connect))
                .await?
            {
                Ok(Ok(stream)) => {
                    crate::log::debug!(%addr, "connected: handshake");
                    return Some(Ok((stream, addr)));
                }
                Ok(Err(e)) => failure = e,
                Err(_) => {
                    let silent = std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        format!("no answer to the connection within {}", millis(share)),
                    );
                    failure = unreachable(&addr.to_string(), silent);
                }
            }
        }
        Some(Err(failure))
    }

    /// Resolves `host` (within `budget`): every address, shuffled (as the Java client's
    /// `StaticHostProvider`, a name with an IPv6 and an IPv4 address is reached on
    /// whichever answers). `Err(None)` when the task must stop meanwhile.
    async fn resolve(
        &mut self,
        host: String,
        port: u16,
        budget: Duration,
    ) -> Result<Vec<SocketAddr>, Option<Error>> {
        let server = if host.contains(':') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        };
        let lookup = tokio::time::timeout(budget, (self.resolve)(host, port));
        let resolved = match self.while_waiting(lookup).await {
            None => return Err(None),
            Some(Ok(Ok(addrs))) => addrs,
            Some(Ok(Err(e))) => return Err(Some(unreachable(&server, e))),
            Some(Err(_)) => {
                let slow = std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("the name did not resolve within {}", millis(budget)),
                );
                return Err(Some(unreachable(&server, slow)));
            }
        };
        let mut resolved = resolved;
        if resolved.is_empty() {
            return Err(Some(unreachable(
                &server,
                std::io::Error::new(std::io::ErrorKind::NotFound, "the name has no address"),
            )));
        }
        self.dialer.shuffle(&mut resolved);
        Ok(resolved)
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
            sink.session_ended();
        }
        if let Some(ready) = self.ready.take() {
            let err = self.session.ended_error().unwrap_or(Error::ConnectTimeout);
            let _ = ready.send(Err(err));
        }
    }

    async fn connection(&mut self, stream: C::Stream, addr: SocketAddr) -> Ended {
        update(&self.link, |l| l.server = Some(addr));
        let mut stream = stream;
        self.session.handle_connected(Instant::now().into_std());
        let mut wbuf = BytesMut::new();
        let mut ended = self.pump(&mut stream, addr, &mut wbuf).await;
        // Bytes still unwritten are flushed only when the session ended on its own (they
        // count as written); otherwise their requests fail as never sent.
        if !self.session.state().is_terminal() {
            self.session.handle_unsent(wbuf.len());
            wbuf.clear();
        }
        if let Ended::Lost { handshaken, cause } = &mut ended {
            *handshaken = self.session.state().is_connected();
            if !*handshaken {
                match cause.as_ref() {
                    // Garbage instead of a handshake: not a ZooKeeper server.
                    Some(Error::Protocol(p)) => {
                        *cause = Some(Error::NotZooKeeper {
                            server: addr.to_string(),
                            detail: p.to_string(),
                        });
                    }
                    // Silence: a server that is not ZooKeeper's (an HTTP port waits for a
                    // request), or one too busy to answer.
                    Some(Error::ConnectTimeout) => {
                        let silent = std::io::Error::new(
                            std::io::ErrorKind::TimedOut,
                            format!(
                                "the connection was accepted but the handshake had no answer \
                                 within {} (is this a ZooKeeper client port?)",
                                millis(self.session.connect_budget())
                            ),
                        );
                        *cause = Some(unreachable(&addr.to_string(), silent));
                    }
                    _ => {}
                }
            }
        }
        update(&self.link, |l| {
            l.server = None;
            l.down.lost(Instant::now());
        });
        self.session.handle_disconnect(Instant::now().into_std());
        self.drain_events();
        // A peer that does not read would hold a flush or a TLS shutdown forever: close in
        // the background, within a budget.
        tokio::spawn(async move {
            let teardown = async {
                if !wbuf.is_empty() {
                    let _ = stream.write_all(&wbuf).await;
                }
                let _ = stream.shutdown().await;
            };
            let _ = tokio::time::timeout(TEARDOWN, teardown).await;
            drop(stream);
        });
        ended
    }

    /// Moves bytes, commands and time between the connection and the session until the
    /// connection ends or the session does. One hand-written poll: each turn takes every
    /// command queued, every byte readable and a timer that fired, then writes what the session
    /// queued; it returns `Pending` once each source has said `Pending` in that turn (so each
    /// has the task's waker), without turning again for sources that had nothing.
    async fn pump(
        &mut self,
        stream: &mut C::Stream,
        peer: SocketAddr,
        wbuf: &mut BytesMut,
    ) -> Ended {
        let mut pump = Pump {
            codec: ZkFrames {
                max: self.session.config().max_frame_len,
            },
            rbuf: BytesMut::with_capacity(READ_BUFFER),
            rw_search: RwSearch::new(),
            // One timer for the connection, moved only when the deadline comes earlier.
            timer: Box::pin(tokio::time::sleep_until(Instant::now())),
            armed: None,
            close_timer: None,
            unflushed: false,
        };
        std::future::poll_fn(|cx| self.poll_pump(cx, &mut pump, stream, peer, wbuf)).await
    }

    fn poll_pump(
        &mut self,
        cx: &mut Context<'_>,
        pump: &mut Pump,
        stream: &mut C::Stream,
        peer: SocketAddr,
        wbuf: &mut BytesMut,
    ) -> Poll<Ended> {
        let lost = |cause| {
            Poll::Ready(Ended::Lost {
                handshaken: false,
                cause,
            })
        };
        loop {
            // Commands: all that are queued, a batch at a time.
            let mut more = false;
            if !self.rx_done {
                let mut taken = 0;
                loop {
                    match self.rx.poll_recv(cx) {
                        Poll::Ready(Some(cmd)) => self.command(cmd),
                        Poll::Ready(None) => {
                            self.every_client_gone();
                            break;
                        }
                        Poll::Pending => break,
                    }
                    taken += 1;
                    if taken == COMMAND_BATCH {
                        // Let the bytes of this batch go before taking more.
                        more = true;
                        break;
                    }
                }
            }
            if self.leave {
                return Poll::Ready(Ended::Lost {
                    handshaken: true,
                    cause: None,
                });
            }
            // Frames: everything readable now.
            loop {
                let read = {
                    let read = std::pin::pin!(stream.read_buf(&mut pump.rbuf));
                    read.poll(cx)
                };
                match read {
                    Poll::Pending => break,
                    Poll::Ready(Ok(0)) => return lost(None),
                    Poll::Ready(Err(e)) => return lost(self.connector.explain(&e, peer)),
                    Poll::Ready(Ok(_)) => loop {
                        match pump.codec.decode(&mut pump.rbuf) {
                            Ok(Some(frame)) => {
                                if let Err(e) =
                                    self.session.handle_frame(Instant::now().into_std(), &frame)
                                {
                                    return Poll::Ready(self.lost_or_done(e));
                                }
                            }
                            Ok(None) => break,
                            Err(e) => return lost(Some(e)),
                        }
                    },
                }
            }
            // The session's timer, and the search for a read-write server.
            pump.rw_search.start_if_due(
                self.session.state(),
                self.dialer.hosts(),
                &self.resolve,
                &self.connector,
                Some(peer),
            );
            if let Some(found) = pump.rw_search.poll_result(cx) {
                if let Some(addr) = found {
                    crate::log::info!(%addr, "a read-write server answers: leaving the read-only one");
                    // Leave the read-only server for the read-write one (next turn).
                    self.dialer.prefer(addr);
                    self.leave = true;
                }
                continue;
            }
            let want = earliest(
                self.session.poll_timeout().map(Instant::from_std),
                pump.rw_search.deadline(self.session.state()),
            );
            // Deadlines mostly move later (every send and read moves the ping and read
            // deadlines): the armed timer is then left to fire at the earlier instant, where
            // `handle_timeout` does nothing and the timer is re-armed. Moving it each turn
            // would cost a timer-wheel update per request and per reply.
            if let Some(at) = want {
                if pump.armed.is_none_or(|armed| at < armed) {
                    pump.timer.as_mut().reset(at);
                    pump.armed = Some(at);
                }
            }
            if pump.armed.is_some() && pump.timer.as_mut().poll(cx).is_ready() {
                // Fired: re-armed next turn with whatever the session wants then.
                pump.armed = None;
                if let Err(e) = self.session.handle_timeout(Instant::now().into_std()) {
                    return Poll::Ready(self.lost_or_done(e));
                }
                more = true;
            }
            // Replies and events to their callers and watchers; bytes to the server.
            self.drain_events();
            if let Some(bytes) = self.session.poll_transmit() {
                if wbuf.is_empty() {
                    *wbuf = bytes;
                } else {
                    wbuf.extend_from_slice(&bytes);
                }
            }
            if self.session.state().is_terminal() {
                // What is queued is flushed by the teardown.
                return Poll::Ready(Ended::Done);
            }
            while !wbuf.is_empty() {
                match Pin::new(&mut *stream).poll_write(cx, wbuf) {
                    Poll::Pending => break,
                    Poll::Ready(Ok(0)) => return lost(None),
                    Poll::Ready(Err(e)) => return lost(self.connector.explain(&e, peer)),
                    Poll::Ready(Ok(n)) => {
                        // `advance`, not `split_to` (which would allocate a shared header);
                        // once all is written the buffer is dropped, so the session's own
                        // buffer is unique again and its next frames reuse the allocation.
                        let n = n.min(wbuf.len());
                        bytes::Buf::advance(wbuf, n);
                        if wbuf.is_empty() {
                            *wbuf = BytesMut::new();
                        }
                        pump.unflushed = true;
                    }
                }
            }
            // A stream may hold bytes of its own beyond the connection (TLS: the records
            // rustls keeps while the socket is full): flushed once all is written, and again
            // each turn until done (its waker is ours meanwhile), else they would wait for the
            // next write, the ping.
            if wbuf.is_empty() && pump.unflushed {
                match Pin::new(&mut *stream).poll_flush(cx) {
                    Poll::Pending => {}
                    Poll::Ready(Ok(())) => pump.unflushed = false,
                    Poll::Ready(Err(e)) => return lost(self.connector.explain(&e, peer)),
                }
            }
            // A close that no server confirmed in time ends here.
            if let Some(at) = self.close_deadline() {
                let timer = pump
                    .close_timer
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(at)));
                if timer.as_mut().poll(cx).is_ready() {
                    // What sits unwritten is never sent: its requests fail as not sent.
                    self.session.handle_unsent(wbuf.len());
                    wbuf.clear();
                    self.close_here();
                    return Poll::Ready(Ended::Done);
                }
            }
            if !more {
                return Poll::Pending;
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
                reply.send(Err(Error::Closed));
            }
            Command::Close { reply } => self.begin_close(Some(reply)),
            Command::UpdateHosts { hosts } => {
                self.session.set_host_count(hosts.len());
                let kept = self.dialer.set_hosts(hosts, self.current.as_ref());
                update(&self.link, |l| {
                    l.down.servers = servers(self.dialer.hosts())
                });
                self.leave = !kept && self.session.state().is_connected();
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
                            reply.send(Err(err));
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
                        reply.send(result);
                    }
                }
                SessionEvent::Watch {
                    id,
                    mut event,
                    last,
                } => {
                    event.path = self.chroot.to_client(std::mem::take(&mut event.path));
                    if last {
                        if let Some(sink) = self.sinks.remove(&id) {
                            sink.finish(event);
                        }
                    } else if let Some(sink) = self.sinks.get(&id) {
                        sink.deliver(event);
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
                            l.down.connected();
                        });
                    }
                    self.state.send_replace(state);
                    let _ = self.states.send(state);
                    if state.is_connected() {
                        self.dialer.established(Instant::now().into_std());
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

/// `250 ms`, `3 s`, `2.5 s`: a duration as a message says it.
fn millis(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms % 1000 == 0 {
        format!("{} s", ms / 1000)
    } else {
        // To the nearest tenth, in integers (float formatting would add 15 KiB to every
        // program that links the client).
        let tenths = (ms + 50) / 100;
        format!("{}.{} s", tenths / 10, tenths % 10)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests;
