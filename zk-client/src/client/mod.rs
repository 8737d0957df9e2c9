//! [`Client`]: the handle users hold, its builder, and the typed operations.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::{broadcast, mpsc, oneshot, watch};
use zk_proto::records::*;
use zk_proto::{
    AddWatchMode, CreateMode, MultiOp, MultiRequest, MultiResult, Request, Response, WatcherType,
    validate_path,
};

use crate::chroot::Chroot;
use crate::command::Command;
use crate::command::WatchSink;
use crate::io::Link;
use crate::reply::Replies;
use crate::session::{SessionState, WatcherId};
use crate::watcher::{OneshotWatcher, PersistentWatcher};
use crate::{ConnectString, Error};

mod builder;
mod ops;
mod state_stream;

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

    fn create_request(
        &self,
        path: String,
        data: &[u8],
        opts: &CreateOptions,
        with_stat: bool,
    ) -> Result<Request, Error> {
        let server_path = self.owned_path(path, opts.mode.is_sequential())?;
        self.check_data(data)?;
        if opts.acl.is_empty() {
            return Err(Error::InvalidArgument("empty ACL"));
        }
        let data = Some(Bytes::copy_from_slice(data));
        let acl = opts.acl.clone();
        match (opts.mode.is_ttl(), opts.ttl) {
            (true, Some(ttl)) => {
                let ttl = i64::try_from(ttl.as_millis())
                    .map_err(|_| Error::InvalidArgument("TTL too long"))?;
                Ok(Request::CreateTtl(CreateTtlRequest {
                    path: server_path,
                    data,
                    acl,
                    mode: opts.mode,
                    ttl,
                }))
            }
            (true, None) => Err(Error::InvalidArgument("a TTL mode needs a TTL")),
            (false, Some(_)) => Err(Error::InvalidArgument("a TTL needs a TTL mode")),
            (false, None) => {
                let body = CreateRequest {
                    path: server_path,
                    data,
                    acl,
                    mode: opts.mode,
                };
                Ok(match (opts.mode, with_stat) {
                    (CreateMode::Container, _) => Request::CreateContainer(body),
                    (_, true) => Request::Create2(body),
                    (_, false) => Request::Create(body),
                })
            }
        }
    }

    /// Creates a node and returns its path (with the sequence number for sequential modes).
    /// Container and TTL nodes are created with the opcodes they need.
    pub fn create<'a>(
        &'a self,
        path: impl Into<String>,
        data: &'a [u8],
        options: &'a CreateOptions,
    ) -> impl Future<Output = Result<String, Error>> + Send + 'a {
        self.create_owned(path.into(), data, options)
    }

    async fn create_owned(
        &self,
        path: String,
        data: &[u8],
        options: &CreateOptions,
    ) -> Result<String, Error> {
        match self
            .call(self.create_request(path, data, options, false)?, None)
            .await?
        {
            Response::Create(r) => Ok(self.client_path(r.path)),
            Response::Create2(r) => Ok(self.client_path(r.path)),
            other => Err(unexpected(other)),
        }
    }

    /// Creates a node and returns its path and `Stat` (`create2`).
    pub fn create_with_stat<'a>(
        &'a self,
        path: impl Into<String>,
        data: &'a [u8],
        options: &'a CreateOptions,
    ) -> impl Future<Output = Result<(String, Stat), Error>> + Send + 'a {
        self.create_with_stat_owned(path.into(), data, options)
    }

    async fn create_with_stat_owned(
        &self,
        path: String,
        data: &[u8],
        options: &CreateOptions,
    ) -> Result<(String, Stat), Error> {
        match self
            .call(self.create_request(path, data, options, true)?, None)
            .await?
        {
            Response::Create2(r) => Ok((self.client_path(r.path), r.stat)),
            other => Err(unexpected(other)),
        }
    }

    /// Deletes a node, only at `version` if given.
    ///
    /// The request is sent when `delete` is called, not when the future is first polled, so
    /// it keeps its place in the session's order even if the future is spawned or polled
    /// later (a guard's drop uses this to release before the next acquire).
    pub fn delete(
        &self,
        path: impl Into<String>,
        version: Option<i32>,
    ) -> impl Future<Output = Result<(), Error>> + Send + 'static {
        let sent = self.owned_path(path.into(), false).map(|path| {
            let request = Request::Delete(DeleteRequest {
                path,
                version: version.unwrap_or(-1),
            });
            self.send(request, None)
        });
        async move { sent?.await.map(drop) }
    }

    /// The node's `Stat`, or `None` if it does not exist.
    pub fn exists<'a>(
        &'a self,
        path: impl Into<String>,
    ) -> impl Future<Output = Result<Option<Stat>, Error>> + Send + 'a {
        self.exists_owned(path.into())
    }

    async fn exists_owned(&self, path: String) -> Result<Option<Stat>, Error> {
        let request = Request::Exists(ExistsRequest {
            path: self.owned_path(path, false)?,
            watch: false,
        });
        match self.call(request, None).await {
            Ok(Response::Exists(r)) => Ok(Some(r.stat)),
            Ok(other) => Err(unexpected(other)),
            Err(Error::NoNode) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Like [`Client::exists`], leaving a watch: it fires when the node is created (if it did
    /// not exist), changes or is deleted (if it did).
    pub fn exists_and_watch<'a>(
        &'a self,
        path: impl Into<String>,
    ) -> impl Future<Output = Result<(Option<Stat>, OneshotWatcher), Error>> + Send + 'a {
        self.exists_and_watch_owned(path.into())
    }

    async fn exists_and_watch_owned(
        &self,
        path: String,
    ) -> Result<(Option<Stat>, OneshotWatcher), Error> {
        let request = Request::Exists(ExistsRequest {
            path: self.owned_path(path.clone(), false)?,
            watch: true,
        });
        let id = self.new_watcher();
        let (tx, rx) = oneshot::channel();
        let watcher = OneshotWatcher::new(rx, self.inner.tx.downgrade(), path, id);
        match self.call(request, Some((id, WatchSink::Oneshot(tx)))).await {
            Ok(Response::Exists(r)) => Ok((Some(r.stat), watcher)),
            Ok(other) => Err(unexpected(other)),
            Err(Error::NoNode) => Ok((None, watcher)),
            Err(e) => Err(e),
        }
    }

    /// The node's data (empty if it was created with none) and `Stat`.
    pub fn get_data<'a>(
        &'a self,
        path: impl Into<String>,
    ) -> impl Future<Output = Result<(Bytes, Stat), Error>> + Send + 'a {
        self.get_data_owned(path.into())
    }

    async fn get_data_owned(&self, path: String) -> Result<(Bytes, Stat), Error> {
        let request = Request::GetData(GetDataRequest {
            path: self.owned_path(path, false)?,
            watch: false,
        });
        match self.call(request, None).await? {
            Response::GetData(r) => Ok((r.data.unwrap_or_default(), r.stat)),
            other => Err(unexpected(other)),
        }
    }

    /// Like [`Client::get_data`], leaving a data watch (fires on data change or delete).
    pub fn get_data_and_watch<'a>(
        &'a self,
        path: impl Into<String>,
    ) -> impl Future<Output = Result<(Bytes, Stat, OneshotWatcher), Error>> + Send + 'a {
        self.get_data_and_watch_owned(path.into())
    }

    async fn get_data_and_watch_owned(
        &self,
        path: String,
    ) -> Result<(Bytes, Stat, OneshotWatcher), Error> {
        let request = Request::GetData(GetDataRequest {
            path: self.owned_path(path.clone(), false)?,
            watch: true,
        });
        match self.call_watching(request, path).await {
            Ok((Response::GetData(r), w)) => Ok((r.data.unwrap_or_default(), r.stat, w)),
            Ok((other, _)) => Err(unexpected(other)),
            Err(e) => Err(e),
        }
    }

    /// [`get_data_and_watch`](Self::get_data_and_watch) without a task, channel or future per
    /// watch: `handler` takes the reply and then the watch's event, in the session's own task
    /// (see [`WatchHandler`](crate::WatchHandler)). Sent before this returns; returns the
    /// watcher's id, with which [`forget_watch`](Self::forget_watch) ends it.
    ///
    /// # Errors
    /// An invalid path, or a session task already gone (the handler is then not called).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use std::sync::Arc;
    /// use zk_client::{Bytes, Client, Error, Stat, WatchHandler, WatchedEvent};
    ///
    /// struct Gone;
    /// impl WatchHandler for Gone {
    ///     fn reply(&self, result: Result<(Bytes, Stat), Error>) {
    ///         if let Err(Error::NoNode) = result {
    ///             println!("already gone");
    ///         }
    ///     }
    ///     fn event(&self, event: WatchedEvent) {
    ///         println!("{:?} on {}", event.event_type, event.path);
    ///     }
    /// }
    ///
    /// # fn f(client: Client) -> Result<(), Error> {
    /// let id = client.get_data_and_watch_with("/app/config", Arc::new(Gone))?;
    /// // ... later, no longer interested:
    /// client.forget_watch("/app/config", id);
    /// # Ok(()) }
    /// ```
    pub fn get_data_and_watch_with(
        &self,
        path: &str,
        handler: Arc<dyn crate::WatchHandler>,
    ) -> Result<WatcherId, Error> {
        let request = Request::GetData(GetDataRequest {
            path: self.path(path, false)?,
            watch: true,
        });
        let id = self.new_watcher();
        let handler = crate::command::HandlerRef(handler);
        let command = Command::Submit {
            request,
            reply: crate::command::ReplyTo::Handler(handler.clone()),
            watch: Some((id, WatchSink::Handler(handler))),
        };
        self.inner
            .tx
            .send(command)
            .map_err(|_| ended(*self.inner.state.borrow()))?;
        Ok(id)
    }

    /// Ends watcher `id` on `path` (set by
    /// [`get_data_and_watch_with`](Self::get_data_and_watch_with)): its handler is not called
    /// again. A one-shot watch stays on the server until it fires; its event then reaches
    /// nobody. Does nothing for a watcher already ended.
    pub fn forget_watch(&self, path: &str, id: WatcherId) {
        let _ = self.inner.tx.send(Command::ForgetWatch {
            path: path.to_owned(),
            id,
        });
    }

    /// Sets the node's data, only at `version` if given; returns the new `Stat`.
    pub fn set_data<'a>(
        &'a self,
        path: impl Into<String>,
        data: &'a [u8],
        version: Option<i32>,
    ) -> impl Future<Output = Result<Stat, Error>> + Send + 'a {
        self.set_data_owned(path.into(), data, version)
    }

    async fn set_data_owned(
        &self,
        path: String,
        data: &[u8],
        version: Option<i32>,
    ) -> Result<Stat, Error> {
        self.check_data(data)?;
        let request = Request::SetData(SetDataRequest {
            path: self.owned_path(path, false)?,
            data: Some(Bytes::copy_from_slice(data)),
            version: version.unwrap_or(-1),
        });
        match self.call(request, None).await? {
            Response::SetData(r) => Ok(r.stat),
            other => Err(unexpected(other)),
        }
    }

    /// The node's children's names, in no particular order.
    pub fn get_children<'a>(
        &'a self,
        path: impl Into<String>,
    ) -> impl Future<Output = Result<Vec<String>, Error>> + Send + 'a {
        self.get_children_owned(path.into())
    }

    async fn get_children_owned(&self, path: String) -> Result<Vec<String>, Error> {
        let request = Request::GetChildren(GetChildrenRequest {
            path: self.owned_path(path, false)?,
            watch: false,
        });
        match self.call(request, None).await? {
            Response::GetChildren(r) => Ok(r.children),
            other => Err(unexpected(other)),
        }
    }

    /// The node's children and its `Stat` (`getChildren2`).
    pub fn get_children_with_stat<'a>(
        &'a self,
        path: impl Into<String>,
    ) -> impl Future<Output = Result<(Vec<String>, Stat), Error>> + Send + 'a {
        self.get_children_with_stat_owned(path.into())
    }

    async fn get_children_with_stat_owned(
        &self,
        path: String,
    ) -> Result<(Vec<String>, Stat), Error> {
        let request = Request::GetChildren2(GetChildren2Request {
            path: self.owned_path(path, false)?,
            watch: false,
        });
        match self.call(request, None).await? {
            Response::GetChildren2(r) => Ok((r.children, r.stat)),
            other => Err(unexpected(other)),
        }
    }

    /// Like [`Client::get_children`], leaving a child watch (fires when a child is added or
    /// removed, or the node is deleted).
    pub fn get_children_and_watch<'a>(
        &'a self,
        path: impl Into<String>,
    ) -> impl Future<Output = Result<(Vec<String>, OneshotWatcher), Error>> + Send + 'a {
        self.get_children_and_watch_owned(path.into())
    }

    async fn get_children_and_watch_owned(
        &self,
        path: String,
    ) -> Result<(Vec<String>, OneshotWatcher), Error> {
        let request = Request::GetChildren(GetChildrenRequest {
            path: self.owned_path(path.clone(), false)?,
            watch: true,
        });
        match self.call_watching(request, path).await {
            Ok((Response::GetChildren(r), w)) => Ok((r.children, w)),
            Ok((other, _)) => Err(unexpected(other)),
            Err(e) => Err(e),
        }
    }

    /// The node's ACL and `Stat`.
    pub async fn get_acl(&self, path: &str) -> Result<(Vec<Acl>, Stat), Error> {
        let request = Request::GetAcl(GetAclRequest {
            path: self.path(path, false)?,
        });
        match self.call(request, None).await? {
            Response::GetAcl(r) => Ok((r.acl, r.stat)),
            other => Err(unexpected(other)),
        }
    }

    /// Sets the node's ACL, only at ACL version `version` if given; returns the new `Stat`.
    pub async fn set_acl(
        &self,
        path: &str,
        acl: Vec<Acl>,
        version: Option<i32>,
    ) -> Result<Stat, Error> {
        if acl.is_empty() {
            return Err(Error::InvalidArgument("empty ACL"));
        }
        let request = Request::SetAcl(SetAclRequest {
            path: self.path(path, false)?,
            acl,
            version: version.unwrap_or(-1),
        });
        match self.call(request, None).await? {
            Response::SetAcl(r) => Ok(r.stat),
            other => Err(unexpected(other)),
        }
    }

    /// Waits until the server this session is connected to has caught up with the leader, so
    /// that a read after it sees every write committed before it.
    pub fn sync<'a>(
        &'a self,
        path: impl Into<String>,
    ) -> impl Future<Output = Result<(), Error>> + Send + 'a {
        self.sync_owned(path.into())
    }

    async fn sync_owned(&self, path: String) -> Result<(), Error> {
        let request = Request::Sync(SyncRequest {
            path: self.owned_path(path, false)?,
        });
        self.call(request, None).await.map(drop)
    }

    fn multi_op(&self, op: &Op) -> Result<MultiOp, Error> {
        Ok(match op {
            Op::Create {
                path,
                data,
                options,
            } => match self.create_request(path.clone(), data, options, false)? {
                Request::Create2(r) => MultiOp::Create2(r),
                Request::CreateContainer(r) => MultiOp::CreateContainer(r),
                Request::CreateTtl(r) => MultiOp::CreateTtl(r),
                Request::Create(r) => MultiOp::Create(r),
                _ => return Err(Error::InvalidArgument("not a create")),
            },
            Op::Delete { path, version } => MultiOp::Delete(DeleteRequest {
                path: self.path(path, false)?,
                version: version.unwrap_or(-1),
            }),
            Op::SetData {
                path,
                data,
                version,
            } => {
                self.check_data(data)?;
                MultiOp::SetData(SetDataRequest {
                    path: self.path(path, false)?,
                    data: Some(data.clone()),
                    version: version.unwrap_or(-1),
                })
            }
            Op::Check { path, version } => MultiOp::Check(CheckVersionRequest {
                path: self.path(path, false)?,
                version: version.unwrap_or(-1),
            }),
        })
    }

    /// Applies `ops` as one transaction: all of them or none. On failure the error is
    /// [`Error::MultiFailed`] naming the first op that failed and why.
    pub async fn multi(&self, ops: &[Op]) -> Result<Vec<OpResult>, Error> {
        let ops = ops
            .iter()
            .map(|op| self.multi_op(op))
            .collect::<Result<Vec<_>, _>>()?;
        let response = match self
            .call(Request::Multi(MultiRequest { ops }), None)
            .await?
        {
            Response::Multi(r) => r,
            other => return Err(unexpected(other)),
        };
        if let Some((index, code)) = response.first_error() {
            let source = Error::from_code(code).unwrap_or(Error::Server(code));
            return Err(Error::MultiFailed {
                index,
                source: Box::new(source),
            });
        }
        response
            .results
            .into_iter()
            .map(|r| match r {
                MultiResult::Create(c) => Ok(OpResult::Created(self.client_path(c.path), None)),
                MultiResult::Create2(c) => {
                    Ok(OpResult::Created(self.client_path(c.path), Some(c.stat)))
                }
                MultiResult::Delete => Ok(OpResult::Deleted),
                MultiResult::SetData(s) => Ok(OpResult::DataSet(s.stat)),
                MultiResult::Check => Ok(OpResult::Checked),
                _ => Err(Error::Protocol(crate::ProtocolError::Unexpected(
                    "read result in a transaction",
                ))),
            })
            .collect()
    }

    /// Runs several reads in one round trip; each succeeds or fails on its own.
    pub async fn multi_read(
        &self,
        ops: &[ReadOp],
    ) -> Result<Vec<Result<ReadResult, Error>>, Error> {
        if ops.is_empty() {
            return Ok(Vec::new());
        }
        let ops = ops
            .iter()
            .map(|op| {
                Ok(match op {
                    ReadOp::GetChildren(p) => MultiOp::GetChildren(GetChildrenRequest {
                        path: self.path(p, false)?,
                        watch: false,
                    }),
                    ReadOp::GetData(p) => MultiOp::GetData(GetDataRequest {
                        path: self.path(p, false)?,
                        watch: false,
                    }),
                })
            })
            .collect::<Result<Vec<_>, Error>>()?;
        match self
            .call(Request::MultiRead(MultiRequest { ops }), None)
            .await?
        {
            Response::Multi(r) => Ok(r
                .results
                .into_iter()
                .map(|r| match r {
                    MultiResult::GetChildren(c) => Ok(ReadResult::Children(c.children)),
                    MultiResult::GetData(d) => {
                        Ok(ReadResult::Data(d.data.unwrap_or_default(), d.stat))
                    }
                    MultiResult::Error(code) => {
                        Err(Error::from_code(code).unwrap_or(Error::Server(code)))
                    }
                    _ => Err(Error::Protocol(crate::ProtocolError::Unexpected(
                        "write result in a read",
                    ))),
                })
                .collect()),
            other => Err(unexpected(other)),
        }
    }

    /// The paths of this session's ephemeral nodes under `prefix` (`/` for all).
    pub async fn get_ephemerals(&self, prefix: &str) -> Result<Vec<String>, Error> {
        let request = Request::GetEphemerals(GetEphemeralsRequest {
            prefix_path: self.path(prefix, false)?,
        });
        match self.call(request, None).await? {
            Response::GetEphemerals(r) => Ok(r
                .ephemerals
                .into_iter()
                .map(|p| self.client_path(p))
                .collect()),
            other => Err(unexpected(other)),
        }
    }

    /// The number of descendants of the node.
    pub async fn get_all_children_number(&self, path: &str) -> Result<i32, Error> {
        let request = Request::GetAllChildrenNumber(GetAllChildrenNumberRequest {
            path: self.path(path, false)?,
        });
        match self.call(request, None).await? {
            Response::GetAllChildrenNumber(r) => Ok(r.total_number),
            other => Err(unexpected(other)),
        }
    }

    /// Adds an identity to the session (e.g. `("digest", b"user:password")`). Wrong
    /// credentials end the session with [`Error::AuthFailed`].
    pub async fn add_auth(&self, scheme: &str, credentials: impl Into<Bytes>) -> Result<(), Error> {
        let request = Request::Auth(AuthPacket {
            auth_type: 0,
            scheme: scheme.to_owned(),
            auth: Some(credentials.into()),
        });
        self.call(request, None).await.map(drop)
    }

    /// The session's identities (ZooKeeper 3.9+; 3.8 answers [`Error::Unimplemented`]).
    pub async fn who_am_i(&self) -> Result<Vec<ClientInfo>, Error> {
        match self.call(Request::WhoAmI, None).await? {
            Response::WhoAmI(r) => Ok(r.client_info),
            other => Err(unexpected(other)),
        }
    }

    /// Adds a persistent (or persistent-recursive) watch on `path`, which need not exist.
    pub async fn add_watch(
        &self,
        path: &str,
        mode: AddWatchMode,
    ) -> Result<PersistentWatcher, Error> {
        let request = Request::AddWatch(AddWatchRequest {
            path: self.path(path, false)?,
            mode,
        });
        let id = self.new_watcher();
        let (tx, rx) = mpsc::unbounded_channel();
        let watcher = PersistentWatcher::new(rx, self.inner.tx.downgrade(), path.to_owned(), id);
        self.call(request, Some((id, WatchSink::Stream(tx))))
            .await?;
        Ok(watcher)
    }

    /// Removes this session's watches of `which` kind on `path`, on the server and here:
    /// each removed watcher gets a last `*WatchRemoved` event. [`Error::NoWatcher`] if there
    /// was none.
    ///
    /// ZooKeeper 3.8 knows `Children`, `Data` and `Any`; `Any` removes persistent watches
    /// too. `Persistent` and `PersistentRecursive` need 3.9 (3.8 answers
    /// `Server(MarshallingError)`).
    pub async fn remove_watches(&self, path: &str, which: WatcherType) -> Result<(), Error> {
        let request = Request::RemoveWatches(RemoveWatchesRequest {
            path: self.path(path, false)?,
            watcher_type: which,
        });
        self.call(request, None).await.map(drop)
    }

    /// Replaces the list of servers, keeping the session (Java's `updateServerList`): for an
    /// ensemble that grew, shrank or moved. `hosts` is a connect string; its chroot, if any,
    /// must be the client's. If the server of the current connection is no longer listed,
    /// the client moves to one that is; otherwise it stays where it is.
    pub fn update_server_list(&self, hosts: &str) -> Result<(), Error> {
        let cs = ConnectString::parse(hosts)?;
        if cs.chroot.is_some() && self.inner.chroot.to_server("/") != cs.chroot {
            return Err(Error::InvalidHosts {
                input: hosts.to_owned(),
                reason: "the chroot cannot change",
            });
        }
        self.inner
            .tx
            .send(Command::UpdateHosts { hosts: cs.hosts })
            .map_err(|_| ended(self.state()))
    }

    /// The ensemble's dynamic configuration, as `/zookeeper/config` holds it (`server.N=...`
    /// lines and `version=...`; empty on a standalone server), and its `Stat`. Never under
    /// the chroot (as the Java client's `getConfig`).
    pub async fn get_config(&self) -> Result<(Bytes, Stat), Error> {
        let request = Request::GetData(GetDataRequest {
            path: CONFIG_NODE.to_owned(),
            watch: false,
        });
        match self.call(request, None).await? {
            Response::GetData(r) => Ok((r.data.unwrap_or_default(), r.stat)),
            other => Err(unexpected(other)),
        }
    }

    /// Like [`Client::get_config`], leaving a watch that fires when the configuration
    /// changes (a `reconfig`). Without a chroot: with one, the watcher is kept until it fires
    /// or the session ends, even if dropped.
    pub async fn get_config_and_watch(&self) -> Result<(Bytes, Stat, OneshotWatcher), Error> {
        let request = Request::GetData(GetDataRequest {
            path: CONFIG_NODE.to_owned(),
            watch: true,
        });
        match self.call_watching(request, CONFIG_NODE.to_owned()).await {
            Ok((Response::GetData(r), w)) => Ok((r.data.unwrap_or_default(), r.stat, w)),
            Ok((other, _)) => Err(unexpected(other)),
            Err(e) => Err(e),
        }
    }

    /// Changes the ensemble's membership (ZooKeeper's `reconfig`; the servers need
    /// `reconfigEnabled=true`, and the session must be allowed to: a super user, or servers
    /// with `zookeeper.skipACL`). Incremental: `joining` servers (`server.N=host:peer:election;
    /// client`, comma-separated) and `leaving` server ids (`"3,4"`); or the whole
    /// `new_members`. `from_config`: the configuration version it must replace (`-1`/`None`:
    /// any). Returns the new configuration and its `Stat`, as [`Client::get_config`].
    pub async fn reconfig(
        &self,
        joining: Option<&str>,
        leaving: Option<&str>,
        new_members: Option<&str>,
        from_config: Option<i64>,
    ) -> Result<(Bytes, Stat), Error> {
        if joining.is_none() && leaving.is_none() && new_members.is_none() {
            return Err(Error::InvalidArgument(
                "reconfig needs joining, leaving or new members",
            ));
        }
        let request = Request::Reconfig(ReconfigRequest {
            joining_servers: joining.map(str::to_owned),
            leaving_servers: leaving.map(str::to_owned),
            new_members: new_members.map(str::to_owned),
            cur_config_id: from_config.unwrap_or(-1),
        });
        match self.call(request, None).await? {
            Response::GetData(r) => Ok((r.data.unwrap_or_default(), r.stat)),
            other => Err(unexpected(other)),
        }
    }

    /// Whether the server holds this session's watches of `which` kind on `path`
    /// ([`Error::NoWatcher`] if not).
    pub async fn check_watches(&self, path: &str, which: WatcherType) -> Result<(), Error> {
        let request = Request::CheckWatches(CheckWatchesRequest {
            path: self.path(path, false)?,
            watcher_type: which,
        });
        self.call(request, None).await.map(drop)
    }

    /// Removes this session's watches of `which` kind on `path` here only, without asking the
    /// server (the Java client's `removeWatches` with `local = true`, for when no server can
    /// be reached): each removed watcher gets a last `*WatchRemoved` event, and the server's
    /// watches, if it still has them, fire for nobody. [`Error::NoWatcher`] if there was none.
    pub async fn remove_watches_locally(
        &self,
        path: &str,
        which: WatcherType,
    ) -> Result<(), Error> {
        validate_path(path, false)?;
        let (reply, done) = oneshot::channel();
        let command = Command::RemoveWatchesLocally {
            path: path.to_owned(),
            which,
            reply,
        };
        if self.inner.tx.send(command).is_err() {
            return Err(ended(self.state()));
        }
        done.await.unwrap_or_else(|_| Err(ended(self.state())))
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
