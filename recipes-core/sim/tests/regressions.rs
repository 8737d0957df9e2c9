//! Seeds that found bugs, kept as regression tests (replay one with
//! `cargo xtask sim --recipe R --seed S --schedules 1`). A fix changes the ops a machine sends,
//! so a seed no longer drives exactly the schedule that found its bug; each bug also has a
//! scripted test in recipes-core that replays the exact sequence
//! (`a_downgrade_is_one_exact_create_with_a_listing_that_shows_the_write_node`,
//! `a_wrapped_sequence_never_holds`).

#![allow(clippy::unwrap_used)]

use zk_sim::{Config, Recipe, run};

fn passes(recipe: Recipe, seed: u64) {
    if let Err(failure) = run(seed, Config::new(recipe)) {
        panic!("{failure}");
    }
}

/// The downgrade created its read node without looking at its write node, which someone had
/// deleted: a queued writer held while the downgraded reader read (found as a fencing token
/// going backwards). The downgrade now holds only after a listing shows both nodes.
#[test]
fn rwlock_seed_1112_downgrade_after_its_write_node_was_deleted() {
    passes(Recipe::ReadWrite, 1112);
}

/// The downgrade held on its create's reply and an existence check of the write node while
/// its own read node had been deleted in between. The listing now decides.
#[test]
fn rwlock_seed_341_downgrade_whose_read_node_was_deleted_in_flight() {
    passes(Recipe::ReadWrite, 341);
}

/// A lock directory whose sequence counter wraps (the first node after 2147483647 is
/// -2147483648 and sorts first): the new node must not hold beside the old holder.
#[test]
fn rwlock_seed_3_wrapped_sequence() {
    passes(Recipe::ReadWrite, 3);
}

/// Two semaphore attempts in the lease stage at once: the first's inner lock node was deleted
/// by hand after the listing that let it hold the inner lock, so the next took the inner lock
/// too; their leases together exceeded the maximum and both waited. The first had watched its
/// inner node, but that watch's request was lost with the connection and never sent again:
/// both waited for ever. The watch is now set again on reconnecting.
#[test]
fn semaphore_seed_241566_inner_watch_lost_with_the_connection() {
    passes(Recipe::Semaphore { leases: 2 }, 241_566);
}

/// The same bug in the semaphore mutex: the reply to the inner node's watch (`NoNode`: it had
/// been deleted by hand) was lost with the connection.
#[test]
fn semaphore_mutex_seed_140475_inner_watch_reply_lost() {
    passes(Recipe::SemaphoreMutex, 140_475);
}

/// A semaphore attempt for two leases: its first lease was deleted by hand, `leases/` (a
/// container) went with it, and the second create failed with `NoNode`. The attempt made the
/// directory again and created one lease, which got the first one's name (the sequence starts
/// over in a new directory): it held "two" leases with one node. A create that finds
/// `leases/` missing after one of ours was made there now ends the attempt (retried anew).
#[test]
fn semaphore_seed_362809_lease_directory_made_again() {
    passes(Recipe::Semaphore { leases: 2 }, 362_809);
}
