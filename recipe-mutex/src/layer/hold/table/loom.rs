//! loom models of the hold table (the code [`Holds`](crate::layer::hold::Holds) runs): every
//! interleaving of guards taken, dropped on a plain thread, their deletes on the runtime's
//! thread, the session's end and `is_acquired_in_this_process`, up to a bounded number of
//! preemptions ([`PREEMPTIONS`](crate::loom::model::PREEMPTIONS), or `LOOM_MAX_PREEMPTIONS`).
//!
//! - Built only with our own cfg, `--cfg zk_loom`, in release: the test filter `loom` of
//!   `cargo test -p recipe-mutex --lib --release` runs them.
//! - tokio does not run under loom, so the runtime is a thread (what `guaranteed_delete_on`
//!   spawns the delete onto when the guard drops off the runtime), and the server a lock over
//!   the session's liveness and our node.
//! - The invariants: a hold is ended only while held, and released only while releasing, once
//!   each (ids never given twice); a hold being released stays in the table until its delete
//!   has ended, and then leaves it, whatever the session's end does meanwhile
//!   (`is_acquired_in_this_process` never says false while our node is still ours, nor true
//!   forever); it never says false while a guard is alive.
//! - Each model ships with a [`Plant`] that breaks its invariant, and a test that loom finds
//!   the failure. The plants live here, in [`Planted`], a wrapper the table does not know
//!   about: each replays one of the table's steps split across lock sections.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use ::loom::sync::Mutex;
use ::loom::thread;

use super::Table;
use crate::loom::model::{check, fails};

/// A defect planted around a table by [`Planted`], each breaking one model's invariant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Plant {
    /// A hold's id is read in one lock section and taken in another: two holds may get one id.
    IdOutsideLock,
    /// The delete is started before the hold is moved to releasing: a delete that ends first
    /// finds no entry, and the entry put after stays forever.
    StartBeforeReleasing,
    /// A hold leaves `held` and enters `releasing` in two lock sections: in between, the
    /// table says nothing is ours while the node still is.
    SplitEnd,
}

/// A table as the models use it: its own steps, or with `plant` the planted ones, built from
/// the table's lock sections.
struct Planted {
    table: Table<()>,
    plant: Option<Plant>,
}

impl Planted {
    /// [`Table::hold`], or its id taken outside the lock.
    fn hold(&self) -> u64 {
        if self.plant != Some(Plant::IdOutsideLock) {
            return self.table.hold(());
        }
        let id = self.table.lock().next_id + 1;
        let mut table = self.table.lock();
        table.next_id = id;
        table.held.insert(id, ());
        id
    }

    /// [`Table::end`], or its step split in two.
    fn end<D>(&self, id: u64, start: impl FnOnce(Option<()>) -> D) -> D {
        match self.plant {
            Some(Plant::StartBeforeReleasing) => {
                let kept = self.table.lock().held.remove(&id);
                let delete = start(kept);
                self.table.lock().releasing.insert(id, ());
                delete
            }
            Some(Plant::SplitEnd) => {
                let kept = self.table.lock().held.remove(&id);
                self.table.lock().releasing.insert(id, ());
                start(kept)
            }
            _ => self.table.end(id, start),
        }
    }

    /// [`Table::released`].
    fn released(&self, id: u64) -> bool {
        self.table.released(id)
    }

    /// [`Table::is_acquired`].
    fn is_acquired(&self, session_gone: impl FnOnce() -> bool) -> bool {
        self.table.is_acquired(session_gone)
    }
}

fn table(plant: Option<Plant>) -> Arc<Planted> {
    Arc::new(Planted {
        table: Table::new(),
        plant,
    })
}

/// The server, as far as one session's lock node goes.
struct Server {
    /// The session is alive (its end is final).
    alive: bool,
    /// Our lock node exists (gone once deleted or with the session).
    node: bool,
}

/// A guard dropped on a plain thread: its delete runs on the runtime's thread (spawned from
/// the drop, as off the runtime) while the session ends on another, and the caller asks
/// `is_acquired_in_this_process`. The hold is ended while held; its entry is there until the
/// delete ends (by deleting, or failing with the session gone), and gone after; the table
/// never says false while the node is ours and the session alive.
fn release_racing_the_session_end(plant: Option<Plant>) -> impl Fn() + Sync + Send + 'static {
    move || {
        let table = table(plant);
        let server = Arc::new(Mutex::new(Server {
            alive: true,
            node: true,
        }));
        let id = table.hold();
        let plain = {
            let (table, server) = (table.clone(), server.clone());
            thread::spawn(move || {
                let tasks = table.clone();
                table.end(id, move |kept| {
                    assert!(kept.is_some(), "a hold ended that was not held");
                    thread::spawn(move || {
                        let mut state = server.lock().unwrap();
                        if state.alive {
                            state.node = false;
                        }
                        drop(state);
                        assert!(
                            tasks.released(id),
                            "a release's entry was gone before its delete ended"
                        );
                    })
                })
            })
        };
        let session = {
            let server = server.clone();
            thread::spawn(move || {
                let mut state = server.lock().unwrap();
                state.alive = false;
                state.node = false;
            })
        };
        let acquired = table.is_acquired(|| !server.lock().unwrap().alive);
        // Both only ever go from true to false: true now, so true then.
        let state = server.lock().unwrap();
        assert!(
            acquired || !state.alive || !state.node,
            "not acquired in this process while our node is still ours"
        );
        drop(state);
        plain.join().unwrap().join().unwrap();
        session.join().unwrap();
        assert!(!table.is_acquired(|| false), "an entry left forever");
    }
}

/// Two guards taken and dropped on two threads at once (each delete ending at once): each
/// hold gets its own id, is ended while held and released while releasing, and while each
/// guard is alive the table says acquired even with the session gone. `audit`: the ids and
/// the entries' accounting are checked too (off, to show the guard-alive check itself fails).
fn holds_taken_and_ended_at_once(
    plant: Option<Plant>,
    audit: bool,
) -> impl Fn() + Sync + Send + 'static {
    move || {
        let table = table(plant);
        let guard = |table: Arc<Planted>| {
            move || {
                let id = table.hold();
                assert!(
                    table.is_acquired(|| true),
                    "not acquired in this process while a guard is alive"
                );
                table.end(id, |kept| {
                    let released = table.released(id);
                    if audit {
                        assert!(kept.is_some(), "a hold ended that was not held");
                        assert!(released, "a hold released that was not releasing");
                    }
                });
                id
            }
        };
        let other = thread::spawn(guard(table.clone()));
        let mine = guard(table.clone())();
        let other = other.join().unwrap();
        if audit {
            assert_ne!(other, mine, "two holds got one id");
            assert!(!table.is_acquired(|| false), "an entry left forever");
        }
    }
}

#[test]
fn a_release_racing_the_session_end_keeps_its_entry_until_its_delete_ends() {
    assert!(check(release_racing_the_session_end(None)) > 1);
}

#[test]
fn plant_start_before_releasing_loses_the_entry() {
    fails(
        release_racing_the_session_end(Some(Plant::StartBeforeReleasing)),
        "a release's entry was gone before its delete ended",
    );
}

#[test]
fn plant_split_end_says_not_acquired_while_the_node_is_ours() {
    fails(
        release_racing_the_session_end(Some(Plant::SplitEnd)),
        "not acquired in this process while our node is still ours",
    );
}

#[test]
fn holds_taken_at_once_each_count_while_their_guard_is_alive() {
    assert!(check(holds_taken_and_ended_at_once(None, true)) > 1);
}

#[test]
fn plant_id_outside_lock_gives_two_holds_one_id() {
    // Found first: both guards, one after the other, got id 1.
    fails(
        holds_taken_and_ended_at_once(Some(Plant::IdOutsideLock), true),
        "two holds got one id",
    );
    // And with the ids unchecked: one guard's end takes the other's entry with it.
    fails(
        holds_taken_and_ended_at_once(Some(Plant::IdOutsideLock), false),
        "not acquired in this process while a guard is alive",
    );
}
