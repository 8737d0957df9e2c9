//! [`Client`]'s reads: exists, data, children, ACL, sync, ephemerals and child counts, each
//! with its watching variant where the server has one.

use std::future::Future;
use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::oneshot;
use zk_proto::records::*;
use zk_proto::{Request, Response};

use super::{Client, ended, unexpected};
use crate::Error;
use crate::command::{Command, WatchSink};
use crate::session::WatcherId;
use crate::watcher::OneshotWatcher;

impl Client {
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
}
