//! [`Pending`]: a request sent and not answered yet, and what its reply changes.

use zk_proto::{OpCode, Request, WatcherType};

use super::{WatchKind, WatcherId};
use crate::Error;

/// A request in flight. They wait in a FIFO: ZooKeeper answers in order.
#[derive(Debug)]
pub(crate) struct Pending<T> {
    pub xid: i32,
    pub op: OpCode,
    pub token: T,
    pub effect: Effect,
    /// Where its first byte is in the connection's output (see `Session::handle_unsent`).
    pub at: u64,
}

/// What a reply changes in the session beside completing its caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Effect {
    None,
    /// Register watcher `id` on `path`: as `kind` if the request succeeds, as `on_missing` if
    /// it fails with `NoNode` (exists watches).
    Watch {
        path: String,
        kind: WatchKind,
        id: WatcherId,
        on_missing: Option<WatchKind>,
    },
    /// Drop the local registrations the server removed.
    RemoveWatches {
        path: String,
        which: WatcherType,
    },
}

impl Effect {
    pub(crate) fn for_request(
        request: &Request,
        watch: Option<WatcherId>,
    ) -> Result<Effect, Error> {
        if let Some((path, which)) = removed_watches(request) {
            return Ok(Effect::RemoveWatches {
                path: path.to_owned(),
                which,
            });
        }
        match (watch, watch_kind_of(request)) {
            (None, None) => Ok(Effect::None),
            (Some(id), Some((kind, on_missing))) => {
                let path = watch_path(request).unwrap_or_default().to_owned();
                Ok(Effect::Watch {
                    path,
                    kind,
                    id,
                    on_missing,
                })
            }
            (Some(_), None) => Err(Error::InvalidArgument("this request leaves no watch")),
            (None, Some(_)) => Err(Error::InvalidArgument("a watching request needs a watcher")),
        }
    }
}

fn watch_path(request: &Request) -> Option<&str> {
    match request {
        Request::Exists(r) => Some(&r.path),
        Request::GetData(r) => Some(&r.path),
        Request::GetChildren(r) => Some(&r.path),
        Request::GetChildren2(r) => Some(&r.path),
        Request::AddWatch(r) => Some(&r.path),
        _ => None,
    }
}

/// The kind of watch a request of this opcode leaves (for `exists`: when the node exists).
pub(crate) fn watch_kind_of(request: &Request) -> Option<(WatchKind, Option<WatchKind>)> {
    Some(match request {
        Request::Exists(r) if r.watch => (WatchKind::Data, Some(WatchKind::Exists)),
        Request::GetData(r) if r.watch => (WatchKind::Data, None),
        Request::GetChildren(r) if r.watch => (WatchKind::Child, None),
        Request::GetChildren2(r) if r.watch => (WatchKind::Child, None),
        Request::AddWatch(r) => match r.mode {
            zk_proto::AddWatchMode::Persistent => (WatchKind::Persistent, None),
            zk_proto::AddWatchMode::PersistentRecursive => (WatchKind::PersistentRecursive, None),
        },
        _ => return None,
    })
}

/// The watcher type a `removeWatches` request removes, and its path.
pub(crate) fn removed_watches(request: &Request) -> Option<(&str, WatcherType)> {
    match request {
        Request::RemoveWatches(r) => Some((&r.path, r.watcher_type)),
        _ => None,
    }
}
