//! Pausing the code under test at a point of the test's choosing: [`pause`] gives the test's
//! half ([`Pause`]) and the code's half ([`PausePoint`]).
//!
//! - The code reaches its point and waits there; the test learns it has ([`Pause::reached`]).
//! - The test does what it wants done meanwhile (a fault, another client taking the lock),
//!   then lets the code go on ([`Pause::resume`], or dropping the [`Pause`]).

use tokio::sync::oneshot;

use crate::wait::{WAIT_BOUND, WaitError};

/// A pause: the test's half ([`Pause`]) and the half the code under test awaits
/// ([`PausePoint`]).
///
/// # Examples
///
/// A job that holds a lock while its work runs, stopped inside the work:
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() -> Result<(), zk_mem_server::WaitError> {
/// let (mut pause, point) = zk_mem_server::pause();
/// let job = tokio::spawn(async move {
///     // take the lock ...
///     point.wait().await; // the work
///     // ... write, release
///     "done"
/// });
/// pause.reached().await?; // the job is inside its work: fault it here
/// pause.resume();
/// assert_eq!(job.await.ok(), Some("done"));
/// # Ok(()) }
/// ```
pub fn pause() -> (Pause, PausePoint) {
    let (reached_tx, reached_rx) = oneshot::channel();
    let (resume_tx, resume_rx) = oneshot::channel();
    (
        Pause {
            reached: Some(reached_rx),
            resume: resume_tx,
        },
        PausePoint {
            reached: reached_tx,
            resume: resume_rx,
        },
    )
}

/// The test's half of a [`pause`]: learns when the code reached its point, and lets it go
/// on. Dropping it lets the code go on too.
#[derive(Debug)]
pub struct Pause {
    /// `None` once the point was reached.
    reached: Option<oneshot::Receiver<()>>,
    resume: oneshot::Sender<()>,
}

impl Pause {
    /// Returns once the code under test waits at its point (at once if it already did),
    /// within [`WAIT_BOUND`]. The code stays there until [`Pause::resume`].
    ///
    /// # Errors
    ///
    /// [`WaitError::Never`] when the [`PausePoint`] was dropped unreached (the code took
    /// another path, failed before it, or its task ended); [`WaitError::TimedOut`] after
    /// [`WAIT_BOUND`] (the code is stuck before its point).
    pub async fn reached(&mut self) -> Result<(), WaitError> {
        let Some(reached) = self.reached.as_mut() else {
            return Ok(());
        };
        let what = || "the code under test at its pause point".to_owned();
        match tokio::time::timeout(WAIT_BOUND, reached).await {
            Ok(Ok(())) => {
                self.reached = None;
                Ok(())
            }
            Ok(Err(_)) => Err(WaitError::Never {
                what: what(),
                why: "its PausePoint was dropped unreached".to_owned(),
            }),
            Err(_) => Err(WaitError::TimedOut {
                what: what(),
                bound: WAIT_BOUND,
            }),
        }
    }

    /// Lets the code go on past its point (now if it waits there, at once when it comes).
    pub fn resume(self) {
        let _ = self.resume.send(());
    }
}

/// The half of a [`pause`] the code under test awaits: hand it, or [`PausePoint::wait`]'s
/// future, to the code where it should stop.
#[derive(Debug)]
pub struct PausePoint {
    reached: oneshot::Sender<()>,
    resume: oneshot::Receiver<()>,
}

impl PausePoint {
    /// Tells the test this point is reached, then waits until the test resumes or drops its
    /// [`Pause`]. Not bounded: the test decides when it ends.
    pub async fn wait(self) {
        let _ = self.reached.send(());
        let _ = self.resume.await;
    }
}
