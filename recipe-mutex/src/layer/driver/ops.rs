//! The machines' vocabulary on a real client: each [`Op`] as a client request whose future
//! gives a [`Reply`] (and the watcher it left), session states as [`Connection`]s, client
//! errors as [`ZkError`]s.

use std::future::Future;
use std::pin::Pin;

use recipes_core::{Connection, NodeMode, Op, Reply, WatchEvent, WatchKind, ZkError};
use zk_client::{Client, CreateMode, CreateOptions, OneshotWatcher, SessionState};

use super::parents;

/// What an op's future gives: the reply, the watcher it left, the client's error.
pub(super) struct Completed {
    pub(super) reply: Reply,
    pub(super) watch: Option<(WatchKind, String, OneshotWatcher)>,
    pub(super) error: Option<zk_client::Error>,
    /// For a watched node that exists: its path and session (for the waiting report).
    pub(super) behind: Option<(String, i64)>,
}

pub(super) type OpFuture = Pin<Box<dyn Future<Output = Completed> + Send>>;

pub(super) struct InFlight {
    pub(super) future: OpFuture,
    pub(super) done: Option<Completed>,
}

pub(super) fn watch_event(event: zk_client::EventType) -> WatchEvent {
    use zk_client::EventType;
    match event {
        EventType::NodeCreated => WatchEvent::Created,
        EventType::NodeDeleted => WatchEvent::Deleted,
        EventType::NodeDataChanged => WatchEvent::DataChanged,
        EventType::NodeChildrenChanged => WatchEvent::ChildrenChanged,
        _ => WatchEvent::SessionEnded,
    }
}

/// What a machine knows of a session state.
pub fn connection(state: SessionState) -> Connection {
    match state {
        SessionState::Connected => Connection::Connected,
        SessionState::ConnectedReadOnly => Connection::ReadOnly,
        SessionState::Lost if crate::plant::active(crate::plant::Plant::LostEndsWaiters) => {
            Connection::Expired
        }
        SessionState::Lost => Connection::Lost,
        SessionState::Connecting | SessionState::Disconnected => Connection::Disconnected,
        _ => Connection::Expired,
    }
}

/// The kind of failure a machine tells apart.
pub fn zk_error(e: &zk_client::Error) -> ZkError {
    use zk_client::Error as E;
    match e {
        E::NoNode => ZkError::NoNode,
        E::NodeExists => ZkError::NodeExists,
        E::ConnectionLoss => ZkError::ConnectionLoss,
        E::NotConnected => ZkError::NotSent,
        E::SessionExpired | E::Closed | E::AuthFailed => ZkError::SessionExpired,
        E::SessionMoved | E::Throttled | E::RequestTimeout | E::NotReadOnly => ZkError::Transient,
        _ => ZkError::Other,
    }
}

pub(super) fn failed(e: zk_client::Error) -> Completed {
    Completed {
        reply: Reply::Failed(zk_error(&e)),
        watch: None,
        error: Some(e),
        behind: None,
    }
}

pub(super) fn ok(reply: Reply) -> Completed {
    Completed {
        reply,
        watch: None,
        error: None,
        behind: None,
    }
}

/// The options of a lock node's create (constants: an open ACL is borrowed).
pub(super) fn create_options(mode: NodeMode) -> &'static CreateOptions {
    static SEQUENTIAL: CreateOptions = CreateOptions::new(CreateMode::EphemeralSequential);
    static EXACT: CreateOptions = CreateOptions::new(CreateMode::Ephemeral);
    match mode {
        NodeMode::EphemeralSequential => &SEQUENTIAL,
        NodeMode::Ephemeral => &EXACT,
    }
}

pub(super) fn op_future(client: Client, op: Op) -> OpFuture {
    // A future of its own: the rare op with the largest future (a walk of the path with a
    // flight per ancestor) would otherwise size the box of every op.
    let op = match op {
        Op::CreateParents { path } => return parents_future(client, path),
        op => op,
    };
    Box::pin(async move {
        match op {
            Op::Create { path, mode, data } => {
                match client
                    .create_with_stat(path, &data, create_options(mode))
                    .await
                {
                    Ok((path, stat)) => ok(Reply::Created {
                        path,
                        czxid: stat.czxid,
                    }),
                    Err(e) => failed(e),
                }
            }
            Op::Children { path, watch: false } => match client.get_children(path).await {
                Ok(children) => ok(Reply::Children(children)),
                Err(e) => failed(e),
            },
            Op::Children { path, watch: true } => {
                match client.get_children_and_watch(&path).await {
                    Ok((children, watcher)) => Completed {
                        reply: Reply::Children(children),
                        watch: Some((WatchKind::Children, path, watcher)),
                        error: None,
                        behind: None,
                    },
                    Err(e) => failed(e),
                }
            }
            Op::GetData { path, watch: false } => match client.get_data(path).await {
                Ok((data, stat)) => ok(Reply::Data {
                    data,
                    czxid: stat.czxid,
                }),
                Err(e) => failed(e),
            },
            Op::GetData { path, watch: true } => match client.get_data_and_watch(&path).await {
                Ok((data, stat, watcher)) => Completed {
                    reply: Reply::Data {
                        data,
                        czxid: stat.czxid,
                    },
                    behind: Some((path.clone(), stat.ephemeral_owner)),
                    watch: Some((WatchKind::Data, path, watcher)),
                    error: None,
                },
                Err(e) => failed(e),
            },
            Op::Exists { path, watch: false } => match client.exists(path).await {
                Ok(stat) => ok(Reply::Exists(stat.map(|s| s.czxid))),
                Err(e) => failed(e),
            },
            Op::Exists { path, watch: true } => match client.exists_and_watch(&path).await {
                Ok((stat, watcher)) => Completed {
                    reply: Reply::Exists(stat.as_ref().map(|s| s.czxid)),
                    behind: stat.map(|s| (path.clone(), s.ephemeral_owner)),
                    watch: Some((WatchKind::Exists, path, watcher)),
                    error: None,
                },
                Err(e) => failed(e),
            },
            Op::Sync { path } => match client.sync(path).await {
                Ok(()) => ok(Reply::Done),
                Err(e) => failed(e),
            },
            Op::Delete { path } => match client.delete(path, None).await {
                Ok(()) => ok(Reply::Done),
                Err(e) => failed(e),
            },
            // Sent as `parents_future` above.
            Op::CreateParents { .. } => ok(Reply::Failed(ZkError::Other)),
        }
    })
}

/// A `CreateParents` op's future.
fn parents_future(client: Client, path: String) -> OpFuture {
    Box::pin(async move {
        match parents::make_parents(&client, &path).await {
            Ok(parents::Parents::Made) => ok(Reply::Done),
            // Removed under us pass after pass: the attempt makes them again after its retry
            // delay, within its deadline.
            Ok(parents::Parents::Vanishing) => ok(Reply::Failed(ZkError::Transient)),
            Err(e) => failed(e),
        }
    })
}
