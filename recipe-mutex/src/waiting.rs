//! [`Waiting`]: what a waiting attempt tells the person on call (feature `tracing`), once
//! each: at `info`, after [`WAIT_REPORT_AFTER`], what it waits behind (the node it watches and
//! that node's session); at `warn`, that it waits through an outage (no server for the session
//! timeout: the client's local `Lost`). Without the feature it records nothing and never wakes
//! anyone.

use std::time::Duration;

use tokio::time::Instant;
use zk_client::{Client, SessionState};

/// How long a waiter waits before it says, once, what it waits behind.
pub const WAIT_REPORT_AFTER: Duration = Duration::from_secs(10);

/// A waiting attempt's reports.
#[derive(Debug, Default)]
pub(crate) struct Waiting {
    /// When it first watched another participant's node (or the queue).
    since: Option<Instant>,
    /// The node it watches now and that node's session (its ephemeral owner), if known.
    behind: Option<(String, i64)>,
    reported: bool,
    outage_warned: bool,
}

impl Waiting {
    /// It watches `path` (a predecessor's node, or the lock's directory), from `now`.
    pub(crate) fn watching(&mut self, now: Instant) {
        self.since.get_or_insert(now);
    }

    /// The node watched is `node`, owned by session `owner` (0: not ephemeral).
    pub(crate) fn behind(&mut self, node: String, owner: i64) {
        self.behind = Some((node, owner));
    }

    /// When the report is due, if one is (with the feature only).
    pub(crate) fn report_at(&self) -> Option<Instant> {
        if !cfg!(feature = "tracing") || self.reported {
            return None;
        }
        self.since?.checked_add(WAIT_REPORT_AFTER)
    }

    /// Reports what it waits behind if due at `now` (once).
    pub(crate) fn report_if_due(&mut self, client: &Client, now: Instant) {
        if self.report_at().is_none_or(|at| at > now) {
            return;
        }
        self.reported = true;
        #[cfg(feature = "tracing")]
        self.log_report(client, now);
        let _ = (client, now); // read by the log only
    }

    #[cfg(feature = "tracing")]
    fn log_report(&self, client: &Client, now: Instant) {
        let waited_ms = self
            .since
            .map_or(0, |s| now.saturating_duration_since(s).as_millis());
        let session = format!("{:#x}", client.session_id());
        match &self.behind {
            Some((node, owner)) => crate::log::info!(
                session = %session,
                waited_ms = u64::try_from(waited_ms).unwrap_or(u64::MAX),
                behind = %node,
                behind_session = %format_args!("{owner:#x}"),
                "still waiting for the lock, behind this node"
            ),
            None => crate::log::info!(
                session = %session,
                waited_ms = u64::try_from(waited_ms).unwrap_or(u64::MAX),
                "still waiting for the lock (for the queue to change)"
            ),
        }
    }

    /// The session went to `state`: at the first local `Lost`, a warning (once).
    pub(crate) fn state(&mut self, client: &Client, state: SessionState) {
        if state != SessionState::Lost || self.outage_warned {
            return;
        }
        self.outage_warned = true;
        #[cfg(feature = "tracing")]
        Self::log_outage(client);
        let _ = client; // read by the log only
    }

    #[cfg(feature = "tracing")]
    fn log_outage(client: &Client) {
        let outage = client.outage().map(|o| o.to_string()).unwrap_or_default();
        crate::log::warning!(
            session = %format_args!("{:#x}", client.session_id()),
            outage = %outage,
            "waiting through an outage: no server for the session timeout; the attempt waits \
             on (the session may survive) until a server answers, its deadline passes, or \
             the session is known expired"
        );
    }
}
