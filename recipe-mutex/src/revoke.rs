//! Revocation, Curator's protocol: a revoker writes `__REVOKE__` to a holder's lock node; a
//! revocable holder watches its own node's data and calls its listener when it sees that.

use std::sync::Arc;

use zk_client::{Client, EventType};

/// The bytes a revoker writes (`LockInternals.REVOKE_MESSAGE`).
pub const REVOKE_MESSAGE: &[u8] = b"__REVOKE__";

/// Called when another process asks the holder to release. Revocation is cooperative: the
/// listener should release the lock (for example by dropping or releasing its guard).
pub type RevocationListener = Arc<dyn Fn() + Send + Sync>;

/// Asks the holder of lock node `path` (from `participant_nodes`) to release it, as Curator's
/// `Revoker.attemptRevoke` does. A node already gone is not an error.
pub async fn revoke(client: &Client, path: &str) -> Result<(), zk_client::Error> {
    match client.set_data(path, REVOKE_MESSAGE, None).await {
        Ok(_) | Err(zk_client::Error::NoNode) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Watches our own node until it is revoked (then calls `listener`), deleted, or the session
/// ends. Unlike Curator, the data read when the watch is set is checked too, so a revoke
/// written before the watch is not missed.
pub(crate) async fn watch_own_node(client: Client, path: String, listener: RevocationListener) {
    loop {
        let Ok((data, _, watcher)) = client.get_data_and_watch(&path).await else {
            return;
        };
        if data.as_ref() == REVOKE_MESSAGE {
            listener();
            return;
        }
        let event = watcher.await;
        if event.event_type != EventType::NodeDataChanged {
            return;
        }
    }
}
