//! The watch a hold keeps on its own node: how a guard learns that its node is gone while its
//! session lives (deleted by another client or an operator, or missing after a reconnect,
//! which ZooKeeper reports on the restored watch), and how a revocable holder sees a revoke.
//!
//! One data watch per hold (`getData` with a watch on our node; never `exists`, which would
//! leave a creation watch behind on a node already gone), set by a small task started when
//! the hold begins and ended with it. Its first request is not awaited by the acquire: no
//! round trip is added, one read per hold, no write. When its reply or its event shows the
//! node gone, [`NodeLife`] records it for every guard of the node (a cohort's local holders
//! share one), and wakes whoever waits in `lost()`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::Notify;
use tokio::task::AbortHandle;
use zk_client::{Client, EventType, SessionState};

use crate::Loss;
use crate::driver::Acquired;
use crate::revoke::{REVOKE_MESSAGE, RevocationListener};

/// What a hold knows of its node beyond its session: whether the node was seen gone (its
/// watch fired `NodeDeleted`, a read of it found none, or a fenced write's check was
/// refused). Once gone, it stays gone: a lock node's path is never made again.
#[derive(Debug, Default)]
pub struct NodeLife {
    gone: AtomicBool,
    notify: Notify,
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

/// The task watching one hold's node: ends the watch when dropped (the hold ended).
#[derive(Debug)]
pub struct NodeWatch {
    task: Option<AbortHandle>,
}

impl Drop for NodeWatch {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// Starts watching `node` on `client` for its hold, on the client's runtime: the node's
/// life, shared with whoever holds it, and the watch (dropping it ends the watch).
/// `revocation`: called once if the node's data is (or becomes) [`REVOKE_MESSAGE`].
pub fn watch_node(
    client: &Client,
    node: &Acquired,
    revocation: Option<RevocationListener>,
) -> (Arc<NodeLife>, NodeWatch) {
    let life = Arc::new(NodeLife::default());
    let task = (!crate::plant::active(crate::plant::Plant::NoNodeWatch)).then(|| {
        client
            .runtime()
            .spawn(watch(
                client.clone(),
                node.path.clone(),
                node.session_id,
                life.clone(),
                revocation,
            ))
            .abort_handle()
    });
    (life, NodeWatch { task })
}

/// Keeps a data watch on `path` (owned by session `session`) until it shows the node gone
/// (then marks `life`), or the session ends. Reconnects do not end it: the client restores
/// the watch (and the server fires `NodeDeleted` if the node went meanwhile); a read that
/// fails for want of a connection is sent again once connected.
async fn watch(
    client: Client,
    path: String,
    session: i64,
    life: Arc<NodeLife>,
    mut revocation: Option<RevocationListener>,
) {
    loop {
        // The task lives as long as the hold, and its size is that of its largest state: the
        // read's future (about 370 B) is boxed, freed with its reply, and the node's data is
        // dropped before the long wait, so a held lock keeps only the watcher.
        let read = Box::pin(client.get_data_and_watch(&path)).await;
        match read {
            Ok((data, _, watcher)) => {
                // Checked on every read, so a revoke written before the watch is not missed.
                let revoked = data.as_ref() == REVOKE_MESSAGE;
                drop(data);
                if revoked {
                    if let Some(listener) = revocation.take() {
                        listener();
                    }
                }
                match watcher.await.event_type {
                    EventType::NodeDeleted => return life.mark_gone(),
                    EventType::NodeDataChanged => continue,
                    // The session ended: its loss says so.
                    _ => return,
                }
            }
            Err(zk_client::Error::NoNode) => return life.mark_gone(),
            Err(zk_client::Error::NotConnected | zk_client::Error::ConnectionLoss) => {
                let mut states = client.state_watch();
                let back = states
                    .wait_for(|s| s.is_connected() || s.is_terminal())
                    .await
                    .is_ok_and(|s| s.is_connected());
                if !back || client.session_id() != session {
                    return;
                }
            }
            // The session ended (its loss says so), or the node cannot be read here (an ACL
            // without READ for us): the hold learns of its loss through its session only.
            Err(_) => return,
        }
    }
}
