//! Watches: the watch requests, and the notifications a change fires.

use zk_proto::records::{ErrorResponse, WatcherEvent};
use zk_proto::{AddWatchMode, ErrorCode, KeeperState, ReplyHeader, Request, xid};

use super::{Body, ServerMachine, body};
use crate::data_tree::Change;
use crate::watches::{Notification, WatchKind};

impl ServerMachine {
    /// The watch requests: `setWatches`, `setWatches2`, `addWatch`, `checkWatches`,
    /// `removeWatches`.
    pub(super) fn watch_request(
        &mut self,
        session: i64,
        request: Request,
    ) -> Result<Body, ErrorCode> {
        use Request as R;
        match request {
            R::SetWatches(w) => {
                let lists = [
                    &w.data_watches[..],
                    &w.exist_watches[..],
                    &w.child_watches[..],
                    &[],
                    &[],
                ];
                self.set_watches(session, w.relative_zxid, lists);
                Ok(None)
            }
            R::SetWatches2(w) => {
                let lists = [
                    &w.data_watches[..],
                    &w.exist_watches[..],
                    &w.child_watches[..],
                    &w.persistent_watches[..],
                    &w.persistent_recursive_watches[..],
                ];
                self.set_watches(session, w.relative_zxid, lists);
                Ok(None)
            }
            R::AddWatch(r) => {
                let kind = match r.mode {
                    AddWatchMode::Persistent => WatchKind::Persistent,
                    AddWatchMode::PersistentRecursive => WatchKind::PersistentRecursive,
                };
                zk_proto::validate_path(&r.path, false)
                    .map_err(|_| ErrorCode::BadArguments)
                    .and_then(|()| {
                        self.watches.add(kind, &r.path, session);
                        // ZooKeeper answers addWatch with an ErrorResponse body saying Ok.
                        body(ErrorResponse { err: ErrorCode::Ok })
                    })
            }
            R::CheckWatches(r) => WatchKind::named_by(r.watcher_type).and_then(|kinds| {
                if self.watches.contains(kinds, &r.path, session) {
                    Ok(None)
                } else {
                    Err(ErrorCode::NoWatcher)
                }
            }),
            R::RemoveWatches(r) => WatchKind::named_by(r.watcher_type).and_then(|kinds| {
                if self.watches.remove(kinds, &r.path, session) {
                    Ok(None)
                } else {
                    Err(ErrorCode::NoWatcher)
                }
            }),
            _ => Err(ErrorCode::Unimplemented),
        }
    }

    pub(super) fn set_watches(&mut self, session: i64, relative_zxid: i64, lists: [&[String]; 5]) {
        let mut fired = Vec::new();
        self.watches
            .set_watches(&self.tree, session, relative_zxid, lists, &mut fired);
        let zxid = self.zxid;
        self.send_notifications(zxid, &fired);
    }

    pub(super) fn notify(&mut self, zxid: i64, changes: &[Change]) {
        let mut fired = Vec::new();
        self.watches.fire(changes, &mut fired);
        self.send_notifications(zxid, &fired);
    }

    pub(super) fn send_notifications(&mut self, zxid: i64, fired: &[Notification]) {
        for n in fired {
            let Some(conn) = self.conn_of(n.session) else {
                continue;
            };
            let header = ReplyHeader {
                xid: xid::NOTIFICATION,
                zxid,
                err: ErrorCode::Ok,
            };
            let event = WatcherEvent {
                event_type: n.event,
                state: KeeperState::SyncConnected,
                path: n.path.clone(),
            };
            self.send_parts(conn, &header, Some(&event));
        }
    }
}
