//! [`Command`]: what the handles ([`crate::Client`], the watchers) ask of the session task,
//! and [`WatchSink`], where the task delivers a watcher's events. Both sides use these; neither
//! side's module depends on the other's.

use tokio::sync::{mpsc, oneshot};
use zk_proto::{Request, Response};

use crate::Error;
use crate::reply::ReplySender;
use crate::session::{WatchedEvent, WatcherId};

/// Where the session task delivers a watcher's events.
#[derive(Debug)]
pub(crate) enum WatchSink {
    Oneshot(oneshot::Sender<WatchedEvent>),
    Stream(mpsc::UnboundedSender<WatchedEvent>),
}

/// What a [`crate::Client`] asks of the session task.
#[derive(Debug)]
pub(crate) enum Command {
    /// Send a request; reply on `reply`; if it leaves a watch, deliver to `watch`.
    Submit {
        request: Request,
        reply: ReplySender<Result<Response, Error>>,
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
