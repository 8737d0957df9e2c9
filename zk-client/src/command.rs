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
    /// A [`WatchHandler`]'s `event`, called in the session task.
    Handler(HandlerRef),
}

impl WatchSink {
    /// Delivers an event of a watcher that stays (a persistent one).
    pub(crate) fn deliver(&self, event: WatchedEvent) {
        match self {
            WatchSink::Oneshot(_) => {}
            WatchSink::Stream(tx) => {
                let _ = tx.send(event);
            }
            WatchSink::Handler(h) => h.0.event(event),
        }
    }

    /// Delivers the watcher's last event and ends it.
    pub(crate) fn finish(self, event: WatchedEvent) {
        match self {
            WatchSink::Oneshot(tx) => {
                let _ = tx.send(event);
            }
            WatchSink::Stream(tx) => {
                let _ = tx.send(event);
            }
            WatchSink::Handler(h) => h.0.event(event),
        }
    }

    /// The session ended with the watcher still waiting: a handler is told so (a channel's
    /// receiver sees its sender dropped).
    pub(crate) fn session_ended(self) {
        if let WatchSink::Handler(h) = self {
            h.0.event(WatchedEvent {
                event_type: zk_proto::EventType::None,
                state: zk_proto::KeeperState::Closed,
                path: String::new(),
            });
        }
    }
}

/// Takes a data watch's reply and its event in the session's own task: a watch with no task,
/// channel or future of its own, for a program that keeps many (one per held lock). Set with
/// [`Client::get_data_and_watch_with`](crate::Client::get_data_and_watch_with).
///
/// Both methods run inside the session task, between its reads of the socket: they must
/// return quickly and never block or wait. Work that waits (another request's reply, a
/// reconnect) goes to a task of its own.
pub trait WatchHandler: Send + Sync + 'static {
    /// The `getData`'s reply: the node's data and `Stat` (the watch is set), or why not: no
    /// watch is set then (`NoNode`; `NotConnected` or `ConnectionLoss`, to be sent again once
    /// connected; the session's end).
    fn reply(&self, result: Result<(bytes::Bytes, zk_proto::records::Stat), Error>);

    /// The watch fired: its one event (`NodeDataChanged`, `NodeDeleted`), also when it was
    /// restored on a new connection; or the session ended first (`EventType::None`, state
    /// `Closed`). Not called once the watch is forgotten
    /// ([`Client::forget_watch`](crate::Client::forget_watch)).
    fn event(&self, event: WatchedEvent);
}

/// A handler, shared between the request's reply and the watch.
#[derive(Clone)]
pub(crate) struct HandlerRef(pub std::sync::Arc<dyn WatchHandler>);

impl std::fmt::Debug for HandlerRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WatchHandler")
    }
}

/// Where a request's reply goes: its caller's future, or a [`WatchHandler`].
#[derive(Debug)]
pub(crate) enum ReplyTo {
    Caller(ReplySender<Result<Response, Error>>),
    Handler(HandlerRef),
}

impl ReplyTo {
    pub(crate) fn send(self, result: Result<Response, Error>) {
        match self {
            ReplyTo::Caller(reply) => reply.send(result),
            ReplyTo::Handler(h) => h.0.reply(match result {
                Ok(Response::GetData(r)) => Ok((r.data.unwrap_or_default(), r.stat)),
                Ok(_) => Err(Error::Protocol(crate::ProtocolError::Unexpected(
                    "reply does not fit the request",
                ))),
                Err(e) => Err(e),
            }),
        }
    }
}

/// What a [`crate::Client`] asks of the session task.
#[derive(Debug)]
pub(crate) enum Command {
    /// Send a request; reply on `reply`; if it leaves a watch, deliver to `watch`.
    Submit {
        request: Request,
        reply: ReplyTo,
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
