//! [`Client`]: the handle users hold, its builder, and the typed operations.
//!
//! The operations are in files beside this one, by family: reads, writes, multi (transactions),
//! watches, auth and config; this file holds the handle, its session accessors, and the
//! request path they all share (path checks, send, reply).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::{broadcast, mpsc, oneshot, watch};
use zk_proto::{Request, Response, validate_path};

use crate::Error;
use crate::chroot::Chroot;
use crate::command::Command;
use crate::command::WatchSink;
use crate::io::Link;
use crate::reply::Replies;
use crate::session::{SessionState, WatcherId};
use crate::watcher::OneshotWatcher;

mod auth;
mod builder;
mod config;
mod multi;
mod ops;
mod reads;
mod state_stream;
mod watches;
mod writes;

pub use builder::{
    CONFIG_NODE, ClientBuilder, DEFAULT_CLOSE_TIMEOUT, DEFAULT_MAX_DATA_LEN,
    DEFAULT_MAX_REQUEST_LEN,
};
pub use ops::{CreateOptions, Op, OpResult, ReadOp, ReadResult};
pub use state_stream::StateStream;

/// The error for a call after the session task stopped, from the state it ended in.
fn ended(state: SessionState) -> Error {
    if state.is_terminal() {
        state.error()
    } else {
        Error::Closed
    }
}

#[derive(Debug)]
pub(super) struct Inner {
    pub(super) id: ClientId,
    pub(super) tx: mpsc::UnboundedSender<Command>,
    pub(super) state: watch::Receiver<SessionState>,
    pub(super) states: broadcast::Sender<SessionState>,
    pub(super) chroot: Arc<Chroot>,
    pub(super) max_data_len: usize,
    pub(super) link: Arc<Mutex<Link>>,
    pub(super) next_watcher: AtomicU64,
    /// Where the session task's replies reach callers.
    pub(super) replies: Arc<Replies<Result<Response, Error>>>,
    /// The runtime the session task runs on.
    pub(super) runtime: tokio::runtime::Handle,
}

/// A ZooKeeper session shared by any number of tasks: clone it freely. Requests from all
/// clones are pipelined on one connection; each reply reaches its own caller, and dropping a
/// caller's future does not disturb the others.
///
/// Dropping the last clone closes the session in the background (`closeSession`, so its
/// ephemeral nodes go at once); [`Client::close`] does it and waits.
///
/// # Examples
///
/// ```no_run
/// use zk_client::{Client, CreateOptions, Error};
/// use zk_proto::CreateMode;
///
/// # async fn f() -> Result<(), Error> {
/// let client = Client::builder()
///     .hosts("127.0.0.1:2181,127.0.0.1:2182/app")
///     .session_timeout(std::time::Duration::from_secs(10))
///     .connect()
///     .await?;
/// let path = client.create("/job-", b"x", &CreateOptions::new(CreateMode::EphemeralSequential)).await?;
/// let (data, stat) = client.get_data(&path).await?;
/// assert_eq!(&data[..], b"x");
/// match client.delete("/missing", None).await {
///     Err(Error::NoNode) => {}
///     other => panic!("{other:?}"),
/// }
/// client.close().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

/// A client's identity: the same for all clones of one [`Client`], different for every other
/// client this process connects (a counter, never reused). For state kept beside a client, as
/// a map keyed by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClientId(u64);

impl ClientId {
    /// The next unused identity.
    pub(super) fn next() -> ClientId {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        ClientId(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

fn unexpected(_: Response) -> Error {
    Error::Protocol(crate::ProtocolError::Unexpected(
        "reply does not fit the request",
    ))
}

impl Client {
    /// A builder with default settings and no hosts.
    pub fn builder() -> ClientBuilder {
        ClientBuilder::new()
    }

    /// This client's identity, shared by its clones.
    pub fn id(&self) -> ClientId {
        self.inner.id
    }

    /// The runtime the session's task runs on (the one [`ClientBuilder::connect`] was awaited
    /// on): work that must outlive its caller's runtime (a background release, an abandoned
    /// request's cleanup) can be spawned there, and runs as long as the session can serve it.
    pub fn runtime(&self) -> &tokio::runtime::Handle {
        &self.inner.runtime
    }

    /// The server this session is connected to now, if any.
    pub fn server_addr(&self) -> Option<SocketAddr> {
        self.link(|l| l.server)
    }

    /// The session's id.
    pub fn session_id(&self) -> i64 {
        self.link(|l| l.session_id)
    }

    /// The session timeout the server granted.
    pub fn session_timeout(&self) -> Duration {
        self.link(|l| l.timeout)
    }

    /// The session's password: with [`Client::session_id`], what another client needs to
    /// resume this session ([`ClientBuilder::resume_session`]). Keep it secret.
    pub fn session_password(&self) -> Bytes {
        self.link(|l| l.passwd.clone())
    }

    /// Reads what `read` needs of the link under its lock (the getters are on every lock
    /// cycle's path: nothing else of it is copied).
    fn link<T>(&self, read: impl FnOnce(&Link) -> T) -> T {
        match self.inner.link.lock() {
            Ok(link) => read(&link),
            Err(_) => read(&Link::default()),
        }
    }

    /// `None` while a server is connected; otherwise how long none has been, the servers,
    /// and how the latest attempts to reach them failed. A lock's acquire whose deadline
    /// passes in an outage reports this, so that "busy" and "no server" read differently.
    pub fn outage(&self) -> Option<crate::Outage> {
        if self.state().is_connected() {
            return None;
        }
        let now = tokio::time::Instant::now();
        // Not connected, and the task has not recorded the loss yet (or the session ended):
        // an outage of no measured length.
        Some(self.link(|l| {
            l.down.at(now).unwrap_or_else(|| crate::Outage {
                lasted: Duration::ZERO,
                servers: l.down.servers.clone(),
                attempts: Vec::new(),
            })
        }))
    }

    /// The session's current state.
    pub fn state(&self) -> SessionState {
        *self.inner.state.borrow()
    }

    /// Every state change from now on, in order (see [`StateStream`]).
    pub fn state_stream(&self) -> StateStream {
        StateStream {
            rx: self.inner.states.subscribe(),
        }
    }

    /// A receiver of the session's states: `borrow()` for the current one, `changed().await`
    /// for the next.
    pub fn state_watch(&self) -> watch::Receiver<SessionState> {
        self.inner.state.clone()
    }

    fn path(&self, path: &str, sequential: bool) -> Result<String, Error> {
        self.owned_path(path.to_owned(), sequential)
    }

    /// The server path of client path `path`, validated, reusing its allocation.
    fn owned_path(&self, path: String, sequential: bool) -> Result<String, Error> {
        validate_path(&path, sequential)?;
        self.inner
            .chroot
            .to_server_owned(path)
            .ok_or(Error::InvalidArgument("path outside the chroot"))
    }

    fn client_path(&self, server_path: String) -> String {
        self.inner.chroot.to_client(server_path)
    }

    fn check_data(&self, data: &[u8]) -> Result<(), Error> {
        if data.len() > self.inner.max_data_len {
            return Err(Error::TooLarge {
                len: data.len(),
                max: self.inner.max_data_len,
            });
        }
        Ok(())
    }

    async fn call(
        &self,
        request: Request,
        watch: Option<(WatcherId, WatchSink)>,
    ) -> Result<Response, Error> {
        self.send(request, watch).await
    }

    /// Sends `request` now (not when the returned future is first polled) and returns the
    /// future of its reply, which borrows nothing from `self`.
    fn send(
        &self,
        request: Request,
        watch: Option<(WatcherId, WatchSink)>,
    ) -> impl Future<Output = Result<Response, Error>> + Send + 'static {
        let (reply, rx) = self.inner.replies.open();
        let command = Command::Submit {
            request,
            reply: crate::command::ReplyTo::Caller(reply),
            watch,
        };
        let sent = self.inner.tx.send(command).is_ok();
        let state = self.inner.state.clone();
        async move {
            if !sent {
                return Err(ended(*state.borrow()));
            }
            rx.await.unwrap_or_else(|| Err(ended(*state.borrow())))
        }
    }

    fn new_watcher(&self) -> WatcherId {
        WatcherId(self.inner.next_watcher.fetch_add(1, Ordering::Relaxed))
    }

    async fn call_watching(
        &self,
        request: Request,
        path: String,
    ) -> Result<(Response, OneshotWatcher), Error> {
        let id = self.new_watcher();
        let (tx, rx) = oneshot::channel();
        let watcher = OneshotWatcher::new(rx, self.inner.tx.downgrade(), path, id);
        let response = self
            .call(request, Some((id, WatchSink::Oneshot(tx))))
            .await?;
        Ok((response, watcher))
    }

    /// Closes the client, always: every clone fails with [`Error::Closed`] afterwards, and
    /// every watcher gets its last event. The session is closed on the server (its ephemeral
    /// nodes go at once) when a server confirms within the close timeout
    /// ([`ClientBuilder::close_timeout`], reconnecting if needed); otherwise the client is
    /// closed here and the ensemble expires the session after its timeout. Dropping the last
    /// handle does the same in the background.
    pub async fn close(&self) -> Result<(), Error> {
        let (reply, done) = oneshot::channel();
        if self.inner.tx.send(Command::Close { reply }).is_err() {
            return Ok(()); // the session task is gone: closed already
        }
        done.await.unwrap_or(Ok(()))
    }
}
