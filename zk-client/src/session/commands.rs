//! The commands a caller gives the session: [`Session::submit`] a request,
//! [`Session::forget_watch`] a watcher whose handle was dropped, and
//! [`Session::remove_watches_locally`].

use std::time::Instant;

use zk_proto::records::RemoveWatchesRequest;
use zk_proto::{KeeperState, OpCode, Request, WatcherType, xid};

use super::pending::{Effect, Pending};
use super::{Phase, Session, SessionEvent, WatchedEvent, WatcherId};
use crate::Error;

impl<T> Session<T> {
    /// Sends `request`, to complete `token` with its reply; `watch` leaves a watch of that
    /// kind on the request's path for that watcher if the request succeeds (for `exists`, a
    /// data watch when the node exists and an exists watch when it does not; the kind given
    /// is ignored for `addWatch`, whose mode decides). A watcher is registered by one request
    /// at a time.
    ///
    /// Fails at once, giving the token back, when the session cannot send (not connected,
    /// closing, or ended) or the request is over the frame limit; nothing is sent then.
    pub fn submit(
        &mut self,
        now: Instant,
        request: Request,
        token: T,
        watch: Option<WatcherId>,
    ) -> Result<(), (T, Error)> {
        if self.state.is_terminal() || self.closing {
            let err = self.ended_error().unwrap_or(Error::Closed);
            return Err((token, err));
        }
        if self.phase != Phase::Open {
            return Err((token, Error::NotConnected));
        }
        let effect = match Effect::for_request(&request, watch) {
            Ok(effect) => effect,
            Err(e) => return Err((token, e)),
        };
        if let Effect::Watch { id, .. } = &effect {
            if self.watches_in_flight.contains_key(id) {
                return Err((
                    token,
                    Error::InvalidArgument("this watcher already has a request in flight"),
                ));
            }
        }
        let xids_before = self.xids.clone();
        let at = self.next_offset();
        let xid = match request {
            Request::Auth(_) => xid::AUTH,
            Request::Ping | Request::SetWatches(_) | Request::SetWatches2(_) => {
                return Err((
                    token,
                    Error::InvalidArgument("pings and set-watches are the session's own"),
                ));
            }
            _ => self.xids.next(),
        };
        if let Err(e) = request.encode_frame(xid, &mut self.out, self.cfg.max_request_len) {
            self.xids = xids_before; // nothing was sent: the xid is still free
            return Err((token, e.into()));
        }
        if xid == xid::AUTH {
            self.auths.push_back((at, Some(token)));
            if let Request::Auth(packet) = request {
                self.auth_info.push(packet);
            }
        } else {
            if request.op_code() == OpCode::CloseSession {
                self.closing = true;
            }
            crate::log::debug!(xid, op = ?request.op_code(), "request");
            if let Effect::Watch { id, .. } = &effect {
                self.watches_in_flight.insert(*id, true);
            }
            self.pending.push_back(Pending {
                xid,
                op: request.op_code(),
                token,
                effect,
                at,
            });
        }
        self.sent(now);
        Ok(())
    }

    /// A watcher's handle was dropped: stop routing events to it. Returns the
    /// `removeWatches` request to send when it was the last persistent watcher of its kind on
    /// `path` (the server would otherwise keep sending that watch's events for nothing).
    pub fn forget_watch(&mut self, path: &str, id: WatcherId) -> Option<Request> {
        let emptied = self.watches.forget(path, id);
        // Its request may still be in flight: then its reply must not register it.
        if let Some(wanted) = self.watches_in_flight.get_mut(&id) {
            *wanted = false;
        }
        // ZooKeeper 3.8 removes persistent watches only with `Any`, which would take the
        // path's other watches with them: remove only when no other watcher is left on it
        // (else the persistent watch stays on the server, its events reaching nobody).
        if emptied.is_empty() || self.watches.has_path(path) {
            return None;
        }
        Some(Request::RemoveWatches(RemoveWatchesRequest {
            path: path.to_owned(),
            watcher_type: WatcherType::Any,
        }))
    }

    pub(super) fn sent(&mut self, now: Instant) {
        if self.phase == Phase::Open {
            self.timers.ping = now.checked_add(self.ping_interval());
        }
    }

    /// Removes this session's watches of `which` kind on (server path) `path` here only, the
    /// server keeping its own (their events then reach nobody): each removed watcher gets a
    /// last `*WatchRemoved` event. Whether any was removed. (The Java client's
    /// `removeWatches(.., local = true)`, for when no server can be reached.)
    pub fn remove_watches_locally(&mut self, path: &str, which: WatcherType) -> bool {
        let removed = self.watches.remove(path, which);
        let any = !removed.is_empty();
        for (id, event_type) in removed {
            let event = WatchedEvent {
                event_type,
                state: KeeperState::SyncConnected,
                path: path.to_owned(),
            };
            self.events.push_back(SessionEvent::Watch {
                id,
                event,
                last: true,
            });
        }
        any
    }
}
