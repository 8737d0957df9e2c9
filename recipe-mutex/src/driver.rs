//! The one async driver: runs any recipes-core [`Machine`] against a ZooKeeper session. Every
//! recipe takes its locks through it; it is exported for the recipe crates, not for users.
//!
//! It only moves things: ops out to the client (in the machine's order, pipelined), replies,
//! watch events, state changes and the time in. Time is read here and only here, from tokio's
//! clock (so paused-time tests drive it). After each input the machine is checked by
//! [`Runner`]: a machine left with nothing to wait for ends with [`Error::Stuck`] instead of
//! hanging or spinning.
//!
//! Whatever happens to the caller's future, nothing is left behind: if it is dropped before
//! the machine ends, the machine is told [`Input::Abandon`] and a background task takes over
//! the ops in flight (a create in flight is awaited, so its node is deleted by its exact path)
//! and then runs the cleanups the machine owes, to the end.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use recipes_core::queue::Queue;
use recipes_core::{
    AcquireMachine, Cleanup, CleanupMachine, Connection, Failure, Held, Input, Machine, NodeMode,
    Op, Outcome, Predicate, Reply, Runner, Stuck, WatchEvent, WatchKind, ZkError,
};
use tokio::sync::{Notify, oneshot};
use tokio::time::Instant;
use zk_client::{Client, CreateMode, CreateOptions, OneshotWatcher, SessionState, StateStream};

use crate::Error;
use crate::waiting::Waiting;

/// A lock node we hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Acquired {
    /// Its full path.
    pub path: String,
    /// Its creation zxid (the fencing token).
    pub czxid: i64,
    /// The session it belongs to.
    pub session_id: i64,
}

/// How many times an attempt whose node vanished is retried with a new node (Curator's retry
/// policy does the same), within the same deadline.
const VANISHED_RETRIES: u32 = 3;

/// The clock: tokio's, as a `std` instant for the machines.
pub fn now() -> std::time::Instant {
    Instant::now().into_std()
}

/// The deadline `timeout` from now, for the surfaces' `try_*_for(timeout)`; `None` (no
/// deadline: wait as long as it takes) when it is too far to be an instant, as
/// `Duration::MAX`, which many callers write for "forever", is.
pub fn deadline_in(timeout: std::time::Duration) -> Option<Instant> {
    Instant::now().checked_add(timeout)
}

/// `deadline` plus one [`DEADLINE_GRACE`](recipes_core::DEADLINE_GRACE), saturating: at the
/// end of what an instant can hold, the deadline itself.
pub fn with_grace(deadline: Instant) -> Instant {
    deadline
        .checked_add(recipes_core::DEADLINE_GRACE)
        .unwrap_or(deadline)
}

/// An attempt's turn ([`crate::turns`]), kept until the driven machine is completely
/// finished, background work included; marked abandoned when the machine is handed to the
/// background, so that cancellations cannot pile up nodes faster than they are deleted.
pub use crate::turns::Turn;

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
        let uuid = crate::uuid::random_uuid();
        let machine = AcquireMachine::new(
            base,
            predicate.clone(),
            &uuid,
            data.clone(),
            deadline.map(Instant::into_std),
        );
        match take_node(client, machine, turn.clone(), deadline).await {
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
/// Cancel-safe as [`drive`].
pub async fn take_node<M>(
    client: &Client,
    machine: M,
    turn: Option<Turn>,
    deadline: Option<Instant>,
) -> Result<Option<Acquired>, Error>
where
    M: Machine<Output = Held> + Send + 'static,
{
    let options = DriveOptions {
        turn,
        wake: None,
        deadline,
    };
    let (outcome, error) = drive(client, machine, options).await;
    match outcome {
        Ok(Held { path, czxid }) => Ok(Some(Acquired {
            path,
            czxid,
            session_id: client.session_id(),
        })),
        Err(Ended::TimedOut) => Ok(None),
        Err(ended) => Err(error_of(client, ended, error)),
    }
}

/// What [`drive`] is given besides the machine.
#[derive(Default)]
pub struct DriveOptions {
    /// Kept alive until the machine is completely finished, background work included.
    pub turn: Option<Turn>,
    /// Gives the machine [`Input::Wake`] each time it is notified (`notify_one`): something
    /// outside ZooKeeper changed, such as a semaphore's shared lease count.
    pub wake: Option<Arc<Notify>>,
    /// The machine's deadline: a machine that timed out waits for its cleanups until this
    /// deadline and one [`recipes_core::DEADLINE_GRACE`] at most (the machine itself ends
    /// within that too), so the whole attempt ends within its deadline and one grace.
    pub deadline: Option<Instant>,
}

impl std::fmt::Debug for DriveOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DriveOptions")
            .field("turn", &self.turn.is_some())
            .field("wake", &self.wake.is_some())
            .field("deadline", &self.deadline)
            .finish()
    }
}

/// How a driven machine ended without holding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    /// Its deadline passed while a server was connected: the lock was busy.
    TimedOut,
    /// Its deadline passed while no server was connected: busy or free, nobody can say.
    Unavailable(zk_client::Outage),
    /// It failed.
    Failed(Failure),
    /// It was left with nothing to wait for (a bug in the machine, caught).
    Stuck(Stuck),
}

/// The error for a machine that ended without holding; `error` is the client's error for the
/// last op that failed.
pub fn error_of(client: &Client, ended: Ended, error: Option<zk_client::Error>) -> Error {
    match ended {
        Ended::TimedOut => Error::TimedOut,
        Ended::Unavailable(outage) => Error::Unavailable(outage),
        Ended::Stuck(stuck) => Error::Stuck(stuck),
        Ended::Failed(failure) => match failure {
            Failure::SessionExpired => session_error(client.state()),
            Failure::NodeVanished => Error::NodeVanished,
            Failure::ParentMissing => Error::ParentMissing,
            Failure::SequenceWrapped => Error::SequenceWrapped,
            Failure::Abandoned => Error::SessionLost,
            Failure::Zk(_) => match error {
                Some(zk_client::Error::SessionExpired) => Error::SessionExpired,
                Some(e) => Error::Zk(e),
                None => session_error(client.state()),
            },
        },
    }
}

/// The error for a session in `state` that can no longer be used (or is lost).
pub fn session_error(state: SessionState) -> Error {
    match state {
        SessionState::Lost => Error::SessionLost,
        SessionState::AuthFailed => Error::Zk(zk_client::Error::AuthFailed),
        _ => Error::SessionExpired,
    }
}

/// Runs `machine` until it has an outcome. If it holds, its output (and the deletes of what
/// it [releases](Machine::releases) have been started); if not, the cleanups it
/// owes have been started in the background (for a timeout, awaited until the deadline and
/// one [`recipes_core::DEADLINE_GRACE`] at most, so that an attempt that gave up has usually
/// deleted its node when it returns, as in Curator, and still returns within its deadline and
/// one grace). The client's error for the last op that failed comes with it.
///
/// Cancel-safe, see the module docs.
pub async fn drive<M>(
    client: &Client,
    machine: M,
    options: DriveOptions,
) -> (Result<M::Output, Ended>, Option<zk_client::Error>)
where
    M: Machine + Send + 'static,
    M::Output: Clone + std::fmt::Debug + 'static,
{
    let mut run = Run::new(client.clone(), machine);
    run.turn = options.turn;
    run.wake = options.wake;
    run.start();
    run.until_outcome().await;
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
            let until = options.deadline.map_or(grace, with_grace).min(grace);
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
    (outcome, error)
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
    let session = format!("{:#x}", client.session_id());
    match outcome {
        Ok(output) => {
            let any: &dyn std::any::Any = output;
            let held: Vec<&Held> =
                match (any.downcast_ref::<Held>(), any.downcast_ref::<Vec<Held>>()) {
                    (Some(one), _) => vec![one],
                    (None, Some(many)) => many.iter().collect(),
                    (None, None) => Vec::new(),
                };
            for h in held {
                let (lock, node) = h.path.rsplit_once('/').unwrap_or(("", h.path.as_str()));
                crate::log::info!(
                    lock,
                    node,
                    session = %session,
                    fencing_token = h.czxid,
                    handed_over = waited,
                    "lock held"
                );
            }
            if !any.is::<Held>() && !any.is::<Vec<Held>>() {
                crate::log::debug!(session = %session, output = ?output, "done");
            }
        }
        Err(Ended::TimedOut) => {
            crate::log::info!(session = %session, "timed out: giving up the attempt")
        }
        Err(Ended::Unavailable(outage)) => {
            crate::log::warning!(
                session = %session,
                outage = %outage,
                "deadline passed with no server: giving up the attempt (an outage, not a busy lock)"
            )
        }
        Err(ended) => crate::log::warning!(
            session = %session,
            ended = ?ended,
            error = ?error,
            "attempt failed"
        ),
    }
}

/// Starts what a machine that holds must release ([`Machine::releases`]): deletes are sent
/// now (ahead of whatever the caller sends next) and guaranteed.
fn start_releases(client: &Client, releases: Vec<Cleanup>) {
    let mut rest = Vec::new();
    for release in releases {
        match release {
            // Not waited for here: each goes on in the background.
            Cleanup::Delete(path) => drop(guaranteed_delete(client, path, |_| {})),
            other => rest.push(other),
        }
    }
    if !rest.is_empty() {
        drop(spawn_cleanups(client, rest));
    }
}

/// Runs `cleanups` to the end in the background (guaranteed deletes: retried across connection
/// loss and transient errors until done or the session ends). The receiver says when they are
/// done, with the error of any cleanup that had to be given up; dropping it changes nothing.
pub fn spawn_cleanups(
    client: &Client,
    cleanups: Vec<Cleanup>,
) -> oneshot::Receiver<Result<(), Error>> {
    let (tx, rx) = oneshot::channel();
    if cleanups.is_empty() {
        let _ = tx.send(Ok(()));
        return rx;
    }
    let client = client.clone();
    spawn(async move {
        let result = run_cleanups(&client, cleanups).await;
        let _ = tx.send(result);
    });
    rx
}

/// Runs `cleanups` to the end (see [`spawn_cleanups`]).
pub async fn run_cleanups(client: &Client, cleanups: Vec<Cleanup>) -> Result<(), Error> {
    if cleanups.is_empty() {
        return Ok(());
    }
    crate::log::debug!(
        session = %format_args!("{:#x}", client.session_id()),
        cleanups = ?cleanups,
        "cleanup"
    );
    let mut run = Run::new(client.clone(), CleanupMachine::new(cleanups));
    run.abandon_on_drop = false;
    run.start();
    run.until_outcome().await;
    let error = run.last_error.clone();
    match run.outcome() {
        Ok(()) => Ok(()),
        Err(ended) => {
            let e = error_of(client, ended, error);
            crate::log::warning!(
                session = %format_args!("{:#x}", client.session_id()),
                error = %e,
                "cleanup given up"
            );
            Err(e)
        }
    }
}

/// Deletes `path` with a guarantee: the delete is sent now (so it keeps its place ahead of
/// whatever the caller sends next), and if it fails for anything but a final error it is
/// retried until done or the session ends. `done` is called with how it ended, and the
/// returned future gives the same result when awaited to the end.
///
/// The wait runs where the returned [`GuaranteedDelete`] is awaited (a release awaited by its
/// caller costs no task); dropped before it ends, it goes on in a background task on the
/// current runtime (or, without one, `done` is called at once with [`Error::NoRuntime`] and
/// only the session's end removes the node: use [`guaranteed_delete_on`] where the caller may
/// be off the runtime).
///
/// A delete that fails because the session ended gives the session's error: the node went
/// with it, but the caller no longer held anything when it asked.
pub fn guaranteed_delete(
    client: &Client,
    path: String,
    done: impl FnOnce(&Result<(), Error>) + Send + 'static,
) -> GuaranteedDelete {
    guaranteed_delete_on(None, client, path, done)
}

/// [`guaranteed_delete`] whose background part runs on `runtime` (the runtime the node was
/// taken on) when the caller is outside any runtime: a guard dropped on a plain thread, after
/// the runtime's `block_on` returned, still has its node deleted, retried across an outage.
pub fn guaranteed_delete_on(
    runtime: Option<&tokio::runtime::Handle>,
    client: &Client,
    path: String,
    done: impl FnOnce(&Result<(), Error>) + Send + 'static,
) -> GuaranteedDelete {
    crate::log::info!(
        node = %path,
        session = %format_args!("{:#x}", client.session_id()),
        "releasing: delete sent"
    );
    let first = client.delete(path.as_str(), None);
    let runtime = runtime.filter(|_| !crate::plant::active(crate::plant::Plant::NoRuntimeRetry));
    let handle = match tokio::runtime::Handle::try_current() {
        Ok(handle) => handle,
        Err(_) => match runtime {
            Some(handle) => handle.clone(),
            None => {
                let result = Err(Error::NoRuntime);
                done(&result);
                return GuaranteedDelete {
                    wait: None,
                    result: Some(result),
                };
            }
        },
    };
    let client = client.clone();
    let task = async move {
        let result = match first.await {
            Ok(()) | Err(zk_client::Error::NoNode) => Ok(()),
            Err(zk_client::Error::SessionExpired | zk_client::Error::Closed) => {
                Err(session_error(client.state()))
            }
            Err(e) if zk_error(&e) == ZkError::Other => Err(Error::Zk(e)),
            Err(e) => {
                crate::log::info!(
                    node = %path,
                    session = %format_args!("{:#x}", client.session_id()),
                    error = %e,
                    "the release's delete failed: retrying until it is done or the session ends"
                );
                let _ = e; // read by the log only
                run_cleanups(&client, vec![Cleanup::Delete(path)]).await
            }
        };
        done(&result);
        result
    };
    GuaranteedDelete {
        wait: Some((Box::pin(task), handle)),
        result: None,
    }
}

/// A delete started by [`guaranteed_delete`]: awaiting it runs it to its end here and gives
/// how it ended; dropping it before that hands the rest to a background task, so the delete
/// finishes either way.
#[must_use = "dropped, the delete goes on in a background task; await it to wait here"]
pub struct GuaranteedDelete {
    /// The wait still to run, and the runtime it was started on (a drop outside that
    /// runtime's context still hands it there). `None` once done, or without a runtime.
    wait: Option<(BoxedWait, tokio::runtime::Handle)>,
    /// How it ended, when that was known at once (no runtime).
    result: Option<Result<(), Error>>,
}

/// The rest of a guaranteed delete: its reply, retries, and the `done` call.
type BoxedWait = Pin<Box<dyn Future<Output = Result<(), Error>> + Send>>;

impl Future for GuaranteedDelete {
    type Output = Result<(), Error>;

    /// How the delete ended (polled again after that: `Ok(())`).
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        if let Some((task, _)) = self.wait.as_mut() {
            let Poll::Ready(result) = task.as_mut().poll(cx) else {
                return Poll::Pending;
            };
            self.wait = None;
            return Poll::Ready(result);
        }
        Poll::Ready(self.result.take().unwrap_or(Ok(())))
    }
}

impl Drop for GuaranteedDelete {
    fn drop(&mut self) {
        if let Some((task, handle)) = self.wait.take() {
            drop(handle.spawn(task));
        }
    }
}

/// Awaits a release's `delete` to its result, unless the session ends first (or has
/// already ended): then returns that reason at once (the node goes with the session; the
/// delete goes on in the background meanwhile). A session locally lost (no server for its
/// timeout) may still come back: the release waits on, and the next state decides.
pub async fn finish_release(client: &Client, delete: GuaranteedDelete) -> Result<(), Error> {
    let mut states = client.state_watch();
    let state = *states.borrow_and_update();
    if state.is_terminal() {
        drop(delete);
        return Err(session_error(state));
    }
    let ended = async {
        match states.wait_for(|s| s.is_terminal()).await {
            Ok(s) => session_error(*s),
            Err(_) => Error::Zk(zk_client::Error::Closed),
        }
    };
    tokio::select! {
        biased;
        result = delete => result,
        e = ended => Err(e),
    }
}

/// Spawns `task` on the current runtime, else on `runtime` (the one the work started on).
fn spawn_on(
    runtime: Option<&tokio::runtime::Handle>,
    task: impl Future<Output = ()> + Send + 'static,
) {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => drop(handle.spawn(task)),
        Err(_) => {
            if let Some(handle) = runtime {
                drop(handle.spawn(task));
            }
            // Else nothing can run it: the session's end (the process's) removes our
            // ephemeral nodes.
        }
    }
}

fn spawn(task: impl Future<Output = ()> + Send + 'static) {
    spawn_on(None, task);
}

/// What an op's future gives: the reply, the watcher it left, the client's error.
struct Completed {
    reply: Reply,
    watch: Option<(WatchKind, String, OneshotWatcher)>,
    error: Option<zk_client::Error>,
    /// For a watched node that exists: its path and session (for the waiting report).
    behind: Option<(String, i64)>,
}

type OpFuture = Pin<Box<dyn Future<Output = Completed> + Send>>;

struct InFlight {
    future: OpFuture,
    done: Option<Completed>,
}

/// One machine being driven.
struct Run<M: Machine + Send + 'static> {
    client: Client,
    runner: Option<Runner<M>>,
    /// Ops sent, oldest first (an attempt has one to three at a time: inline).
    in_flight: Queue<InFlight, 4>,
    watches: Vec<(WatchKind, String, OneshotWatcher)>,
    states: StateStream,
    last_error: Option<zk_client::Error>,
    stuck: Option<Stuck>,
    /// Whether dropping an unfinished run hands it to the background (not for cleanups, which
    /// are already the background).
    abandon_on_drop: bool,
    /// Kept until everything, background work included, is done.
    turn: Option<Turn>,
    wake: Option<Arc<Notify>>,
    /// The runtime the run started on: where its background work goes if it is dropped off
    /// any runtime.
    runtime: Option<tokio::runtime::Handle>,
    /// Whether the machine watched a node (waited behind a predecessor): a hold after that
    /// was handed over by the predecessor's release.
    waited: bool,
    /// What a waiting attempt reports to the logs.
    waiting: Waiting,
}

impl<M: Machine + Send + 'static> Run<M> {
    fn new(client: Client, machine: M) -> Self {
        let states = client.state_stream();
        Self {
            client,
            runner: Some(Runner::new(machine)),
            in_flight: Queue::new(),
            watches: Vec::new(),
            states,
            last_error: None,
            stuck: None,
            abandon_on_drop: true,
            turn: None,
            wake: None,
            runtime: tokio::runtime::Handle::try_current().ok(),
            waited: false,
            waiting: Waiting::default(),
        }
    }

    fn start(&mut self) {
        let connection = connection(self.client.state());
        if connection != Connection::Connected {
            self.feed(Input::Connection(connection));
        }
        self.feed(Input::Start);
    }

    fn feed(&mut self, input: Input) {
        let Some(runner) = self.runner.as_mut() else {
            return;
        };
        if let Err(stuck) = runner.handle(now(), input) {
            self.stuck.get_or_insert(stuck);
        }
        while let Some(op) = runner.poll_op() {
            if let Op::GetData { path, watch: true }
            | Op::Exists { path, watch: true }
            | Op::Children { path, watch: true } = &op
            {
                crate::log::debug!(
                    path = %path,
                    session = %format_args!("{:#x}", self.client.session_id()),
                    "waiting: watching a node"
                );
                let _ = path; // read by the log only
                self.waited = true;
                self.waiting.watching(Instant::now());
            }
            self.in_flight.push_back(InFlight {
                future: op_future(self.client.clone(), op),
                done: None,
            });
        }
    }

    fn is_over(&self) -> bool {
        self.stuck.is_some()
            || self
                .runner
                .as_ref()
                .is_none_or(|r| r.machine().outcome().is_some())
    }

    fn outcome(&self) -> Result<M::Output, Ended>
    where
        M::Output: Clone,
    {
        if let Some(stuck) = &self.stuck {
            return Err(Ended::Stuck(stuck.clone()));
        }
        match self.runner.as_ref().and_then(|r| r.machine().outcome()) {
            Some(Outcome::Held(output)) => Ok(output.clone()),
            Some(Outcome::TimedOut) => Err(Ended::TimedOut),
            Some(Outcome::Failed(f)) => Err(Ended::Failed(*f)),
            None => Err(Ended::Failed(Failure::Abandoned)),
        }
    }

    /// Feeds inputs as they come until the machine has an outcome (or is stuck).
    async fn until_outcome(&mut self) {
        while !self.is_over() {
            let deadline = self
                .runner
                .as_ref()
                .and_then(|r| r.poll_timeout())
                .map(Instant::from_std);
            let report_at = self.waiting.report_at();
            let wake_at = match (deadline, report_at) {
                (Some(d), Some(r)) => Some(d.min(r)),
                (d, r) => d.or(r),
            };
            tokio::select! {
                biased;
                done = next_reply(&mut self.in_flight) => self.on_completed(done),
                fired = next_watch(&mut self.watches) => {
                    let (kind, path, event) = fired;
                    crate::log::debug!(path = %path, event = ?event, "watch fired");
                    self.feed(Input::Watch { kind, path, event });
                }
                state = self.states.next() => {
                    let state = state.unwrap_or(SessionState::Closed);
                    if state.is_terminal() {
                        self.watches.clear();
                    }
                    self.waiting.state(&self.client, state);
                    self.feed(Input::Connection(connection(state)));
                }
                _ = sleep_until(wake_at) => {
                    let now = Instant::now();
                    self.waiting.report_if_due(&self.client, now);
                    if deadline.is_some_and(|d| d <= now) {
                        self.feed(Input::Timeout);
                    }
                }
                _ = notified(self.wake.as_deref()) => self.feed(Input::Wake),
            }
        }
    }

    fn on_completed(&mut self, done: Completed) {
        if let Some((node, owner)) = done.behind {
            self.waiting.behind(node, owner);
        }
        if let Some(watch) = done.watch {
            self.watches.push(watch);
        }
        if done.error.is_some() {
            self.last_error = done.error;
        }
        self.feed(Input::Reply(done.reply));
    }

    /// Waits for every op in flight and feeds its reply (for the cleanups' sake).
    async fn drain(&mut self) {
        while !self.in_flight.is_empty() {
            let done = next_reply(&mut self.in_flight).await;
            self.on_completed(done);
        }
    }

    /// Hands what is left to the background: the replies still in flight, then the cleanups
    /// owed. The receiver says when that is done.
    fn hand_off(&mut self) -> oneshot::Receiver<()> {
        let (tx, rx) = oneshot::channel();
        let Some(runner) = self.runner.take() else {
            let _ = tx.send(());
            return rx;
        };
        let mut rest = Run {
            client: self.client.clone(),
            runner: Some(runner),
            in_flight: std::mem::take(&mut self.in_flight),
            watches: Vec::new(),
            states: self.client.state_stream(),
            last_error: None,
            stuck: None,
            abandon_on_drop: false,
            turn: self.turn.take(),
            wake: None,
            runtime: self.runtime.clone(),
            waited: self.waited,
            waiting: Waiting::default(),
        };
        if let Some(turn) = &rest.turn {
            turn.abandon();
        }
        crate::log::debug!(
            session = %format_args!("{:#x}", self.client.session_id()),
            in_flight = rest.in_flight.len(),
            "attempt abandoned: its replies and cleanups go on in the background"
        );
        rest.feed(Input::Abandon);
        spawn_on(self.runtime.as_ref(), async move {
            rest.drain().await;
            let cleanups = rest
                .runner
                .as_ref()
                .map(|r| r.machine().cleanups())
                .unwrap_or_default();
            let _ = run_cleanups(&rest.client, cleanups).await;
            drop(rest);
            let _ = tx.send(());
        });
        rx
    }
}

impl<M: Machine + Send + 'static> Drop for Run<M> {
    fn drop(&mut self) {
        let held = matches!(
            self.runner.as_ref().and_then(|r| r.machine().outcome()),
            Some(Outcome::Held(_))
        );
        let owes = self
            .runner
            .as_ref()
            .is_some_and(|r| !r.machine().cleanups().is_empty() || r.machine().outcome().is_none());
        if self.abandon_on_drop && (owes || (!held && !self.in_flight.is_empty())) {
            drop(self.hand_off());
        } else if !self.in_flight.is_empty() {
            // Ops still in flight whose replies nobody needs (a held attempt's stray deletes):
            // let them reach the server.
            let mut in_flight = std::mem::take(&mut self.in_flight);
            spawn_on(self.runtime.as_ref(), async move {
                while !in_flight.is_empty() {
                    next_reply(&mut in_flight).await;
                }
            });
        }
    }
}

/// The next reply, in issue order. Every op in flight is polled, so each request is sent as
/// soon as it is issued (the first poll of an op's future sends it), in order.
async fn next_reply(in_flight: &mut Queue<InFlight, 4>) -> Completed {
    std::future::poll_fn(|cx: &mut Context<'_>| {
        for op in in_flight.iter_mut() {
            if op.done.is_none() {
                if let Poll::Ready(done) = op.future.as_mut().poll(cx) {
                    op.done = Some(done);
                }
            }
        }
        match in_flight.front_mut().and_then(|op| op.done.take()) {
            Some(done) => {
                in_flight.pop_front();
                Poll::Ready(done)
            }
            None => Poll::Pending,
        }
    })
    .await
}

/// The next watch to fire.
async fn next_watch(
    watches: &mut Vec<(WatchKind, String, OneshotWatcher)>,
) -> (WatchKind, String, WatchEvent) {
    std::future::poll_fn(|cx: &mut Context<'_>| {
        for i in 0..watches.len() {
            let Some((_, _, watcher)) = watches.get_mut(i) else {
                break;
            };
            if let Poll::Ready(event) = Pin::new(watcher).poll(cx) {
                let (kind, path, _) = watches.swap_remove(i);
                return Poll::Ready((kind, path, watch_event(event.event_type)));
            }
        }
        Poll::Pending
    })
    .await
}

fn watch_event(event: zk_client::EventType) -> WatchEvent {
    use zk_client::EventType;
    match event {
        EventType::NodeCreated => WatchEvent::Created,
        EventType::NodeDeleted => WatchEvent::Deleted,
        EventType::NodeDataChanged => WatchEvent::DataChanged,
        EventType::NodeChildrenChanged => WatchEvent::ChildrenChanged,
        _ => WatchEvent::SessionEnded,
    }
}

async fn notified(wake: Option<&Notify>) {
    match wake {
        Some(n) => n.notified().await,
        None => std::future::pending().await,
    }
}

/// Sleeps until `deadline`, or forever without one.
pub async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// What a machine knows of a session state.
pub fn connection(state: SessionState) -> Connection {
    match state {
        SessionState::Connected => Connection::Connected,
        SessionState::ConnectedReadOnly => Connection::ReadOnly,
        SessionState::Lost if crate::plant::active(crate::plant::Plant::LostEndsWaiters) => {
            Connection::Expired
        }
        SessionState::Lost => Connection::Lost,
        SessionState::Connecting | SessionState::Disconnected => Connection::Disconnected,
        _ => Connection::Expired,
    }
}

/// The kind of failure a machine tells apart.
pub fn zk_error(e: &zk_client::Error) -> ZkError {
    use zk_client::Error as E;
    match e {
        E::NoNode => ZkError::NoNode,
        E::NodeExists => ZkError::NodeExists,
        E::ConnectionLoss => ZkError::ConnectionLoss,
        E::NotConnected => ZkError::NotSent,
        E::SessionExpired | E::Closed | E::AuthFailed => ZkError::SessionExpired,
        E::SessionMoved | E::Throttled | E::RequestTimeout | E::NotReadOnly => ZkError::Transient,
        _ => ZkError::Other,
    }
}

fn failed(e: zk_client::Error) -> Completed {
    Completed {
        reply: Reply::Failed(zk_error(&e)),
        watch: None,
        error: Some(e),
        behind: None,
    }
}

fn ok(reply: Reply) -> Completed {
    Completed {
        reply,
        watch: None,
        error: None,
        behind: None,
    }
}

/// The options of a lock node's create (constants: an open ACL is borrowed).
fn create_options(mode: NodeMode) -> &'static CreateOptions {
    static SEQUENTIAL: CreateOptions = CreateOptions::new(CreateMode::EphemeralSequential);
    static EXACT: CreateOptions = CreateOptions::new(CreateMode::Ephemeral);
    match mode {
        NodeMode::EphemeralSequential => &SEQUENTIAL,
        NodeMode::Ephemeral => &EXACT,
    }
}

fn op_future(client: Client, op: Op) -> OpFuture {
    Box::pin(async move {
        match op {
            Op::Create { path, mode, data } => {
                match client
                    .create_with_stat(path, &data, create_options(mode))
                    .await
                {
                    Ok((path, stat)) => ok(Reply::Created {
                        path,
                        czxid: stat.czxid,
                    }),
                    Err(e) => failed(e),
                }
            }
            Op::Children { path, watch: false } => match client.get_children(path).await {
                Ok(children) => ok(Reply::Children(children)),
                Err(e) => failed(e),
            },
            Op::Children { path, watch: true } => {
                match client.get_children_and_watch(&path).await {
                    Ok((children, watcher)) => Completed {
                        reply: Reply::Children(children),
                        watch: Some((WatchKind::Children, path, watcher)),
                        error: None,
                        behind: None,
                    },
                    Err(e) => failed(e),
                }
            }
            Op::GetData { path, watch: false } => match client.get_data(path).await {
                Ok((data, stat)) => ok(Reply::Data {
                    data,
                    czxid: stat.czxid,
                }),
                Err(e) => failed(e),
            },
            Op::GetData { path, watch: true } => match client.get_data_and_watch(&path).await {
                Ok((data, stat, watcher)) => Completed {
                    reply: Reply::Data {
                        data,
                        czxid: stat.czxid,
                    },
                    behind: Some((path.clone(), stat.ephemeral_owner)),
                    watch: Some((WatchKind::Data, path, watcher)),
                    error: None,
                },
                Err(e) => failed(e),
            },
            Op::Exists { path, watch: false } => match client.exists(path).await {
                Ok(stat) => ok(Reply::Exists(stat.map(|s| s.czxid))),
                Err(e) => failed(e),
            },
            Op::Exists { path, watch: true } => match client.exists_and_watch(&path).await {
                Ok((stat, watcher)) => Completed {
                    reply: Reply::Exists(stat.as_ref().map(|s| s.czxid)),
                    behind: stat.map(|s| (path.clone(), s.ephemeral_owner)),
                    watch: Some((WatchKind::Exists, path, watcher)),
                    error: None,
                },
                Err(e) => failed(e),
            },
            Op::Sync { path } => match client.sync(path).await {
                Ok(()) => ok(Reply::Done),
                Err(e) => failed(e),
            },
            Op::Delete { path } => match client.delete(path, None).await {
                Ok(()) => ok(Reply::Done),
                Err(e) => failed(e),
            },
            Op::CreateParents { path } => match create_parents(&client, &path).await {
                Ok(()) => ok(Reply::Done),
                Err(e) => failed(e),
            },
        }
    })
}

/// Creates `path` and its missing ancestors as container nodes, top-down, as Curator's
/// `creatingParentContainersIfNeeded` (`ZKPaths.mkdirs`) does: each one's existence is checked
/// first, so a client that may not create in `/` works when the ancestors exist.
pub async fn create_parents(client: &Client, path: &str) -> Result<(), zk_client::Error> {
    let opts = CreateOptions::new(CreateMode::Container);
    let mut end = 0;
    loop {
        let next = path
            .get(end + 1..)
            .and_then(|rest| rest.find('/'))
            .map(|i| end + 1 + i);
        let prefix = match next {
            Some(n) => path.get(..n).unwrap_or(path),
            None => path,
        };
        if client.exists(prefix).await?.is_none() {
            match client.create(prefix, b"", &opts).await {
                Ok(_) | Err(zk_client::Error::NodeExists) => {}
                Err(e) => return Err(e),
            }
        }
        match next {
            Some(n) => end = n,
            None => return Ok(()),
        }
    }
}
