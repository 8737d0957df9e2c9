//! Fenced writes: the caller's ops in one `multi` behind a check of every node the guard holds,
//! so they commit only while the lock is held, and a refusal because it is not says so
//! ([`Error::LockLost`]) instead of "transaction op 0 failed".

use zk_client::{Op, OpResult};

use crate::{Error, Hold};

/// Applies `ops` as one transaction behind the checks of `holds` (each hold's node must
/// exist), through the first hold's client. The results are the caller's ops' only; a failure
/// of the caller's op `i` is `MultiFailed { index: i, .. }`, as if the checks were not there.
pub(crate) async fn fenced_multi(holds: &[&Hold], ops: &[Op]) -> Result<Vec<OpResult>, Error> {
    let Some(first) = holds.first() else {
        return Err(Error::Zk(zk_client::Error::InvalidArgument(
            "a fenced write needs a guard with at least one hold",
        )));
    };
    let client = first.client();
    // A node seen gone cannot pass its check: refused here (nothing sent), as its check
    // would refuse it.
    if let Some(gone) = holds.iter().find(|h| h.is_gone()) {
        return Err(lost(gone, NODE_GONE));
    }
    let checks = holds.len();
    let mut all = Vec::with_capacity(checks + ops.len());
    all.extend(holds.iter().map(|h| h.check_op()));
    all.extend_from_slice(ops);
    match client.multi(&all).await {
        Ok(mut results) => {
            results.drain(..checks.min(results.len()));
            Ok(results)
        }
        Err(zk_client::Error::MultiFailed { index, source }) => match holds.get(index) {
            Some(gone) => {
                // Recorded in the hold: it is no longer valid, and a cohort does not hand it on.
                gone.mark_gone();
                Err(lost(gone, NODE_GONE))
            }
            None => Err(Error::Zk(zk_client::Error::MultiFailed {
                index: index - checks,
                source,
            })),
        },
        // The session that held it ended: the server deleted its nodes with it.
        Err(zk_client::Error::SessionExpired) if client.session_id() == first.node().session_id => {
            Err(lost(first, "its session expired, and its node with it"))
        }
        // Not sent, and the session is lost (no server for its whole timeout): the lock cannot
        // be counted on, as `lost()` says. Only while it may still be held (`Unsure`) is this
        // the caller's to retry.
        Err(zk_client::Error::NotConnected) if client.state() == zk_client::SessionState::Lost => {
            Err(lost(
                first,
                "no server answered for the session timeout, so its session and node are almost \
                 surely gone; nothing was sent",
            ))
        }
        Err(e) => Err(e.into()),
    }
}

/// Why a fenced write whose node is gone was refused, whether its check refused it or the
/// node was already seen gone.
const NODE_GONE: &str = "its node is gone; nothing was written";

fn lost(hold: &Hold, why: &'static str) -> Error {
    Error::LockLost {
        lock: hold.lock_path().to_owned(),
        node: hold.node_path().to_owned(),
        why,
    }
}
