//! The session task: the one place that touches the socket and the clock.
//!
//! It moves bytes and events between a [`Session`] and a TCP connection and makes no protocol
//! decision: frames read go to `handle_frame`, the timer to `handle_timeout`, commands to
//! `submit`; after each input it drains `poll_event` (completing callers, feeding watchers)
//! and `poll_transmit` (queueing bytes to write).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
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
    pub chroot: Arc<Chroot>,
    pub sinks: HashMap<WatcherId, WatchSink>,
    /// Told once: the first handshake's outcome.
    pub ready: Option<oneshot::Sender<Result<(i64, std::time::Duration), Error>>>,
    /// Set when every `Client` handle is gone: close the session and stop.
    pub closing: bool,
}

enum Ended {
    /// The connection is gone; the session may go on elsewhere. `handshaken` says whether
    /// the session was established on it (else it counts as a failed attempt).
    Lost { handshaken: bool },
    /// The session ended (closed, expired, auth failed) or nobody holds a handle any more.
    Done,
}

impl SessionTask {
    /// Runs connections until the session ends.
    pub(crate) async fn run(mut self) {
        let mut next_host = 0usize;
        let mut failures = 0u32;
        loop {
            if self.session.state().is_terminal()
                || (self.closing && self.session.session_id() == 0)
            {
                break;
            }
            let Some(addr) = self.hosts.get(next_host % self.hosts.len().max(1)).copied() else {
                break;
            };
            next_host += 1;
            let connect_timeout = self.session.config().connect_timeout;
            if let Ok(Ok(stream)) =
                tokio::time::timeout(connect_timeout, TcpStream::connect(addr)).await
            {
                let _ = stream.set_nodelay(true);
                match self.connection(stream).await {
                    Ended::Done => break,
                    Ended::Lost { handshaken } => {
                        if self.closing {
                            break;
                        }
                        if handshaken {
                            failures = 0;
                        }
                    }
                }
            }
            if self.ready.is_some() && next_host >= self.hosts.len() {
                // The first connection: one try per host, then report.
                if let Some(ready) = self.ready.take() {
                    let _ = ready.send(Err(Error::ConnectTimeout));
                }
                break;
            }
            failures = failures.saturating_add(1);
            if failures >= self.hosts.len() as u32 {
                // Every host failed in a row: back off before the next round, bounded.
                let pause =
                    Duration::from_millis(100u64 << failures.min(5)).min(Duration::from_secs(2));
                self.idle(pause).await;
            }
        }
        self.finish();
    }

    /// Waits `pause` while answering commands (they fail: no connection).
    async fn idle(&mut self, pause: Duration) {
        let until = Instant::now() + pause;
        loop {
            tokio::select! {
                _ = tokio::time::sleep_until(until) => return,
                cmd = self.rx.recv() => match cmd {
                    Some(cmd) => self.command(cmd),
                    None => {
                        self.closing = true;
                        return;
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

    async fn connection(&mut self, stream: TcpStream) -> Ended {
        let (mut reader, mut writer) = stream.into_split();
        self.session.handle_connected(Instant::now().into_std());
        let mut ended = self.pump(&mut reader, &mut writer).await;
        if let Ended::Lost { handshaken } = &mut ended {
            *handshaken = self.session.state().is_connected();
        }
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
            tokio::select! {
                biased;
                read = reader.read_buf(&mut rbuf) => match read {
                    Ok(0) | Err(_) => return Ended::Lost { handshaken: false },
                    Ok(_) => loop {
                        match codec.decode(&mut rbuf) {
                            Ok(Some(frame)) => {
                                if self.session.handle_frame(Instant::now().into_std(), &frame).is_err() {
                                    return self.lost_or_done();
                                }
                            }
                            Ok(None) => break,
                            Err(_) => return Ended::Lost { handshaken: false },
                        }
                    },
                },
                written = writer.write(&wbuf), if !wbuf.is_empty() => match written {
                    Ok(0) | Err(_) => return Ended::Lost { handshaken: false },
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
                _ = sleep_until(deadline) => {
                    if self.session.handle_timeout(Instant::now().into_std()).is_err() {
                        return self.lost_or_done();
                    }
                },
            }
        }
    }

    fn lost_or_done(&self) -> Ended {
        if self.session.state().is_terminal() {
            Ended::Done
        } else {
            Ended::Lost { handshaken: false }
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
                    self.state.send_replace(state);
                    if state.is_connected() {
                        if let Some(ready) = self.ready.take() {
                            let info =
                                (self.session.session_id(), self.session.negotiated_timeout());
                            let _ = ready.send(Ok(info));
                        }
                    }
                }
            }
        }
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}
