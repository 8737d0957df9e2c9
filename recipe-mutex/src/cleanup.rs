//! Guaranteed deletes: whatever node an attempt or a hold leaves behind is deleted in the
//! background, retried across connection loss until done or the session ends.

use recipes_core::Cleanup;
use zk_client::{Client, Error as ZkError, SessionState};

/// Runs `cleanup` to the end: retried while the connection is down, given up only when the
/// session is gone (which removes our ephemeral nodes anyway).
pub(crate) async fn run(client: &Client, cleanup: Cleanup) {
    loop {
        let result = match &cleanup {
            Cleanup::Nothing => return,
            Cleanup::Delete(path) => client.delete(path, None).await,
            Cleanup::FindAndDelete { base, prefix } => find_and_delete(client, base, prefix).await,
        };
        match result {
            Ok(()) | Err(ZkError::NoNode) => return,
            Err(ZkError::ConnectionLoss) if wait_connected(client).await => continue,
            Err(_) => return,
        }
    }
}

async fn find_and_delete(client: &Client, base: &str, prefix: &str) -> Result<(), ZkError> {
    for child in client.get_children(base).await? {
        if child.starts_with(prefix) {
            match client.delete(&format!("{base}/{child}"), None).await {
                Ok(()) | Err(ZkError::NoNode) => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(())
}

/// Waits until the session is connected again; false if it ended instead.
pub(crate) async fn wait_connected(client: &Client) -> bool {
    let mut states = client.state_watch();
    let state = states
        .wait_for(|s| s.is_connected() || s.is_terminal())
        .await;
    matches!(
        state.map(|s| *s),
        Ok(SessionState::Connected | SessionState::ConnectedReadOnly)
    )
}

/// Releases `path` from a `Drop`: the delete is sent now, so it keeps its place ahead of
/// whatever the caller sends next (a drop-release cycle then costs one round trip); only the
/// wait for its reply, and the retries after a connection loss, run in the background.
pub(crate) fn delete_now(client: &Client, path: String) {
    let first = client.delete(&path, None);
    if let Ok(handle) = tokio::runtime::Handle::try_current() {
        let client = client.clone();
        handle.spawn(async move {
            if first.await == Err(ZkError::ConnectionLoss) {
                run(&client, Cleanup::Delete(path)).await;
            }
        });
    }
}

/// Starts `cleanup` in the background, if there is something to do and a runtime to do it.
/// Without a runtime the session's end removes our ephemeral nodes.
pub(crate) fn spawn(client: &Client, cleanup: Cleanup) {
    if cleanup == Cleanup::Nothing {
        return;
    }
    if let Ok(handle) = tokio::runtime::Handle::try_current() {
        let client = client.clone();
        handle.spawn(async move { run(&client, cleanup).await });
    }
}
