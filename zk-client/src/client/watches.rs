//! [`Client`]'s watch management: persistent watches added, watches checked, removed on the
//! server or only here, and a one-shot watch forgotten.

use tokio::sync::{mpsc, oneshot};
use zk_proto::records::*;
use zk_proto::{AddWatchMode, Request, WatcherType, validate_path};

use super::{Client, ended};
use crate::Error;
use crate::command::{Command, WatchSink};
use crate::session::WatcherId;
use crate::watcher::PersistentWatcher;

impl Client {
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
}
