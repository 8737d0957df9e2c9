//! The one async driver: runs a recipes-core [`AcquireMachine`] against a ZooKeeper session.
//! Every recipe takes its locks through [`acquire`].

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::Instant as StdInstant;

use bytes::Bytes;
use recipes_core::{
    AcquireMachine, Cleanup, Connection, Failure, Op, Outcome, Predicate, Reply, ZkError,
};
use tokio::time::Instant;
use zk_client::{Client, CreateMode, CreateOptions, OneshotWatcher, SessionState};

use crate::{Error, cleanup};

/// A lock node we hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Acquired {
    /// Its full path.
    pub path: String,
    /// Its creation zxid (the fencing token).
    pub czxid: i64,
    /// The session it belongs to.
    pub session_id: i64,
}

/// How many times an attempt whose node vanished is retried with a new node (Curator's retry
/// policy does the same), within the same deadline.
const VANISHED_RETRIES: u32 = 3;

/// Takes a lock: runs attempts of `predicate` on `base` until one holds, fails, or the
/// deadline passes (`Ok(None)`).
///
/// Cancel-safe: if the returned future is dropped at any point, no node of ours is left (a
/// background task deletes it, finding it by its protection prefix when the create's reply
/// had not arrived yet).
pub async fn acquire<P: Predicate + Clone>(
    client: &Client,
    base: &str,
    predicate: P,
    data: Bytes,
    deadline: Option<StdInstant>,
) -> Result<Option<Acquired>, Error> {
    let mut vanished = 0;
    loop {
        let uuid = crate::uuid::random_uuid();
        let machine = AcquireMachine::new(base, predicate.clone(), &uuid, data.clone(), deadline);
        match attempt(client, machine).await {
            Err(Error::NodeVanished) if vanished < VANISHED_RETRIES => vanished += 1,
            other => return other,
        }
    }
}

/// Deletes what an abandoned attempt left, in the background, when dropped armed.
struct AbandonGuard<'a> {
    client: &'a Client,
    cleanup: Cleanup,
}

impl Drop for AbandonGuard<'_> {
    fn drop(&mut self) {
        cleanup::spawn(
            self.client,
            std::mem::replace(&mut self.cleanup, Cleanup::Nothing),
        );
    }
}

fn connection(state: SessionState) -> Connection {
    match state {
        SessionState::Connected | SessionState::ConnectedReadOnly => Connection::Connected,
        SessionState::Lost => Connection::Lost,
        SessionState::Connecting | SessionState::Disconnected => Connection::Disconnected,
        _ => Connection::Expired,
    }
}

fn session_error(state: SessionState) -> Error {
    match state {
        SessionState::Lost => Error::SessionLost,
        SessionState::AuthFailed => Error::Zk(zk_client::Error::AuthFailed),
        _ => Error::SessionExpired,
    }
}

async fn attempt<P: Predicate>(
    client: &Client,
    mut m: AcquireMachine<P>,
) -> Result<Option<Acquired>, Error> {
    let mut states = client.state_stream();
    let state = client.state();
    if state.is_terminal() {
        return Err(session_error(state));
    }
    let mut guard = AbandonGuard {
        client,
        cleanup: Cleanup::Nothing,
    };
    let mut watcher: Option<OneshotWatcher> = None;
    let mut last_error: Option<zk_client::Error> = None;
    let mut ops = m.start(StdInstant::now());
    loop {
        if !ops.is_empty() {
            // Set what to undo before sending: a create may be applied even if we are dropped
            // before its reply.
            guard.cleanup = pending_cleanup(&m, &ops);
            let replies = in_order(ops.iter().map(|op| run_op(client, op)).collect()).await;
            ops = Vec::new();
            for (reply, w, err) in replies {
                if let Some(w) = w {
                    watcher = Some(w);
                }
                if err.is_some() {
                    last_error = err;
                }
                ops.extend(m.on_reply(StdInstant::now(), reply));
            }
            guard.cleanup = m.cleanup();
        }
        if let Some(outcome) = m.outcome().cloned() {
            return finish(client, outcome, guard, last_error).await;
        }
        if !ops.is_empty() {
            continue;
        }
        let deadline = m.poll_timeout().map(Instant::from_std);
        tokio::select! {
            deleted = wait_watch(&mut watcher) => {
                ops = m.on_watch(StdInstant::now(), deleted);
            }
            state = states.next() => {
                let state = state.unwrap_or(SessionState::Closed);
                ops = m.on_state(StdInstant::now(), connection(state));
                if m.outcome().is_some() && state.is_terminal() {
                    last_error = None;
                }
            }
            _ = sleep_until(deadline) => {
                ops = m.on_timeout(StdInstant::now());
            }
        }
    }
}

async fn finish(
    client: &Client,
    outcome: Outcome,
    mut guard: AbandonGuard<'_>,
    last_error: Option<zk_client::Error>,
) -> Result<Option<Acquired>, Error> {
    let cleanup = std::mem::replace(&mut guard.cleanup, Cleanup::Nothing);
    match outcome {
        Outcome::Held { path, czxid } => Ok(Some(Acquired {
            path,
            czxid,
            session_id: client.session_id(),
        })),
        Outcome::TimedOut => {
            // As Curator does: the node is deleted before acquire returns false.
            cleanup::run(client, cleanup).await;
            Ok(None)
        }
        Outcome::Failed(failure) => {
            cleanup::spawn(client, cleanup);
            Err(match failure {
                Failure::SessionExpired => session_error(client.state()),
                Failure::SessionLost => Error::SessionLost,
                Failure::NodeVanished => Error::NodeVanished,
                Failure::Zk => match last_error {
                    Some(zk_client::Error::SessionExpired) => Error::SessionExpired,
                    Some(e) => Error::Zk(e),
                    None => session_error(client.state()),
                },
            })
        }
    }
}

/// What to delete if we are dropped while `ops` are in flight.
fn pending_cleanup<P: Predicate>(m: &AcquireMachine<P>, ops: &[Op]) -> Cleanup {
    match (
        m.cleanup(),
        ops.iter().find(|op| matches!(op, Op::Create { .. })),
    ) {
        (Cleanup::Nothing, Some(Op::Create { path, .. })) => {
            let (base, name) = path.rsplit_once('/').unwrap_or(("", path));
            let prefix = name
                .get(..recipes_core::name::PROTECTED_PREFIX_LEN)
                .unwrap_or(name);
            Cleanup::FindAndDelete {
                base: if base.is_empty() {
                    "/".into()
                } else {
                    base.to_owned()
                },
                prefix: prefix.to_owned(),
            }
        }
        (cleanup, _) => cleanup,
    }
}

type OpResult = (Reply, Option<OneshotWatcher>, Option<zk_client::Error>);

fn failed(e: zk_client::Error) -> OpResult {
    let kind = match e {
        zk_client::Error::NoNode => ZkError::NoNode,
        zk_client::Error::ConnectionLoss => ZkError::ConnectionLoss,
        zk_client::Error::SessionExpired => ZkError::SessionExpired,
        _ => ZkError::Other,
    };
    (Reply::Failed(kind), None, Some(e))
}

async fn run_op(client: &Client, op: &Op) -> OpResult {
    match op {
        Op::Create { path, data } => {
            let opts = CreateOptions::new(CreateMode::EphemeralSequential);
            match client.create_with_stat(path, data, &opts).await {
                Ok((path, stat)) => (
                    Reply::Created {
                        path,
                        czxid: stat.czxid,
                    },
                    None,
                    None,
                ),
                Err(e) => failed(e),
            }
        }
        Op::Children { path } => match client.get_children(path).await {
            Ok(children) => (Reply::Children(children), None, None),
            Err(e) => failed(e),
        },
        Op::Watch { path } => match client.get_data_and_watch(path).await {
            Ok((_, _, watcher)) => (Reply::Watching, Some(watcher), None),
            Err(e) => failed(e),
        },
        Op::Stat { path } => match client.exists(path).await {
            Ok(Some(stat)) => (Reply::Stat { czxid: stat.czxid }, None, None),
            Ok(None) => failed(zk_client::Error::NoNode),
            Err(e) => failed(e),
        },
        Op::CreateParents { path } => match create_parents(client, path).await {
            Ok(()) => (Reply::Done, None, None),
            Err(e) => failed(e),
        },
        Op::Delete { path } => match client.delete(path, None).await {
            Ok(()) | Err(zk_client::Error::NoNode) => (Reply::Done, None, None),
            Err(e) => failed(e),
        },
    }
}

/// Creates `path` and its missing ancestors as container nodes, top-down, ignoring those
/// that exist (Curator's `creatingParentContainersIfNeeded`).
pub(crate) async fn create_parents(client: &Client, path: &str) -> Result<(), zk_client::Error> {
    let opts = CreateOptions::new(CreateMode::Container);
    let mut end = 0;
    while let Some(next) = path
        .get(end + 1..)
        .and_then(|rest| rest.find('/'))
        .map(|i| end + 1 + i)
    {
        create_ignoring_exists(client, path.get(..next).unwrap_or(path), &opts).await?;
        end = next;
    }
    create_ignoring_exists(client, path, &opts).await
}

async fn create_ignoring_exists(
    client: &Client,
    path: &str,
    opts: &CreateOptions,
) -> Result<(), zk_client::Error> {
    match client.create(path, b"", opts).await {
        Ok(_) | Err(zk_client::Error::NodeExists) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Runs futures to completion, polling them in order each round: the first poll of each sends
/// its request, so requests leave in the order given (pipelined, ZooKeeper answers in order).
async fn in_order<F: Future>(futures: Vec<F>) -> Vec<F::Output> {
    let mut futures: Vec<Pin<Box<F>>> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (fut, out) in futures.iter_mut().zip(outputs.iter_mut()) {
            if out.is_none() {
                match fut.as_mut().poll(cx) {
                    Poll::Ready(v) => *out = Some(v),
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await;
    outputs.into_iter().flatten().collect()
}

/// Waits for the watched node's event; true when it was deleted (a session event is not a
/// deletion).
async fn wait_watch(watcher: &mut Option<OneshotWatcher>) -> bool {
    match watcher.as_mut() {
        Some(w) => {
            let event = w.await;
            *watcher = None;
            event.event_type == zk_client::EventType::NodeDeleted
        }
        None => std::future::pending().await,
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}
