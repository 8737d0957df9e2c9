//! Watch handles: [`OneshotWatcher`] and [`PersistentWatcher`].

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::sync::{mpsc, oneshot};
use zk_proto::{EventType, KeeperState};

use crate::command::Command;
use crate::session::{WatchedEvent, WatcherId};

/// Forgets a watcher in the session task when its handle is dropped early. Holds only a weak
/// sender, so a watcher never keeps the session alive.
#[derive(Debug)]
struct Forget {
    tx: mpsc::WeakUnboundedSender<Command>,
    path: String,
    id: WatcherId,
}

impl Forget {
    fn send(&self) {
        if let Some(tx) = self.tx.upgrade() {
            let _ = tx.send(Command::ForgetWatch {
                path: self.path.clone(),
                id: self.id,
            });
        }
    }
}

fn session_gone() -> WatchedEvent {
    WatchedEvent {
        event_type: EventType::None,
        state: KeeperState::Closed,
        path: String::new(),
    }
}

/// A one-shot watch: a future that resolves with the first event on the watched node, or with
/// a session event (`EventType::None`) if the session ends first.
///
/// One registration gets one event; several watchers on the same node each get it. Dropping
/// the watcher before it fires stops its delivery (the server-side watch stays until the node
/// changes).
///
/// # Examples
///
/// ```no_run
/// # async fn f(client: zk_client::Client) -> Result<(), zk_client::Error> {
/// let (data, _stat, watcher) = client.get_data_and_watch("/config").await?;
/// println!("now {data:?}");
/// let event = watcher.await; // NodeDataChanged, NodeDeleted, or the session's end
/// println!("{:?} on {}", event.event_type, event.path);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct OneshotWatcher {
    rx: oneshot::Receiver<WatchedEvent>,
    forget: Option<Forget>,
}

impl OneshotWatcher {
    pub(crate) fn new(
        rx: oneshot::Receiver<WatchedEvent>,
        tx: mpsc::WeakUnboundedSender<Command>,
        path: String,
        id: WatcherId,
    ) -> Self {
        Self {
            rx,
            forget: Some(Forget { tx, path, id }),
        }
    }
}

impl Future for OneshotWatcher {
    type Output = WatchedEvent;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<WatchedEvent> {
        let event = match Pin::new(&mut self.rx).poll(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(Ok(event)) => event,
            Poll::Ready(Err(_)) => session_gone(),
        };
        self.forget = None;
        Poll::Ready(event)
    }
}

impl Drop for OneshotWatcher {
    fn drop(&mut self) {
        if let Some(f) = self.forget.take() {
            f.send();
        }
    }
}

/// A persistent (or persistent-recursive) watch from [`crate::Client::add_watch`]: every event
/// on the node (or subtree), in order, until [`crate::Client::remove_watches`] removes it
/// (its last event is then `PersistentWatchRemoved`) or the session ends.
#[derive(Debug)]
pub struct PersistentWatcher {
    rx: mpsc::UnboundedReceiver<WatchedEvent>,
    forget: Option<Forget>,
}

impl PersistentWatcher {
    pub(crate) fn new(
        rx: mpsc::UnboundedReceiver<WatchedEvent>,
        tx: mpsc::WeakUnboundedSender<Command>,
        path: String,
        id: WatcherId,
    ) -> Self {
        Self {
            rx,
            forget: Some(Forget { tx, path, id }),
        }
    }

    /// The next event; `None` once the watch is removed or the session ended and every event
    /// was taken.
    pub async fn next(&mut self) -> Option<WatchedEvent> {
        let event = self.rx.recv().await;
        if event.is_none() {
            self.forget = None;
        }
        event
    }
}

impl Drop for PersistentWatcher {
    fn drop(&mut self) {
        if let Some(f) = self.forget.take() {
            f.send();
        }
    }
}
