//! What the server's handle ([`crate::MemServer`]) and its tasks (one per connection, one for
//! session deadlines) share: the protocol machine, the connections' links and switches, the
//! faults in force, the trace.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use bytes::Bytes;
use tokio::sync::{Notify, mpsc, watch};
use tokio::time::Instant;

use crate::machine::{ConnId, Output, ServerMachine};
use crate::trace::describe_out;

/// A connection's switches, set by the handle and read by its task.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Switches {
    /// No bytes move either way until cleared.
    pub(crate) stalled: bool,
    /// Drop the stream now.
    pub(crate) cut: bool,
}

/// What a connection task writes.
#[derive(Debug)]
pub(crate) enum Outgoing {
    Frame(Bytes),
    /// Shut the stream down after the frames before.
    Close,
}

#[derive(Debug)]
pub(crate) struct Link {
    pub(crate) frames: mpsc::UnboundedSender<Outgoing>,
    pub(crate) switches: watch::Sender<Switches>,
    /// The tag of the client that dialled it (`None`: dialled through [`MemServer::dial`]).
    pub(crate) tag: Option<u64>,
}

#[derive(Debug)]
pub(crate) struct State {
    pub(crate) machine: ServerMachine,
    pub(crate) links: BTreeMap<ConnId, Link>,
    pub(crate) refuse: bool,
    pub(crate) down: bool,
    /// Clients cut off from the server, by tag ([`MemServer::partition`]): their connections
    /// stall, new ones are born stalled, and a cut the server makes waits for the heal.
    pub(crate) partitioned: std::collections::BTreeSet<u64>,
    /// Each session's client tag ([`MemServer::client`]).
    pub(crate) tags: BTreeMap<i64, u64>,
    /// Each client's session states, by session ([`crate::MemServer::client`]): what
    /// [`crate::MemServer::landed`] compares with the server's side.
    #[cfg(feature = "client")]
    pub(crate) observers: BTreeMap<i64, watch::Receiver<zk_client::SessionState>>,
    /// The connections of partitioned clients, with whether the server cut them meanwhile.
    pub(crate) silenced: BTreeMap<ConnId, (u64, bool)>,
    /// The next client tag.
    #[cfg_attr(not(feature = "client"), allow(dead_code))]
    pub(crate) next_tag: u64,
    /// Every frame and event, in order, when asked for ([`MemServer::record`]).
    pub(crate) trace: Option<Vec<String>>,
    /// When the server started (the trace's clock).
    pub(crate) started: Instant,
    /// Draws [`crate::MemServer::chaos`]'s faults (a stream of the seed's own).
    pub(crate) chaos: crate::seeded::Seeded,
    /// The TCP accept loops ([`crate::MemServer::listen`]), stopped when the server goes.
    pub(crate) listeners: Vec<tokio::task::AbortHandle>,
    /// Where the machine's snapshot is written after every transaction
    /// ([`crate::MemServer::open`]).
    pub(crate) snapshot_path: Option<std::path::PathBuf>,
    /// Why the last snapshot could not be written: the server then stopped serving.
    pub(crate) snapshot_failure: Option<String>,
}

impl State {
    /// Appends a line to the trace, if one is kept.
    pub(crate) fn note(&mut self, line: impl FnOnce() -> String) {
        if let Some(trace) = self.trace.as_mut() {
            let ms = self.started.elapsed().as_millis();
            trace.push(format!("{ms:>8} {}", line()));
        }
    }

    /// Writes the snapshot, if the server keeps one: to a file beside it, renamed over it, so a
    /// kill at any moment leaves the last whole one. If that fails the server stops serving
    /// (as ZooKeeper exits when it cannot write its log): the replies to what was not kept are
    /// dropped, every connection cut, and new ones refused.
    pub(crate) fn persist(&mut self) {
        let Some(path) = self.snapshot_path.clone() else {
            return;
        };
        let written = self
            .machine
            .snapshot()
            .map_err(|e| e.to_string())
            .and_then(|bytes| {
                let tmp = path.with_extension("tmp");
                std::fs::write(&tmp, &bytes)
                    .and_then(|()| std::fs::rename(&tmp, &path))
                    .map_err(|e| format!("{}: {e}", path.display()))
            });
        if let Err(why) = written {
            self.note(|| format!("snapshot not written, serving stops: {why}"));
            self.snapshot_failure = Some(why);
            self.down = true;
            while self.machine.poll_output().is_some() {}
            for link in self.links.values() {
                link.switches.send_modify(|sw| sw.cut = true);
            }
        }
    }

    /// Moves the machine's outputs to the connection tasks.
    pub(crate) fn route(&mut self) {
        while let Some(out) = self.machine.poll_output() {
            if self.trace.is_some() {
                let line = match &out {
                    Output::Send(conn, frame) => format!("c{conn} < {}", describe_out(frame)),
                    Output::Close(conn) => format!("c{conn} < close"),
                    Output::Cut(conn) => format!("c{conn} < cut"),
                };
                self.note(|| line);
            }
            match out {
                Output::Send(conn, frame) => {
                    if let Some(link) = self.links.get(&conn) {
                        let _ = link.frames.send(Outgoing::Frame(frame));
                    }
                }
                Output::Close(conn) => {
                    if let Some(link) = self.links.get(&conn) {
                        let _ = link.frames.send(Outgoing::Close);
                    }
                }
                Output::Cut(conn) => {
                    if let Some((_, cut)) = self.silenced.get_mut(&conn) {
                        // A partitioned connection: its client hears of the cut only when
                        // the partition heals.
                        *cut = true;
                    } else if let Some(link) = self.links.get(&conn) {
                        link.switches.send_modify(|s| s.cut = true);
                    }
                }
            }
        }
    }
}

#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) state: Mutex<State>,
    /// Wakes the expiry task when a deadline may have come earlier.
    pub(crate) timer: Arc<Notify>,
}

impl Drop for Shared {
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(PoisonError::into_inner);
        for listener in &state.listeners {
            listener.abort();
        }
    }
}

impl Shared {
    /// Runs `f` on the state, routes the outputs, and wakes the expiry task if the next
    /// deadline moved earlier.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let before = state.machine.poll_timeout();
        let zxid = state.machine.zxid();
        let r = f(&mut state);
        if state.machine.zxid() != zxid {
            // Kept before any reply to it leaves.
            state.persist();
        }
        state.route();
        let after = state.machine.poll_timeout();
        drop(state);
        if after.is_some() && (before.is_none() || after < before) {
            self.timer.notify_one();
        }
        r
    }
}

/// Sleeps until the machine's next session deadline, then lets it expire what is due; ends
/// with the last handle.
pub(crate) async fn expire_sessions(shared: Weak<Shared>, timer: Arc<Notify>) {
    loop {
        let Some(next) = shared
            .upgrade()
            .map(|s| s.with(|s| s.machine.poll_timeout()))
        else {
            return;
        };
        let wake = async {
            match next {
                Some(at) => tokio::time::sleep_until(Instant::from_std(at)).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            () = wake => {}
            () = timer.notified() => {}
        }
        let now = Instant::now().into_std();
        let Some(strong) = shared.upgrade() else {
            return;
        };
        strong.with(|s| s.machine.handle_timeout(now));
    }
}
