//! [`explore`]: the breadth-first search over [`State`]s, and its [`Report`].

use std::collections::HashSet;
use std::collections::hash_map::DefaultHasher;
use std::fmt::{self, Debug, Write as _};
use std::hash::Hasher;
use std::time::{Duration, Instant};

use recipes_core::Machine;

use super::Config;
use super::check::Violation;
use super::state::{Ctx, State, Step};
use super::subjects::{Holds, OUR_UUID, Subject, earlier_uuid, other_uuid};

/// A violation and the run that led to it.
#[derive(Debug, Clone)]
pub struct Found {
    /// What broke.
    pub violation: Violation,
    /// The steps from the start.
    pub steps: Vec<Step>,
    /// The run, replayed: every step, what the machine was given and what it issued.
    pub trace: Vec<String>,
}

impl fmt::Display for Found {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{} (after {} steps)", self.violation, self.steps.len())?;
        for line in &self.trace {
            writeln!(f, "    {line}")?;
        }
        Ok(())
    }
}

/// What one exploration saw.
#[derive(Debug, Clone)]
pub struct Report {
    /// The machine.
    pub machine: &'static str,
    /// Its deadline after the start, if any.
    pub deadline: Option<Duration>,
    /// Distinct states reached.
    pub states: u64,
    /// Steps taken (each from a distinct state).
    pub transitions: u64,
    /// The deepest level where a new state was found.
    pub max_depth: usize,
    /// Every state was explored: no new state at the last level (not cut by the depth or
    /// the time limit).
    pub exhausted: bool,
    /// The time limit cut it short (within the level after `max_depth - 1`).
    pub cut: bool,
    /// Wall time.
    pub elapsed: Duration,
    /// The first violation, with a shortest trace.
    pub found: Option<Found>,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let deadline = match self.deadline {
            None => "no deadline".to_owned(),
            Some(d) => format!("deadline {}ms", d.as_millis()),
        };
        write!(
            f,
            "{:<10} {deadline:<16} {:>10} states {:>11} transitions  depth {:>2}{}  {:>7.1} s  {} violation{}",
            self.machine,
            self.states,
            self.transitions,
            self.max_depth,
            if self.exhausted {
                " (all)"
            } else if self.cut {
                " (cut)"
            } else {
                ""
            },
            self.elapsed.as_secs_f64(),
            usize::from(self.found.is_some()),
            if self.found.is_some() { "" } else { "s" },
        )?;
        if let Some(found) = &self.found {
            write!(f, "\n  {found}")?;
        }
        Ok(())
    }
}

/// A state's fingerprint: 128 bits of its `Debug` text, hashed as it is written.
struct Fingerprint(DefaultHasher, DefaultHasher);

impl fmt::Write for Fingerprint {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.0.write(s.as_bytes());
        self.1.write(s.as_bytes());
        Ok(())
    }
}

fn fingerprint<T: Debug>(value: &T) -> u128 {
    let mut second = DefaultHasher::new();
    second.write_u64(0x9e37_79b9_7f4a_7c15);
    let mut h = Fingerprint(DefaultHasher::new(), second);
    let _ = write!(h, "{value:?}");
    (u128::from(h.0.finish()) << 64) | u128::from(h.1.finish())
}

/// Explores `subject` breadth-first to `config.depth` steps; stops at the first violation.
pub fn explore<M>(subject: &Subject<M>, config: &Config) -> Report
where
    M: Machine + Clone + Debug,
    M::Output: Holds + Debug,
{
    let started = Instant::now();
    let t0 = Instant::now();
    let deadline = config.deadline.filter(|_| subject.timed);
    let ctx = Ctx {
        subject,
        t0,
        deadline: deadline.map(|d| t0 + d),
        budget: config.budget,
    };
    let mut report = Report {
        machine: subject.name,
        deadline,
        states: 1,
        transitions: 0,
        max_depth: 0,
        exhausted: false,
        cut: false,
        elapsed: Duration::ZERO,
        found: None,
    };
    // Each state's parent and the step from it (the root: none), to print a trace.
    let mut parents: Vec<(u32, Option<Step>)> = vec![(u32::MAX, None)];
    let found = |ctx: &Ctx<'_, M>, parents: &[(u32, Option<Step>)], id: u32, more: &[Step], v| {
        let mut steps = path(parents, id);
        steps.extend_from_slice(more);
        let trace = replay(ctx, &steps);
        let Violation { check, detail } = v;
        let detail = shorten(vec![detail]).concat();
        Found {
            violation: Violation { check, detail },
            steps,
            trace,
        }
    };
    let root = match State::root(&ctx, None) {
        Ok(root) => root,
        Err(v) => {
            report.found = Some(found(&ctx, &parents, 0, &[], v));
            return report;
        }
    };
    let mut visited: HashSet<u128> = HashSet::new();
    visited.insert(fingerprint(&root));
    let mut frontier: Vec<(State<M>, u32)> = vec![(root, 0)];
    'levels: for depth in 1..=config.depth {
        let mut next = Vec::new();
        for (state, id) in std::mem::take(&mut frontier) {
            if config
                .time_limit
                .is_some_and(|limit| started.elapsed() > limit)
            {
                report.cut = true;
                break 'levels;
            }
            for step in state.steps(&ctx) {
                report.transitions += 1;
                let mut child = state.clone();
                if let Err(v) = child.take(&ctx, step, None) {
                    report.found = Some(found(&ctx, &parents, id, &[step], v));
                    break 'levels;
                }
                if !visited.insert(fingerprint(&child)) {
                    continue;
                }
                let child_id = parents.len() as u32;
                parents.push((id, Some(step)));
                report.states += 1;
                report.max_depth = depth;
                if child.quiet() {
                    if let Err((more, v)) = child.probe(&ctx, config.probe_steps) {
                        report.found = Some(found(&ctx, &parents, child_id, &more, v));
                        break 'levels;
                    }
                }
                // The last level is only counted and checked, not expanded.
                if !child.done && depth < config.depth {
                    next.push((child, child_id));
                }
            }
        }
        if next.is_empty() {
            report.exhausted = report.found.is_none() && !report.cut && report.max_depth < depth;
            break;
        }
        frontier = next;
    }
    report.elapsed = started.elapsed();
    report
}

/// The steps from the root to state `id`.
fn path(parents: &[(u32, Option<Step>)], mut id: u32) -> Vec<Step> {
    let mut steps = Vec::new();
    while let Some(&(parent, step)) = parents.get(id as usize) {
        steps.extend(step);
        id = parent;
    }
    steps.reverse();
    steps
}

/// Replays `steps` from the start, with every input and op written down; the protection
/// ids are shortened (`ours`, `other1`, `earlier1`).
fn replay<M>(ctx: &Ctx<'_, M>, steps: &[Step]) -> Vec<String>
where
    M: Machine + Clone + Debug,
    M::Output: Holds + Debug,
{
    let mut log = Vec::new();
    let mut state = match State::root(ctx, Some(&mut log)) {
        Ok(state) => state,
        Err(v) => {
            log.push(format!("VIOLATION {v}"));
            return shorten(log);
        }
    };
    for (i, step) in steps.iter().enumerate() {
        log.push(format!("[{}] {step:?}", i + 1));
        if let Err(v) = state.take(ctx, *step, Some(&mut log)) {
            log.push(format!("VIOLATION {v}"));
            break;
        }
    }
    shorten(log)
}

fn shorten(log: Vec<String>) -> Vec<String> {
    let mut names = vec![(OUR_UUID.to_owned(), "ours".to_owned())];
    for k in 1..=4 {
        names.push((other_uuid(k), format!("other{k}")));
        names.push((earlier_uuid(k), format!("earlier{k}")));
    }
    log.into_iter()
        .map(|mut line| {
            for (long, short) in &names {
                line = line.replace(long.as_str(), short);
            }
            line
        })
        .collect()
}
