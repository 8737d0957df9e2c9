//! What the driver leaves running after the caller: releases started at a hold, cleanups an
//! attempt owes, guaranteed deletes (retried across connection loss until done or the
//! session ends, also from a guard dropped off the runtime).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use recipes_core::{Cleanup, ZkError};
use tokio::sync::oneshot;
use zk_client::Client;

use super::ops::zk_error;
use super::run::run_cleanups;
use crate::Error;
use crate::error::session_error;

/// Starts what a machine that holds must release ([`Machine::releases`](recipes_core::Machine::releases)): deletes are sent
/// now (ahead of whatever the caller sends next) and guaranteed.
pub(super) fn start_releases(client: &Client, releases: Vec<Cleanup>) {
    let mut rest = Vec::new();
    for release in releases {
        match release {
            // Not waited for here: each goes on in the background.
            Cleanup::Delete(path) => drop(guaranteed_delete(client, path.into(), |_| {})),
            other => rest.push(other),
        }
    }
    if !rest.is_empty() {
        drop(spawn_cleanups(client, rest));
    }
}

/// Runs `cleanups` to the end in the background (guaranteed deletes: retried across connection
/// loss and transient errors until done or the session ends). The receiver says when they are
/// done, with the error of any cleanup that had to be given up; dropping it changes nothing.
pub fn spawn_cleanups(
    client: &Client,
    cleanups: Vec<Cleanup>,
) -> oneshot::Receiver<Result<(), Error>> {
    let (tx, rx) = oneshot::channel();
    if cleanups.is_empty() {
        let _ = tx.send(Ok(()));
        return rx;
    }
    let client = client.clone();
    // On the client's runtime: it serves the cleanups' requests, whoever's runtime asked.
    drop(client.runtime().clone().spawn(async move {
        let result = run_cleanups(&client, cleanups).await;
        let _ = tx.send(result);
    }));
    rx
}

/// Deletes `path` with a guarantee: the delete is sent now (so it keeps its place ahead of
/// whatever the caller sends next), and if it fails for anything but a final error it is
/// retried until done or the session ends. `done` is called with how it ended, and the
/// returned future gives the same result when awaited to the end.
///
/// The wait runs where the returned [`GuaranteedDelete`] is awaited (a release awaited by its
/// caller costs no task); dropped before it ends, it goes on in a background task on the
/// current runtime (or, without one, `done` is called at once with [`Error::NoRuntime`] and
/// only the session's end removes the node: use [`guaranteed_delete_on`] where the caller may
/// be off the runtime).
///
/// A delete that fails because the session ended gives the session's error: the node went
/// with it, but the caller no longer held anything when it asked.
pub fn guaranteed_delete(
    client: &Client,
    path: Arc<str>,
    done: impl FnOnce(&Result<(), Error>) + Send + 'static,
) -> GuaranteedDelete {
    guaranteed_delete_on(None, client, path, done)
}

/// [`guaranteed_delete`] whose background part runs on `runtime` (the runtime the node was
/// taken on) when the caller is outside any runtime: a guard dropped on a plain thread, after
/// the runtime's `block_on` returned, still has its node deleted, retried across an outage.
pub fn guaranteed_delete_on(
    runtime: Option<&tokio::runtime::Handle>,
    client: &Client,
    path: Arc<str>,
    done: impl FnOnce(&Result<(), Error>) + Send + 'static,
) -> GuaranteedDelete {
    crate::log::info!(
        node = %path,
        session = %format_args!("{:#x}", client.session_id()),
        "releasing: delete sent"
    );
    let first = client.delete(&*path, None);
    let runtime = runtime.filter(|_| !crate::plant::active(crate::plant::Plant::NoRuntimeRetry));
    let handle = match tokio::runtime::Handle::try_current() {
        Ok(handle) => handle,
        Err(_) => match runtime {
            Some(handle) => handle.clone(),
            None => {
                let result = Err(Error::NoRuntime);
                done(&result);
                return GuaranteedDelete {
                    wait: None,
                    result: Some(result),
                };
            }
        },
    };
    let client = client.clone();
    let task = async move {
        let result = match first.await {
            Ok(()) | Err(zk_client::Error::NoNode) => Ok(()),
            Err(zk_client::Error::SessionExpired | zk_client::Error::Closed) => {
                Err(session_error(client.state()))
            }
            Err(e) if zk_error(&e) == ZkError::Other => Err(Error::Zk(e)),
            Err(e) => {
                crate::log::info!(
                    node = %path,
                    session = %format_args!("{:#x}", client.session_id()),
                    error = %e,
                    "the release's delete failed: retrying until it is done or the session ends"
                );
                let _ = e; // read by the log only
                // Boxed: the retry's run is large and rare, and inline it would size (and be
                // moved and boxed with) every release's future.
                Box::pin(run_cleanups(
                    &client,
                    vec![Cleanup::Delete(path.to_string())],
                ))
                .await
            }
        };
        done(&result);
        result
    };
    GuaranteedDelete {
        wait: Some((Box::pin(task), handle)),
        result: None,
    }
}

/// A delete started by [`guaranteed_delete`]: awaiting it runs it to its end here and gives
/// how it ended; dropping it before that hands the rest to a background task, so the delete
/// finishes either way.
#[must_use = "dropped, the delete goes on in a background task; await it to wait here"]
pub struct GuaranteedDelete {
    /// The wait still to run, and the runtime it was started on (a drop outside that
    /// runtime's context still hands it there). `None` once done, or without a runtime.
    wait: Option<(BoxedWait, tokio::runtime::Handle)>,
    /// How it ended, when that was known at once (no runtime).
    result: Option<Result<(), Error>>,
}

/// The rest of a guaranteed delete: its reply, retries, and the `done` call.
type BoxedWait = Pin<Box<dyn Future<Output = Result<(), Error>> + Send>>;

impl Future for GuaranteedDelete {
    type Output = Result<(), Error>;

    /// How the delete ended (polled again after that: `Ok(())`).
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        if let Some((task, _)) = self.wait.as_mut() {
            let Poll::Ready(result) = task.as_mut().poll(cx) else {
                return Poll::Pending;
            };
            self.wait = None;
            return Poll::Ready(result);
        }
        Poll::Ready(self.result.take().unwrap_or(Ok(())))
    }
}

impl Drop for GuaranteedDelete {
    fn drop(&mut self) {
        if let Some((task, handle)) = self.wait.take() {
            drop(handle.spawn(task));
        }
    }
}

/// Awaits a release's `delete` to its result, unless the session ends first (or has
/// already ended): then returns that reason at once (the node goes with the session; the
/// delete goes on in the background meanwhile). A session locally lost (no server for its
/// timeout) may still come back: the release waits on, and the next state decides.
pub async fn finish_release(client: &Client, delete: GuaranteedDelete) -> Result<(), Error> {
    let mut states = client.state_watch();
    let state = *states.borrow_and_update();
    if state.is_terminal() {
        drop(delete);
        return Err(session_error(state));
    }
    let ended = async {
        match states.wait_for(|s| s.is_terminal()).await {
            Ok(s) => session_error(*s),
            Err(_) => Error::Zk(zk_client::Error::Closed),
        }
    };
    tokio::select! {
        biased;
        result = delete => result,
        e = ended => Err(e),
    }
}
