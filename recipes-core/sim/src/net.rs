//! [`Session`]: one simulated client session — its requests in flight to the server, the
//! replies and notifications on their way back, and what the client side delivers locally
//! (failed requests, connection changes).

use std::collections::VecDeque;

use recipes_core::{Connection, Op, Reply, WatchEvent, WatchKind};

use crate::tree::ServerWatch;

/// Which runner an op or a reply belongs to.
pub type RunnerId = usize;

/// What the server sends a session, in order.
#[derive(Debug, Clone)]
pub enum FromServer {
    /// The reply to a runner's op, sent at zxid `.2`.
    Reply(RunnerId, Reply, i64),
    /// A watch of this session fired.
    Fired {
        /// The server's zxid when it fired.
        zxid: i64,
        /// The server-side set.
        set: ServerWatch,
        /// The path.
        path: String,
        /// What happened.
        event: WatchEvent,
    },
}

/// What the client side delivers without the server.
#[derive(Debug, Clone)]
pub enum Local {
    /// A request failed on the client (lost with the connection, not sent, session ended).
    Reply(RunnerId, Reply),
    /// The connection changed.
    State(Connection),
}

/// One session.
#[derive(Debug, Default)]
pub struct Session {
    /// The server still knows it (not expired).
    pub alive: bool,
    /// A connection is up.
    pub connected: bool,
    /// Told `Lost` and not connected since.
    pub lost: bool,
    /// Requests sent, not yet applied.
    pub to_server: VecDeque<(RunnerId, Op)>,
    /// Replies and notifications on their way back.
    pub to_client: VecDeque<FromServer>,
    /// Local deliveries.
    pub local: VecDeque<Local>,
    /// Client-side watch registrations: which runner waits for which watch.
    pub watches: Vec<(WatchKind, String, RunnerId)>,
}

impl Session {
    /// A connected, live session.
    pub fn new() -> Self {
        Self {
            alive: true,
            connected: true,
            ..Self::default()
        }
    }

    /// The client kinds a server-side watch set answers.
    pub fn kinds(set: ServerWatch) -> &'static [WatchKind] {
        match set {
            ServerWatch::Data => &[WatchKind::Data, WatchKind::Exists],
            ServerWatch::Exist => &[WatchKind::Exists],
            ServerWatch::Child => &[WatchKind::Children],
        }
    }

    /// The runners waiting for a fired watch (their registrations are removed).
    pub fn take_watchers(&mut self, set: ServerWatch, path: &str) -> Vec<(WatchKind, RunnerId)> {
        let kinds = Self::kinds(set);
        let mut out = Vec::new();
        self.watches.retain(|(kind, p, runner)| {
            if p == path && kinds.contains(kind) {
                out.push((*kind, *runner));
                false
            } else {
                true
            }
        });
        out
    }
}
