//! [`State`]: one point of a run (the machine in its runner, then the cleanup machine, the
//! model, the virtual time, the faults left), the [`Step`]s that can follow it, and the
//! checks each step is held to.

use std::fmt::Debug;
use std::time::Instant;

use recipes_core::{
    Cleanup, CleanupMachine, Connection, DEADLINE_GRACE, Failure, Input, Machine, Outcome, Runner,
};

use super::Budget;
use super::check::{Check, Violation};
use super::grant::Grant;
use super::model::{Link, Model, Owner, ToClient};
use super::subjects::{Holds, Subject, other_uuid};

/// One move of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Step {
    /// The server applies the oldest op written.
    Apply,
    /// The client reads the next reply or notification and gives it to the machine.
    Deliver,
    /// The client tells the machine of a failed op or a connection change.
    Local,
    /// The machine's timer fires (the only way time moves).
    Timer,
    /// The connection drops; the machine hears `Disconnected` before the failed replies, or
    /// after them.
    Disconnect {
        /// `Disconnected` first.
        first: bool,
    },
    /// The session is reachable again.
    Reconnect,
    /// No server for the session timeout (`Lost`), the session still alive.
    Lost,
    /// The session expires.
    Expire {
        /// `Lost` before `Expired`.
        lost_first: bool,
    },
    /// Another client creates a node (kind: an index into [`Subject::foreign`]).
    Create {
        /// Which kind.
        kind: u8,
    },
    /// Another client deletes its node (an index into the model's nodes).
    Release {
        /// Which node.
        node: u8,
    },
    /// Another client deletes a node of ours.
    Meddle {
        /// Which node.
        node: u8,
    },
    /// The caller gives up.
    Abandon,
}

/// What the steps of one exploration share.
pub struct Ctx<'a, M> {
    /// The machine set up.
    pub subject: &'a Subject<M>,
    /// The start of virtual time.
    pub t0: Instant,
    /// The attempt's deadline.
    pub deadline: Option<Instant>,
    /// The faults a run may use.
    pub budget: Budget,
}

impl<M> Ctx<'_, M> {
    fn at(&self, t: Instant) -> String {
        format!("t0+{}ms", t.saturating_duration_since(self.t0).as_millis())
    }
}

/// One point of a run.
#[derive(Debug, Clone)]
pub struct State<M> {
    subject: Runner<M>,
    /// Once the attempt ended and its replies are in: the cleanup machine running what it
    /// owes.
    cleanup: Option<Runner<CleanupMachine>>,
    model: Model,
    now: Instant,
    left: Budget,
    abandoned: bool,
    /// Per directory, the zxid the last listing given to the machine was read at.
    listed: Vec<i64>,
    /// The paths the attempt held, once it ended.
    held: Vec<String>,
    /// The run is over.
    pub done: bool,
}

type Log<'a> = Option<&'a mut Vec<String>>;

fn say(log: &mut Log<'_>, line: impl FnOnce() -> String) {
    if let Some(log) = log.as_deref_mut() {
        log.push(line());
    }
}

impl<M> State<M>
where
    M: Machine + Clone + Debug,
    M::Output: Holds + Debug,
{
    /// The state after `Start`.
    pub fn root(ctx: &Ctx<'_, M>, mut log: Log<'_>) -> Result<Self, Violation> {
        let sub = ctx.subject;
        let mut model = Model::new(sub.dirs.len());
        let mut before = Vec::new();
        for b in &sub.before {
            let (path, czxid) = model.create(&sub.dirs, b.dir, &b.name, b.sequential, Owner::Us);
            say(&mut log, || {
                format!("set-up: {path} (czxid {czxid}) exists")
            });
            before.push(recipes_core::Held { path, czxid });
        }
        let machine = (sub.make)(ctx.deadline, &before);
        let mut state = Self {
            subject: Runner::new(machine),
            cleanup: None,
            model,
            now: ctx.t0,
            left: ctx.budget,
            abandoned: false,
            listed: vec![0; sub.dirs.len()],
            held: Vec::new(),
            done: false,
        };
        state.feed(ctx, Input::Start, &mut log)?;
        state.settle(ctx, &mut log)?;
        Ok(state)
    }

    fn timer(&self) -> Option<Instant> {
        match &self.cleanup {
            Some(c) => c.poll_timeout(),
            None => self.subject.poll_timeout(),
        }
    }

    fn ended(&self) -> bool {
        self.subject.machine().outcome().is_some()
    }

    /// The steps that can follow, in a fixed order.
    pub fn steps(&self, ctx: &Ctx<'_, M>) -> Vec<Step> {
        let mut steps = Vec::new();
        if self.done {
            return steps;
        }
        let m = &self.model;
        let attempt = self.cleanup.is_none();
        if !m.to_server.is_empty() {
            steps.push(Step::Apply);
        }
        if m.link == Link::Connected && !m.to_client.is_empty() {
            steps.push(Step::Deliver);
        }
        if !m.local.is_empty() {
            steps.push(Step::Local);
        }
        if self.timer().is_some() {
            steps.push(Step::Timer);
        }
        let quiet = m.link == Link::Disconnected && m.local.is_empty();
        if m.link == Link::Connected && self.left.disconnects > 0 {
            steps.push(Step::Disconnect { first: true });
            steps.push(Step::Disconnect { first: false });
        }
        if quiet {
            steps.push(Step::Reconnect);
        }
        if self.left.lost_or_expiry > 0 {
            if quiet && m.reported != Connection::Lost {
                steps.push(Step::Lost);
                steps.push(Step::Expire { lost_first: true });
                steps.push(Step::Expire { lost_first: false });
            } else if m.link == Link::Connected || quiet {
                steps.push(Step::Expire { lost_first: false });
            }
        }
        if attempt {
            if self.left.foreign > 0 {
                steps
                    .extend((0..ctx.subject.foreign.len()).map(|k| Step::Create { kind: k as u8 }));
            }
            for (i, n) in m.nodes.iter().enumerate() {
                if n.live() && n.owner != Owner::Us {
                    steps.push(Step::Release { node: i as u8 });
                }
            }
        }
        if self.left.meddles > 0 {
            steps.extend(m.ours().map(|i| Step::Meddle { node: i as u8 }));
        }
        if attempt && !self.ended() && self.left.abandons > 0 {
            steps.push(Step::Abandon);
        }
        steps
    }

    /// Takes `step` (one of [`State::steps`]) and checks the state it leads to.
    pub fn take(
        &mut self,
        ctx: &Ctx<'_, M>,
        step: Step,
        mut log: Log<'_>,
    ) -> Result<(), Violation> {
        let dirs = &ctx.subject.dirs;
        match step {
            Step::Apply => {
                if let Some(op) = self.model.to_server.front() {
                    say(&mut log, || format!("server applies {op:?}"));
                }
                let orphan = self.model.link != Link::Connected;
                self.model.apply(dirs);
                if orphan {
                    say(&mut log, || "  (an orphan: its reply is lost)".to_owned());
                }
            }
            Step::Deliver => match self.model.deliver() {
                Some(ToClient::Reply { reply, listed, .. }) => {
                    if let Some((dir, zxid)) = listed {
                        self.listed[dir] = zxid;
                    }
                    self.feed(ctx, Input::Reply(reply), &mut log)?;
                }
                Some(ToClient::Event { kind, path, event }) => {
                    let input = Input::Watch { kind, path, event };
                    self.feed(ctx, input, &mut log)?;
                }
                None => {}
            },
            Step::Local => {
                if let Some(input) = self.model.local.pop_front() {
                    if let Input::Connection(c) = input {
                        self.model.reported = c;
                    }
                    self.feed(ctx, input, &mut log)?;
                }
            }
            Step::Timer => {
                if let Some(t) = self.timer() {
                    self.now = self.now.max(t);
                }
                say(&mut log, || format!("timer fires at {}", ctx.at(self.now)));
                self.feed(ctx, Input::Timeout, &mut log)?;
                self.deadline_kept(ctx, true)?;
            }
            Step::Disconnect { first } => {
                self.left.disconnects -= 1;
                say(&mut log, || "the connection drops".to_owned());
                self.model.disconnect(first);
            }
            Step::Reconnect => {
                say(&mut log, || "the session reconnects".to_owned());
                self.model.reconnect();
                self.model.reported = Connection::Connected;
                self.feed(ctx, Input::Connection(Connection::Connected), &mut log)?;
            }
            Step::Lost => {
                self.left.lost_or_expiry -= 1;
                self.model.reported = Connection::Lost;
                self.feed(ctx, Input::Connection(Connection::Lost), &mut log)?;
            }
            Step::Expire { lost_first } => {
                self.left.lost_or_expiry -= 1;
                say(&mut log, || {
                    "the session expires (our ephemerals go)".to_owned()
                });
                self.model.expire(lost_first);
            }
            Step::Create { kind } => {
                self.left.foreign -= 1;
                let (dir, lock) = ctx.subject.foreign[usize::from(kind)];
                let k = ctx.budget.foreign - self.left.foreign;
                let name = format!("_c_{}-{lock}", other_uuid(k));
                let (path, _) = self.model.create(dirs, dir, &name, true, Owner::Other(k));
                say(&mut log, || format!("another client creates {path}"));
            }
            Step::Release { node } => {
                say(&mut log, || {
                    format!(
                        "another client deletes its {}",
                        self.model.nodes[usize::from(node)].path
                    )
                });
                self.model.delete(dirs, usize::from(node));
            }
            Step::Meddle { node } => {
                self.left.meddles -= 1;
                self.model.meddled = true;
                say(&mut log, || {
                    format!(
                        "another client deletes OUR {}",
                        self.model.nodes[usize::from(node)].path
                    )
                });
                self.model.delete(dirs, usize::from(node));
            }
            Step::Abandon => {
                self.left.abandons -= 1;
                self.abandoned = true;
                self.feed(ctx, Input::Abandon, &mut log)?;
            }
        }
        if let Some(path) = &self.model.deleted_foreign {
            let detail = format!("our session deleted another client's node {path}");
            return Err(Violation::new(Check::Failure, detail));
        }
        if step != Step::Timer {
            self.deadline_kept(ctx, false)?;
        }
        self.settle(ctx, &mut log)
    }

    /// Gives `input` to the machine running now, sends what it issues, and judges an outcome
    /// it has just reached.
    fn feed(&mut self, ctx: &Ctx<'_, M>, input: Input, log: &mut Log<'_>) -> Result<(), Violation> {
        let now = self.now;
        let who = if self.cleanup.is_some() {
            "cleanup"
        } else {
            "machine"
        };
        say(log, || format!("{who} <- {input:?}"));
        let was_over = self.ended();
        let handled = match &mut self.cleanup {
            Some(c) => c.handle(now, input),
            None => self.subject.handle(now, input),
        };
        handled.map_err(|stuck| Violation::new(Check::Stuck, stuck.to_string()))?;
        loop {
            let op = match &mut self.cleanup {
                Some(c) => c.poll_op(),
                None => self.subject.poll_op(),
            };
            let Some(op) = op else { break };
            say(log, || format!("{who} -> {op:?}"));
            self.model.issue(op);
        }
        if self.cleanup.is_none() && !was_over {
            if let Some(outcome) = self.subject.machine().outcome() {
                say(log, || format!("OUTCOME {outcome:?} at {}", ctx.at(now)));
                self.judge(ctx, outcome)?;
            }
        }
        Ok(())
    }

    /// Checks 2 and 3: the outcome the attempt just reached is justified by the model.
    fn judge(&self, ctx: &Ctx<'_, M>, outcome: &Outcome<M::Output>) -> Result<(), Violation> {
        let m = &self.model;
        let failed = |why: String| Err(Violation::new(Check::Failure, why));
        match outcome {
            Outcome::Held(out) => {
                for held in out.holds() {
                    let grant = |why: String| {
                        Err(Violation::new(
                            Check::Grant,
                            format!("held {held:?}: {why}"),
                        ))
                    };
                    // The node of that path our session made most recently.
                    let Some(i) = (0..m.nodes.len())
                        .rev()
                        .find(|&i| m.nodes[i].path == held.path && m.nodes[i].owner == Owner::Us)
                    else {
                        return grant("our session never created it".to_owned());
                    };
                    let token = match &ctx.subject.grant {
                        Grant::Beside(write) => m
                            .nodes
                            .iter()
                            .find(|n| n.path == *write)
                            .map_or(-1, |n| n.czxid),
                        _ => m.nodes[i].czxid,
                    };
                    if held.czxid != token {
                        return grant(format!("the czxid should be {token}"));
                    }
                    let zxid = self.listed[m.nodes[i].dir];
                    if !m.nodes[i].live_at(zxid) {
                        return grant(format!("it was not there at zxid {zxid}, when listed"));
                    }
                    if let Err(why) = ctx.subject.grant.check(m, i, zxid) {
                        return grant(format!("{why} (listed at zxid {zxid})"));
                    }
                }
                Ok(())
            }
            Outcome::TimedOut => match ctx.deadline {
                Some(d) if self.now >= d => Ok(()),
                Some(_) => failed(format!(
                    "timed out at {}, before the deadline",
                    ctx.at(self.now)
                )),
                None => failed("timed out without a deadline".to_owned()),
            },
            Outcome::Failed(f) => {
                let justified = match f {
                    Failure::SessionExpired => m.expired,
                    Failure::NodeVanished => m.meddled || m.expired,
                    Failure::Abandoned => self.abandoned,
                    _ => false,
                };
                match justified {
                    true => Ok(()),
                    false => failed(format!(
                        "Failed({f:?}) with the session {}, {}",
                        if m.expired { "expired" } else { "alive" },
                        if m.meddled {
                            "a node of ours deleted by another client"
                        } else {
                            "no meddling"
                        },
                    )),
                }
            }
        }
    }

    /// Check 4, while the attempt runs: no timer past the deadline and its grace, and an
    /// outcome once a timer fired there.
    fn deadline_kept(&self, ctx: &Ctx<'_, M>, fired: bool) -> Result<(), Violation> {
        let Some(d) = ctx.deadline else { return Ok(()) };
        if self.cleanup.is_some() || self.ended() {
            return Ok(());
        }
        let limit = d + DEADLINE_GRACE;
        let late = |what: String| Err(Violation::new(Check::Deadline, what));
        if fired && self.now >= limit {
            return late(format!(
                "no outcome at {} (deadline {})",
                ctx.at(self.now),
                ctx.at(d)
            ));
        }
        match self.subject.poll_timeout() {
            None => late(format!("no timer and no outcome (deadline {})", ctx.at(d))),
            Some(t) if t > limit => late(format!(
                "a timer at {}, past the deadline {} and its grace",
                ctx.at(t),
                ctx.at(d)
            )),
            Some(_) => Ok(()),
        }
    }

    /// Once the attempt ended and its replies are in: check 5 on its cleanups, then run them;
    /// once they ran: check 5 on the tree.
    fn settle(&mut self, ctx: &Ctx<'_, M>, log: &mut Log<'_>) -> Result<(), Violation> {
        if self.done || !self.model.drained() {
            return Ok(());
        }
        if self.cleanup.is_none() {
            let Some(outcome) = self.subject.machine().outcome() else {
                return Ok(());
            };
            let machine = self.subject.machine();
            let (owed, held) = match outcome {
                Outcome::Held(out) => {
                    let held = out.holds().into_iter().map(|h| h.path).collect();
                    (machine.releases(), held)
                }
                _ => (machine.cleanups(), Vec::new()),
            };
            self.held = held;
            if let Some(path) = self.left_behind(ctx).find(|p| !covers(&owed, p)) {
                let detail = format!("{path} is neither held nor in the cleanups {owed:?}");
                return Err(Violation::new(Check::LeftBehind, detail));
            }
            say(log, || format!("the attempt is over; cleanup of {owed:?}"));
            self.model.forget_watches();
            self.cleanup = Some(Runner::new(CleanupMachine::new(owed)));
            if self.model.reported != Connection::Connected {
                self.feed(ctx, Input::Connection(self.model.reported), log)?;
            }
            self.feed(ctx, Input::Start, log)?;
            if !self.model.drained() {
                return Ok(());
            }
        }
        let Some(outcome) = self.cleanup.as_ref().and_then(|c| c.machine().outcome()) else {
            return Ok(());
        };
        let finished = match outcome {
            Outcome::Held(()) => true,
            Outcome::Failed(Failure::SessionExpired) => self.model.expired,
            _ => false,
        };
        if !finished {
            let detail = format!("the cleanup ended {outcome:?}");
            return Err(Violation::new(Check::LeftBehind, detail));
        }
        if let Some(path) = self.left_behind(ctx).next() {
            let detail = format!("{path} is left after the cleanups ran ({outcome:?})");
            return Err(Violation::new(Check::LeftBehind, detail));
        }
        say(log, || {
            format!("cleanup ended {outcome:?}; nothing of ours left")
        });
        self.done = true;
        Ok(())
    }

    /// Our live nodes that are neither held nor kept by the set-up.
    fn left_behind<'s>(&'s self, ctx: &'s Ctx<'_, M>) -> impl Iterator<Item = String> + 's {
        let kept: Vec<usize> = (0..ctx.subject.before.len())
            .filter(|&i| ctx.subject.before[i].kept)
            .collect();
        self.model
            .ours()
            .filter(move |i| !kept.contains(i))
            .map(|i| self.model.nodes[i].path.clone())
            .filter(|p| !self.held.contains(p))
    }

    /// Whether the run is quiet enough to owe a hold (check 6): connected, nothing in flight,
    /// the attempt on, and no fault that excuses a failure.
    pub fn quiet(&self) -> bool {
        let m = &self.model;
        self.cleanup.is_none()
            && !self.ended()
            && !m.expired
            && !m.meddled
            && !self.abandoned
            && m.link == Link::Connected
            && m.drained()
            && m.to_client.is_empty()
    }

    /// Check 6 from a quiet state: the other clients release, and the run goes on with no
    /// fault (first of: the client's news, a delivery, the server's work, the timer) for at
    /// most `limit` steps; the attempt must end held (or timed out, with a deadline). The
    /// steps taken, and the breach.
    pub fn probe(&self, ctx: &Ctx<'_, M>, limit: usize) -> Result<(), (Vec<Step>, Violation)> {
        let mut s = self.clone();
        let mut taken = Vec::new();
        let releases: Vec<Step> = s
            .steps(ctx)
            .into_iter()
            .filter(|st| matches!(st, Step::Release { .. }))
            .collect();
        let mut go = |s: &mut Self, step: Step| {
            taken.push(step);
            s.take(ctx, step, None).map_err(|v| (taken.clone(), v))
        };
        for step in releases {
            go(&mut s, step)?;
        }
        for _ in 0..limit {
            if s.ended() {
                break;
            }
            let steps = s.steps(ctx);
            let calm = [Step::Local, Step::Deliver, Step::Apply, Step::Timer];
            let Some(step) = calm.into_iter().find(|c| steps.contains(c)) else {
                break;
            };
            go(&mut s, step)?;
        }
        let outcome = s.subject.machine().outcome();
        let fine = match outcome {
            Some(Outcome::Held(_)) => true,
            Some(Outcome::TimedOut) => ctx.deadline.is_some(),
            _ => false,
        };
        if fine {
            return Ok(());
        }
        let detail = format!(
            "the lock free and the link quiet, the attempt has {outcome:?} after {} steps",
            taken.len()
        );
        Err((taken, Violation::new(Check::Liveness, detail)))
    }
}

/// Whether `owed` deletes `path`: by path, or by its directory and protection prefix.
fn covers(owed: &[Cleanup], path: &str) -> bool {
    let (dir, name) = path.rsplit_once('/').unwrap_or_default();
    owed.iter().any(|c| match c {
        Cleanup::Delete(p) => p == path,
        Cleanup::FindAndDelete { base, prefix } => base == dir && name.starts_with(prefix.as_str()),
    })
}
