//! [`Run`]: one machine being driven: ops in flight (pipelined, replies fed in issue order),
//! the watches it left, state changes, its timers; handed to the background when dropped
//! unfinished.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use recipes_core::queue::Queue;
use recipes_core::{
    Cleanup, CleanupMachine, Connection, Failure, Input, Machine, Op, Outcome, Runner, Stuck,
    WatchEvent, WatchKind,
};
use tokio::sync::{Notify, oneshot};
use tokio::time::Instant;
use zk_client::{Client, OneshotWatcher, SessionState, StateStream};

use super::ended::{Ended, error_of};
use super::ops::{Completed, InFlight, connection, op_future, watch_event};
use crate::Error;
use crate::layer::clock::{now, sleep_until};
use crate::layer::node::RecipeKind;
use crate::layer::turns::Turn;
use crate::metrics::{Outcome as Measured, Since};
use crate::waiting::Waiting;

/// One machine being driven.
pub(super) struct Run<M: Machine + Send + 'static> {
    pub(super) client: Client,
    pub(super) runner: Option<Runner<M>>,
    /// Ops sent, oldest first (an attempt has one to three at a time: inline).
    pub(super) in_flight: Queue<InFlight, 4>,
    pub(super) watches: Vec<(WatchKind, String, OneshotWatcher)>,
    pub(super) states: StateStream,
    pub(super) last_error: Option<zk_client::Error>,
    pub(super) stuck: Option<Stuck>,
    /// Whether dropping an unfinished run hands it to the background (not for cleanups, which
    /// are already the background).
    pub(super) abandon_on_drop: bool,
    /// The attempt's admission slot: given back as soon as nothing is in flight.
    pub(super) slot: Option<super::admission::Slot>,
    /// Kept until everything, background work included, is done.
    pub(super) turn: Option<Turn>,
    pub(super) wake: Option<Arc<Notify>>,
    /// Whether the machine watched a node (waited behind a predecessor): a hold after that
    /// was handed over by the predecessor's release.
    pub(super) waited: bool,
    /// What a waiting attempt reports to the logs.
    pub(super) waiting: Waiting,
    /// The recipe it takes a lock of, and when it started: for the metrics.
    pub(super) recipe: RecipeKind,
    pub(super) since: Since,
}

impl<M: Machine + Send + 'static> Run<M> {
    pub(super) fn new(client: Client, machine: M) -> Self {
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
            slot: None,
            turn: None,
            wake: None,
            waited: false,
            waiting: Waiting::default(),
            recipe: RecipeKind::default(),
            since: Since::now(),
        }
    }

    pub(super) fn start(&mut self) {
        let connection = connection(self.client.state());
        if connection != Connection::Connected {
            self.feed(Input::Connection(connection));
        }
        self.feed(Input::Start);
    }

    pub(super) fn feed(&mut self, input: Input) {
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

    pub(super) fn is_over(&self) -> bool {
        self.stuck.is_some()
            || self
                .runner
                .as_ref()
                .is_none_or(|r| r.machine().outcome().is_some())
    }

    pub(super) fn outcome(&self) -> Result<M::Output, Ended>
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
    pub(super) async fn until_outcome(&mut self) {
        while !self.is_over() {
            if self.in_flight.is_empty() {
                // Waiting (behind a holder, for a wake or the deadline): the slot goes back.
                self.slot = None;
            }
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

    pub(super) fn on_completed(&mut self, done: Completed) {
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
    pub(super) async fn drain(&mut self) {
        while !self.in_flight.is_empty() {
            let done = next_reply(&mut self.in_flight).await;
            self.on_completed(done);
        }
    }

    /// Hands what is left to the background: the replies still in flight, then the cleanups
    /// owed. The receiver says when that is done.
    pub(super) fn hand_off(&mut self) -> oneshot::Receiver<()> {
        let (tx, rx) = oneshot::channel();
        self.slot = None;
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
            slot: None,
            turn: self.turn.take(),
            wake: None,
            waited: self.waited,
            waiting: Waiting::default(),
            recipe: self.recipe,
            since: self.since,
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
        // On the client's runtime, not the caller's: an attempt dropped while its runtime
        // shuts down still has its node deleted.
        drop(self.client.runtime().spawn(async move {
            rest.drain().await;
            let cleanups = rest
                .runner
                .as_ref()
                .map(|r| r.machine().cleanups())
                .unwrap_or_default();
            let _ = run_cleanups(&rest.client, cleanups).await;
            drop(rest);
            let _ = tx.send(());
        }));
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
            // Dropped with no outcome yet: the caller's acquire was cancelled mid-way.
            if self.stuck.is_none()
                && self
                    .runner
                    .as_ref()
                    .is_some_and(|r| r.machine().outcome().is_none())
            {
                crate::metrics::attempt_ended(self.recipe, self.since, Measured::Cancelled);
            }
            drop(self.hand_off());
        } else if !self.in_flight.is_empty() {
            // Ops still in flight whose replies nobody needs (a held attempt's stray deletes):
            // let them reach the server.
            let mut in_flight = std::mem::take(&mut self.in_flight);
            drop(self.client.runtime().spawn(async move {
                while !in_flight.is_empty() {
                    next_reply(&mut in_flight).await;
                }
            }));
        }
    }
}

/// The next reply, in issue order. Every op in flight is polled, so each request is sent as
/// soon as it is issued (the first poll of an op's future sends it), in order.
pub(super) async fn next_reply(in_flight: &mut Queue<InFlight, 4>) -> Completed {
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

async fn notified(wake: Option<&Notify>) {
    match wake {
        Some(n) => n.notified().await,
        None => std::future::pending().await,
    }
}

/// Runs `cleanups` to the end (see [`spawn_cleanups`](super::spawn_cleanups)).
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
