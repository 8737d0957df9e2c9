//! Bounded waits for a test: the one error they end with ([`WaitError`]), the bound they share
//! ([`WAIT_BOUND`]), and [`wait_state`], which waits for a client's session state.

use std::time::Duration;

/// How long, on tokio's clock, every wait of this crate's test helpers ([`wait_state`],
/// [`Pause::reached`](crate::Pause::reached), [`MemServer::landed`](crate::MemServer::landed))
/// lasts before it gives up with [`WaitError::TimedOut`]: ten minutes, which costs no wall
/// time on the paused clock (`#[tokio::test(start_paused = true)]`), where a wait with no
/// bound would spin the clock forward for ever.
pub const WAIT_BOUND: Duration = Duration::from_secs(600);

/// Why a wait of this crate's test helpers ended without what it waited for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WaitError {
    /// `what` did not happen within `bound` of tokio's clock. The code under test is stuck,
    /// or waits for something the test never does (a fault never lifted, a pause never
    /// reached): read `what`.
    #[error("{what}: not within {bound:?}")]
    TimedOut {
        /// What was waited for.
        what: String,
        /// How long, on tokio's clock.
        bound: Duration,
    },
    /// `what` can no longer happen: `why` says what happened instead (the session ended in
    /// another state, the client was dropped, the paused code dropped its point). Nothing to
    /// wait for: the test's expectation is wrong, or the code under test took another path.
    #[error("{what}: can no longer happen: {why}")]
    Never {
        /// What was waited for.
        what: String,
        /// What happened instead.
        why: String,
    },
}

/// Waits until `client`'s session is in state `want` (now or later), within [`WAIT_BOUND`].
///
/// It reads the state the client is in, then the latest one after each change: a state the
/// client passed through before the call, or between two reads, is not seen (a `Disconnected`
/// already followed by a reconnect). To wait for a fault's effect, call
/// [`MemServer::landed`](crate::MemServer::landed) after the fault.
///
/// # Errors
///
/// [`WaitError::Never`] when the session ends (`Expired`, `Closed`, `AuthFailed`) in another
/// state than `want`, or the client is gone; [`WaitError::TimedOut`] after [`WAIT_BOUND`].
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use zk_client::{Client, SessionState};
/// use zk_mem_server::{MemServer, ServerConfig, WaitError, wait_state};
///
/// let server = MemServer::new(ServerConfig::new(1));
/// let client = server.client(Client::builder(), 1).await?;
/// wait_state(&client, SessionState::Connected).await?;
///
/// server.expire(client.session_id());
/// wait_state(&client, SessionState::Expired).await?;
/// // The session is over: it will not connect again.
/// let never = wait_state(&client, SessionState::Connected).await;
/// assert!(matches!(never, Err(WaitError::Never { .. })));
/// # Ok(()) }
/// ```
#[cfg(feature = "client")]
pub async fn wait_state(
    client: &zk_client::Client,
    want: zk_client::SessionState,
) -> Result<(), WaitError> {
    let what = || format!("session {:#x} in state {want:?}", client.session_id());
    let mut states = client.state_watch();
    let waited = tokio::time::timeout(WAIT_BOUND, async {
        states
            .wait_for(|s| *s == want || s.is_terminal())
            .await
            .map(|s| *s)
    })
    .await;
    match waited {
        Ok(Ok(state)) if state == want => Ok(()),
        Ok(Ok(state)) => Err(WaitError::Never {
            what: what(),
            why: format!("the session ended {state:?}"),
        }),
        Ok(Err(_)) => Err(WaitError::Never {
            what: what(),
            why: "the client is gone".to_owned(),
        }),
        Err(_) => Err(WaitError::TimedOut {
            what: what(),
            bound: WAIT_BOUND,
        }),
    }
}
