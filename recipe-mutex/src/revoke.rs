//! Revocation, Curator's protocol: a revoker writes `__REVOKE__` to a holder's lock node; a
//! revocable holder's node watch (the watch every hold keeps on its own node) calls its
//! listener when it sees that.

use std::sync::Arc;

use zk_client::Client;

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
