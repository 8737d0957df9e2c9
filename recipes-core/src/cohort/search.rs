//! The exhaustive tests' search: every sequence of events to a depth, each state visited once,
//! the model's invariants checked after every step.

use std::collections::{HashSet, VecDeque};
use std::fmt::Debug;

/// A model world around a cohort, stepped through by [`explore`].
pub(super) trait Explore: Clone {
    /// What can happen.
    type Event: Copy + Debug;

    /// The state, for the visited set.
    fn key(&self) -> String;

    /// Every event that can happen next, with at most `max_waiters` arrivals in all.
    fn events(&self, max_waiters: u8) -> Vec<Self::Event>;

    /// Applies `event` and checks the invariants: the violation, if one.
    fn step(&mut self, event: Self::Event) -> Result<(), String>;
}

/// Every sequence of events from `world` to `depth` (states visited once): the states
/// explored, or the first violation with the events that led to it.
pub(super) fn explore<W: Explore>(
    world: W,
    max_waiters: u8,
    depth: usize,
) -> Result<usize, String> {
    let mut seen = HashSet::new();
    let mut queue = VecDeque::from([(world, Vec::<W::Event>::new())]);
    while let Some((world, path)) = queue.pop_front() {
        if path.len() >= depth || !seen.insert(world.key()) {
            continue;
        }
        for event in world.events(max_waiters) {
            let mut next = world.clone();
            let mut trace = path.clone();
            trace.push(event);
            if let Err(why) = next.step(event) {
                return Err(format!("{why}\nafter {trace:?}"));
            }
            queue.push_back((next, trace));
        }
    }
    Ok(seen.len())
}
