//! What a new connection gets back before any new request: every credential added so far
//! (the server keeps authentication per connection), then every watch (`SetWatches`).

use zk_proto::records::{SetWatches, SetWatches2};
use zk_proto::{Request, xid};

use super::{SET_WATCHES_MAX_BYTES, Session};

impl<T> Session<T> {
    /// Sends every credential added so far again, on a new connection.
    pub(super) fn replay_auths(&mut self) {
        if !self.auth_info.is_empty() {
            crate::log::debug!(
                credentials = self.auth_info.len(),
                "credentials sent again on the new connection"
            );
        }
        for packet in &self.auth_info {
            // An auth packet was within the frame limit when it was first sent.
            let at = self.next_offset();
            let request = Request::Auth(packet.clone());
            if request
                .encode_frame(xid::AUTH, &mut self.out, usize::MAX)
                .is_ok()
            {
                self.auths.push_back((at, None));
            }
        }
    }

    /// After a reconnect, re-registers every watch before any new request, so a change made
    /// while we were away fires at once (the server compares with our last zxid). Like the Java
    /// client, uses `SetWatches` unless persistent watches need `SetWatches2`, and splits the
    /// paths over several frames of at most [`SET_WATCHES_MAX_BYTES`].
    pub(super) fn restore_watches(&mut self) {
        if self.watches.is_empty() {
            return;
        }
        let paths = self.watches.watched_paths();
        crate::log::debug!(
            data = paths.data.len(),
            exists = paths.exists.len(),
            child = paths.child.len(),
            persistent = paths.persistent.len(),
            recursive = paths.recursive.len(),
            "watches restored on the new connection"
        );
        let persistent = !paths.persistent.is_empty() || !paths.recursive.is_empty();
        let mut lists = [
            paths.data,
            paths.exists,
            paths.child,
            paths.persistent,
            paths.recursive,
        ]
        .map(std::collections::VecDeque::from);
        while lists.iter().any(|l| !l.is_empty()) {
            let mut batch: [Vec<String>; 5] = Default::default();
            let mut bytes = 0;
            for (list, out) in lists.iter_mut().zip(batch.iter_mut()) {
                while let Some(path) = list.front() {
                    if bytes > 0 && bytes + path.len() + 4 > SET_WATCHES_MAX_BYTES {
                        break;
                    }
                    bytes += path.len() + 4;
                    out.extend(list.pop_front());
                }
            }
            let [data, exist, child, persistent_watches, recursive] = batch;
            let request = if persistent {
                Request::SetWatches2(SetWatches2 {
                    relative_zxid: self.last_zxid,
                    data_watches: data,
                    exist_watches: exist,
                    child_watches: child,
                    persistent_watches,
                    persistent_recursive_watches: recursive,
                })
            } else {
                Request::SetWatches(SetWatches {
                    relative_zxid: self.last_zxid,
                    data_watches: data,
                    exist_watches: exist,
                    child_watches: child,
                })
            };
            // Batches are bounded well under any frame limit.
            let _ = request.encode_frame(xid::SET_WATCHES, &mut self.out, usize::MAX);
        }
    }
}
