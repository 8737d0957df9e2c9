//! The one async driver: runs any recipes-core [`Machine`] against a ZooKeeper session. Every
//! recipe takes its locks through it.
//!
//! It only moves things: ops out to the client (in the machine's order, pipelined), replies,
//! watch events, state changes and the time in. Time is read from the layer's one clock,
//! tokio's (so paused-time tests drive it), re-exported here. After each input the machine is checked by
//! [`Runner`](recipes_core::Runner): a machine left with nothing to wait for ends with
//! [`Error::Stuck`] instead of hanging or spinning.
//!
//! Whatever happens to the caller's future, nothing is left behind: if it is dropped before
//! the machine ends, the machine is told [`Input::Abandon`](recipes_core::Input::Abandon) and a background task
//! takes over the ops in flight (a create in flight is awaited, so its node is deleted by its exact path)
//! and then runs the cleanups the machine owes, to the end.

use std::future::Future;
use std::sync::Arc;

use bytes::Bytes;
use recipes_core::{AcquireMachine, Held, Machine, Predicate};
use tokio::sync::Notify;
use tokio::time::Instant;
use zk_client::Client;

use crate::Error;

pub mod admission;
mod cleanup;
mod ops;
mod parents;
mod run;

mod ended;

pub use crate::error::session_error;
pub use crate::layer::clock::{deadline_in, now, sleep_until, with_grace};
pub use crate::layer::node::{Acquired, RecipeKind};
use cleanup::start_releases;
pub use cleanup::{
    GuaranteedDelete, finish_release, guaranteed_delete, guaranteed_delete_on, spawn_cleanups,
};
pub use ended::{Ended, error_of};
pub use ops::{connection, zk_error};
pub use parents::create_parents;
use run::Run;
pub use run::run_cleanups;

/// How many times an attempt whose node vanished is retried with a new node (Curator's retry
/// policy does the same), within the same deadline.
const VANISHED_RETRIES: u32 = 3;

/// An attempt's turn ([`crate::layer::turns`]), kept until the driven machine is completely
/// finished, background work included; marked abandoned when the machine is handed to the
/// background, so that cancellations cannot pile up nodes faster than they are deleted.
pub use crate::layer::turns::Turn;

/// Takes a fair lock: runs attempts of `predicate` on `base` until one holds, fails, or the
/// deadline passes (`Ok(None)`). An attempt whose node vanished is retried with a new node.
///
/// Cancel-safe: if the returned future is dropped at any point, no node of ours is left (a
/// background task finishes the ops in flight and deletes what was created); `turn` is dropped
/// only once that is done.
pub async fn acquire<P>(
    client: &Client,
    base: &str,
    predicate: P,
    data: Bytes,
    deadline: Option<Instant>,
    turn: Option<Turn>,
) -> Result<Option<Acquired>, Error>
where
    P: Predicate + Clone + Send + 'static,
{
    let mut vanished = 0;
    loop {
        crate::log::debug!(
            lock = base,
            session = %format_args!("{:#x}", client.session_id()),
            "lock attempt"
        );
        // The machine is made once the attempt is admitted: waiting for a slot, an attempt
        // keeps only what it is made from.
        let make = || {
            let uuid = crate::uuid::random_uuid();
            AcquireMachine::new(
                base,
                predicate.clone(),
                &uuid,
                data.clone(),
                deadline.map(Instant::into_std),
            )
        };
        let recipe = RecipeKind::of_lock_name(predicate.lock_name());
        match take_node(client, make, recipe, turn.clone(), deadline).await {
            Err(Error::NodeVanished) if vanished < VANISHED_RETRIES => {
                crate::log::info!(
                    lock = base,
                    session = %format_args!("{:#x}", client.session_id()),
                    retry = vanished + 1,
                    "our node vanished while waiting: trying again with a new node"
                );
                vanished += 1;
            }
            other => return other,
        }
    }
}

/// Runs a machine whose outcome is a node to hold: `Ok(Some)` when held, `Ok(None)` when its
/// deadline (the machine's, given again as `deadline`) passed, the error otherwise.
/// `recipe`: the kind of node it takes, for the metrics. The machine is made by `make` once
/// the attempt is [admitted](admission). Cancel-safe as [`drive`].
pub fn take_node<'a, M>(
    client: &'a Client,
    make: impl FnOnce() -> M + Send + 'a,
    recipe: RecipeKind,
    turn: Option<Turn>,
    deadline: Option<Instant>,
) -> impl Future<Output = Result<Option<Acquired>, Error>> + Send + 'a
where
    M: Machine<Output = Held> + Send + 'static,
{
    let options = DriveOptions {
        turn,
        wake: None,
        deadline,
        recipe,
    };
    drive_then(client, make, options, move |outcome, error| match outcome {
        Ok(Held { path, czxid }) => Ok(Some(Acquired {
            path: path.into(),
            czxid,
            session_id: client.session_id(),
        })),
        Err(Ended::TimedOut) => Ok(None),
        Err(ended) => Err(error_of(client, ended, error)),
    })
}

/// What [`drive`] is given besides the machine.
#[derive(Default)]
pub struct DriveOptions {
    /// Kept alive until the machine is completely finished, background work included.
    pub turn: Option<Turn>,
    /// Gives the machine [`Input::Wake`](recipes_core::Input::Wake) each time it is notified (`notify_one`): something
    /// outside ZooKeeper changed, such as a semaphore's shared lease count.
    pub wake: Option<Arc<Notify>>,
    /// The machine's deadline: a machine that timed out waits for its cleanups until this
    /// deadline and one [`recipes_core::DEADLINE_GRACE`] at most (the machine itself ends
    /// within that too), so the whole attempt ends within its deadline and one grace.
    pub deadline: Option<Instant>,
    /// The recipe the machine takes a lock of: the `recipe` label of its metrics (feature
    /// `metrics`).
    pub recipe: RecipeKind,
}

impl std::fmt::Debug for DriveOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DriveOptions")
            .field("turn", &self.turn.is_some())
            .field("wake", &self.wake.is_some())
            .field("deadline", &self.deadline)
            .field("recipe", &self.recipe)
            .finish()
    }
}

/// Runs the machine `make` makes (once the attempt is [admitted](admission)) until it has
/// an outcome. If it holds, its output (and the deletes of what
/// it [releases](Machine::releases) have been started); if not, the cleanups it
/// owes have been started in the background (for a timeout, awaited until the deadline and
/// one [`recipes_core::DEADLINE_GRACE`] at most, so that an attempt that gave up has usually
/// deleted its node when it returns, as in Curator, and still returns within its deadline and
/// one grace). The client's error for the last op that failed comes with it.
///
/// Cancel-safe, see the module docs.
pub fn drive<'a, M>(
    client: &'a Client,
    make: impl FnOnce() -> M + Send + 'a,
    options: DriveOptions,
) -> impl Future<Output = (Result<M::Output, Ended>, Option<zk_client::Error>)> + Send + 'a
where
    M: Machine + Send + 'static,
    M::Output: Clone + std::fmt::Debug + Send + 'static,
{
    drive_then(client, make, options, |outcome, error| (outcome, error))
}

/// [`drive`], its outcome and error given to `then`.
///
/// [`drive`] and [`take_node`] are not `async fn`s but return this future as it is, `then`
/// mapping its outcome: an `async fn` keeps its arguments in its future for as long as it
/// runs, so each level wrapping this one would hold another copy of the machine (several
/// hundred bytes) for every lock in flight.
///
/// The attempt first waits to be [admitted](admission) (until its deadline at most); only then
/// are its machine made and its run, a few kilobytes, allocated, in a box of its own, so that
/// attempts waiting for a slot keep only what the machine is made from.
async fn drive_then<'a, M, T>(
    client: &'a Client,
    make: impl FnOnce() -> M + Send + 'a,
    options: DriveOptions,
    then: impl FnOnce(Result<M::Output, Ended>, Option<zk_client::Error>) -> T + Send + 'a,
) -> T
where
    M: Machine + Send + 'static,
    M::Output: Clone + std::fmt::Debug + Send + 'static,
{
    let slot = admission::admit(client, options.deadline).await;
    Box::pin(drive_admitted(client, make(), options, slot, then)).await
}

/// [`drive_then`] once admitted: `slot` (if any) is given back as soon as the run has nothing
/// in flight.
async fn drive_admitted<'a, M, T>(
    client: &'a Client,
    machine: M,
    options: DriveOptions,
    slot: Option<admission::Slot>,
    then: impl FnOnce(Result<M::Output, Ended>, Option<zk_client::Error>) -> T + Send + 'a,
) -> T
where
    M: Machine + Send + 'static,
    M::Output: Clone + std::fmt::Debug + Send + 'static,
{
    let mut run = Run::new(client.clone(), machine);
    run.slot = slot;
    run.turn = options.turn;
    run.wake = options.wake;
    run.recipe = options.recipe;
    let deadline = options.deadline;
    run.start();
    run.until_outcome().await;
    run.slot = None;
    let error = run.last_error.clone();
    let outcome = match run.outcome() {
        // At the deadline, "busy" is only known with a server: without one it is an outage.
        Err(Ended::TimedOut) => match client.outage() {
            Some(outage) => Err(Ended::Unavailable(outage)),
            None => Err(Ended::TimedOut),
        },
        other => other,
    };
    #[cfg(feature = "tracing")]
    log_outcome(client, &outcome, error.as_ref(), run.waited);
    crate::metrics::attempt_ended(
        run.recipe,
        run.since,
        match &outcome {
            Ok(_) => crate::metrics::Outcome::Acquired,
            Err(Ended::TimedOut) => crate::metrics::Outcome::TimedOut,
            Err(_) => crate::metrics::Outcome::Failed,
        },
    );
    match &outcome {
        Ok(_) => {
            // Scaffolding (the semaphore's inner lock) goes now, guaranteed, not awaited.
            let releases = run
                .runner
                .as_ref()
                .map(|r| r.machine().releases())
                .unwrap_or_default();
            start_releases(client, releases);
        }
        Err(Ended::TimedOut | Ended::Unavailable(_)) => {
            let done = run.hand_off();
            let grace = with_grace(Instant::now());
            let until = deadline.map_or(grace, with_grace).min(grace);
            let grace = tokio::time::sleep_until(until);
            // Both arms end the wait and nothing else: the order is behaviour-neutral, and a
            // fixed one keeps the simulator's schedules replayable (an unbiased `select!`
            // draws from the runtime's random generator).
            tokio::select! {
                biased;
                _ = done => {}
                _ = grace => {}
            }
        }
        Err(_) => drop(run.hand_off()),
    }
    then(outcome, error)
}

/// Logs how a driven machine ended: each node held (with its lock, session, fencing token and
/// whether it waited behind a predecessor whose release handed it over), a timeout, a failure.
#[cfg(feature = "tracing")]
fn log_outcome<O: std::fmt::Debug + 'static>(
    client: &Client,
    outcome: &Result<O, Ended>,
    error: Option<&zk_client::Error>,
    waited: bool,
) {
    use recipes_core::Held;
    // Formatted only where an event is recorded (nothing is allocated on a cycle otherwise).
    let session = client.session_id();
    match outcome {
        Ok(output) => {
            let any: &dyn std::any::Any = output;
            let held: &[Held] = match (any.downcast_ref::<Held>(), any.downcast_ref::<Vec<Held>>())
            {
                (Some(one), _) => std::slice::from_ref(one),
                (None, Some(many)) => many,
                (None, None) => &[],
            };
            for h in held {
                let (lock, node) = h.path.rsplit_once('/').unwrap_or(("", h.path.as_str()));
                crate::log::info!(
                    lock,
                    node,
                    session = %format_args!("{session:#x}"),
                    fencing_token = h.czxid,
                    handed_over = waited,
                    "lock held"
                );
            }
            if !any.is::<Held>() && !any.is::<Vec<Held>>() {
                crate::log::debug!(session = %format_args!("{session:#x}"), output = ?output, "done");
            }
        }
        Err(Ended::TimedOut) => {
            crate::log::info!(session = %format_args!("{session:#x}"), "timed out: giving up the attempt")
        }
        Err(Ended::Unavailable(outage)) => {
            crate::log::warning!(
                session = %format_args!("{session:#x}"),
                outage = %outage,
                "deadline passed with no server: giving up the attempt (an outage, not a busy lock)"
            )
        }
        Err(ended) => crate::log::warning!(
            session = %format_args!("{session:#x}"),
            ended = ?ended,
            error = ?error,
            "attempt failed"
        ),
    }
}
