//! [`StateStream`]: the session's state changes, in order.

use tokio::sync::broadcast;

use crate::session::SessionState;

/// How many state changes a [`StateStream`] buffers before it skips to newer ones.
pub(super) const STATE_STREAM_CAPACITY: usize = 64;

/// The session's state changes, in order: `Connected`, `Disconnected`, `Connected` again,
/// `Lost`, `Expired`, ... (a stream of what [`Client::state`](crate::Client::state) says now).
#[derive(Debug)]
pub struct StateStream {
    pub(super) rx: broadcast::Receiver<SessionState>,
}

impl StateStream {
    /// The next state change; `None` once the session task has stopped and every change was
    /// taken. A reader that falls more than 64 changes behind skips the oldest.
    pub async fn next(&mut self) -> Option<SessionState> {
        loop {
            match self.rx.recv().await {
                Ok(state) => return Some(state),
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }
}
