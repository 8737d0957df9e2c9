//! The watch a hold keeps on its own node: how a guard learns that its node is gone while its
//! session lives (deleted by another client or an operator, or missing after a reconnect,
//! which ZooKeeper reports on the restored watch), and how a revocable holder sees a revoke.
//!
//! One data watch per hold (`getData` with a watch on our node; never `exists`, which would
//! leave a creation watch behind on a node already gone), sent when the hold begins and
//! forgotten when it ends. Its reply and its event are taken in the session's own task by a
//! [`WatchHandler`]: a held lock keeps no task, channel or future for it (a short task sends
//! the read, and one waits through an outage for a read the lost connection cut short). Its
//! request is not awaited by the acquire: no round trip is added, at most one read per hold
//! (none for a hold released before the read's task ran), no write. When its
//! reply or its event shows the node gone, [`NodeLife`] records it for every guard of the
//! node (a cohort's local holders share one), and wakes whoever waits in `lost()`.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use tokio::sync::Notify;
use zk_client::{
    Bytes, Client, EventType, SessionState, Stat, WatchHandler, WatchedEvent, WatcherId,
};

use crate::Loss;
use crate::layer::driver::Acquired;
use crate::revoke::{REVOKE_MESSAGE, RevocationListener};

/// What a hold knows of its node beyond its session: whether the node was seen gone (its
/// watch fired `NodeDeleted`, a read of it found none, or a fenced write's check was
/// refused). Once gone, it stays gone: a lock node's path is never made again.
///
/// It is also the watch's handler (one allocation per hold for both): the session task
/// calls it with the read's reply and the watch's event.
#[derive(Debug)]
pub struct NodeLife {
    gone: AtomicBool,
    notify: Notify,
    /// The watch that tells it (none with the `NoNodeWatch` plant).
    watch: Option<Watched>,
    me: Weak<NodeLife>,
}

impl NodeLife {
    /// Records that the node is gone, and wakes every `lost()` waiting.
    pub fn mark_gone(&self) {
        if !self.gone.swap(true, Ordering::AcqRel) {
            self.notify.notify_waiters();
        }
    }

    /// Whether the node was seen gone.
    pub fn is_gone(&self) -> bool {
        self.gone.load(Ordering::Acquire)
    }

    /// Resolves once the node is seen gone (at once if it already was).
    pub async fn gone(&self) {
        let notified = self.notify.notified();
        tokio::pin!(notified);
        // Registered before the flag is read, so a mark in between is not missed.
        notified.as_mut().enable();
        if self.is_gone() {
            return;
        }
        notified.await;
    }

    /// Whether a hold of `node`, on `client`, is surely still ours as far as this process
    /// knows: its session is connected to a read-write server and its node was not seen gone.
    pub fn is_valid(&self, client: &Client, node: &Acquired) -> bool {
        client.state() == SessionState::Connected
            && client.session_id() == node.session_id
            && !self.is_gone()
    }

    /// Resolves when a hold on `client` can no longer be trusted: [`Loss::Deleted`] once its
    /// node is seen gone, else the session's loss ([`super::session_loss`]).
    pub async fn lost(&self, client: &Client) -> Loss {
        tokio::select! {
            biased;
            () = self.gone() => Loss::Deleted,
            loss = super::session_loss(client) => {
                // Deleted and then disconnected before the event came: the loss seen first.
                if self.is_gone() { Loss::Deleted } else { loss }
            }
        }
    }
}

/// One hold's watch on its node: dropping it ends the watch (the hold ended).
#[derive(Debug)]
pub struct NodeWatch {
    watched: Option<Arc<NodeLife>>,
}

impl Drop for NodeWatch {
    fn drop(&mut self) {
        if let Some(watched) = self.watched.take() {
            watched.end();
        }
    }
}

/// Starts watching `node` on `client` for its hold: the node's life, shared with whoever
/// holds it, and the watch (dropping it ends the watch). `revocation`: called once (on the
/// client's runtime) if the node's data is (or becomes) [`REVOKE_MESSAGE`].
pub fn watch_node(
    client: &Client,
    node: &Acquired,
    revocation: Option<RevocationListener>,
) -> (Arc<NodeLife>, NodeWatch) {
    let watched = !crate::plant::active(crate::plant::Plant::NoNodeWatch);
    let life = Arc::new_cyclic(|me| NodeLife {
        gone: AtomicBool::new(false),
        notify: Notify::new(),
        watch: watched.then(|| Watched {
            client: client.clone(),
            path: node.path.clone(),
            session: node.session_id,
            revocation: Mutex::new(revocation),
            current: AtomicU64::new(NONE),
            ended: AtomicBool::new(false),
        }),
        me: me.clone(),
    });
    if watched {
        // Sent from a task of its own, which the runtime polls after the acquire's caller
        // has run on: a hold released before then never sends it (a short critical section
        // costs no request), and the task holds the node's life only weakly.
        let weak = Arc::downgrade(&life);
        client.runtime().spawn(async move {
            if let Some(life) = weak.upgrade() {
                life.read();
            }
        });
    }
    let watch = NodeWatch {
        watched: watched.then(|| life.clone()),
    };
    (life, watch)
}

/// No watcher set yet.
const NONE: u64 = 0;

/// The watch of one hold's node (owned by session `session`), kept until it shows the node
/// gone (then `life` is marked), the session ends, or the hold ends. Reconnects do not end
/// it: the client restores the watch (and the server fires `NodeDeleted` if the node went
/// meanwhile); a read cut short by a lost connection is sent again once connected.
struct Watched {
    client: Client,
    /// The guard's own copy, shared.
    path: Arc<str>,
    session: i64,
    revocation: Mutex<Option<RevocationListener>>,
    /// The watcher set last, as its id plus one ([`NONE`]: none yet).
    current: AtomicU64,
    /// The hold ended: nothing more is sent.
    ended: AtomicBool,
}

impl std::fmt::Debug for Watched {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watched")
            .field("path", &self.path)
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

impl NodeLife {
    /// Reads the node with a watch (its reply and event come to this handler).
    fn read(&self) {
        let (Some(w), Some(me)) = (&self.watch, self.me.upgrade()) else {
            return;
        };
        if w.ended.load(Ordering::SeqCst) {
            return;
        }
        // Not sent only when the session task is gone: the hold's loss says so.
        if let Ok(id) = w.client.get_data_and_watch_with(&w.path, me) {
            w.current.store(id.0.wrapping_add(1), Ordering::SeqCst);
            // Ended meanwhile: `end` may have forgotten the watcher before this one.
            if w.ended.load(Ordering::SeqCst) {
                w.client.forget_watch(&w.path, id);
            }
        }
    }

    /// The hold ended: the watch is forgotten (before our own delete fires it), and nothing
    /// more is sent. With `read`, either sees the other's write (both `SeqCst`), so the last
    /// watcher set is forgotten by one of them.
    fn end(&self) {
        let Some(w) = &self.watch else { return };
        w.ended.store(true, Ordering::SeqCst);
        let current = w.current.load(Ordering::SeqCst);
        if current != NONE {
            w.client
                .forget_watch(&w.path, WatcherId(current.wrapping_sub(1)));
        }
    }

    /// Sends the read again once the session is connected again (a task of its own, which
    /// lives through the outage only).
    fn read_when_connected(&self) {
        let (Some(w), Some(me)) = (&self.watch, self.me.upgrade()) else {
            return;
        };
        w.client.runtime().spawn(async move {
            let Some(w) = &me.watch else { return };
            let mut states = w.client.state_watch();
            let back = states
                .wait_for(|s| s.is_connected() || s.is_terminal())
                .await
                .is_ok_and(|s| s.is_connected());
            if back && w.client.session_id() == w.session {
                me.read();
            }
        });
    }
}

impl WatchHandler for NodeLife {
    fn reply(&self, result: Result<(Bytes, Stat), zk_client::Error>) {
        let Some(w) = &self.watch else { return };
        match result {
            Ok((data, _)) => {
                // Checked on every read, so a revoke written before the watch is not missed.
                if data.as_ref() == REVOKE_MESSAGE {
                    let listener = w
                        .revocation
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .take();
                    if let Some(listener) = listener {
                        // The user's code runs outside the session task.
                        w.client.runtime().spawn(async move { listener() });
                    }
                }
            }
            Err(zk_client::Error::NoNode) => self.mark_gone(),
            Err(zk_client::Error::NotConnected | zk_client::Error::ConnectionLoss) => {
                if !w.ended.load(Ordering::SeqCst) {
                    self.read_when_connected();
                }
            }
            // The session ended (its loss says so), or the node cannot be read here (an ACL
            // without READ for us): the hold learns of its loss through its session only.
            Err(_) => {}
        }
    }

    fn event(&self, event: WatchedEvent) {
        match event.event_type {
            EventType::NodeDeleted => self.mark_gone(),
            // Read again: the revoke check, and the watch set anew.
            EventType::NodeDataChanged => self.read(),
            // The session ended: its loss says so.
            _ => {}
        }
    }
}
