//! Scripted tests of the acquire machine: replies, watch events, connection changes and time
//! are fed in by hand; the ops that come out are checked. No server, no clock.

use std::time::{Duration, Instant};

use crate::*;

const U1: &str = "11111111-1111-4111-8111-111111111111";
const BASE: &str = "/locks/a";

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn name(uuid: &str, seq: u32) -> String {
    format!("_c_{uuid}-lock-{seq:010}")
}

fn path(n: &str) -> String {
    format!("{BASE}/{n}")
}

fn machine(deadline: Option<Instant>) -> AcquireMachine<Exclusive> {
    AcquireMachine::new(
        BASE,
        Exclusive::mutex(),
        U1,
        bytes::Bytes::from_static(b"10.0.0.1"),
        deadline,
    )
}

fn create_op() -> Op {
    Op::Create {
        path: format!("{BASE}/_c_{U1}-lock-"),
        data: bytes::Bytes::from_static(b"10.0.0.1"),
    }
}

fn children_op() -> Op {
    Op::Children { path: BASE.into() }
}

fn kids(names: &[&str]) -> Reply {
    Reply::Children(names.iter().map(|s| (*s).to_owned()).collect())
}

#[test]
fn uncontended_lock_is_one_flight() {
    let t0 = Instant::now();
    let mut m = machine(None);
    assert_eq!(m.start(t0), [create_op(), children_op()]);
    let ours = name(U1, 3);
    assert_eq!(
        m.on_reply(
            t0,
            Reply::Created {
                path: path(&ours),
                czxid: 42
            }
        ),
        []
    );
    // Another client's node sorting after ours does not matter.
    assert_eq!(
        m.on_reply(
            t0,
            kids(&[&name("22222222-2222-4222-8222-222222222222", 4), &ours])
        ),
        []
    );
    assert_eq!(
        m.outcome(),
        Some(&Outcome::Held {
            path: path(&ours),
            czxid: 42
        })
    );
    assert_eq!(m.cleanup(), Cleanup::Nothing);
}

#[test]
fn waiters_watch_their_immediate_predecessor_with_get_data_and_list_again_on_its_event() {
    let t0 = Instant::now();
    let (a, b, ours) = (
        name("a0000000-0000-4000-8000-000000000000", 1),
        name("b0000000-0000-4000-8000-000000000000", 2),
        name(U1, 3),
    );
    let mut m = machine(None);
    m.start(t0);
    m.on_reply(
        t0,
        Reply::Created {
            path: path(&ours),
            czxid: 9,
        },
    );
    // Unsorted, as the server returns them.
    assert_eq!(
        m.on_reply(t0, kids(&[&ours, &a, &b])),
        [Op::Watch { path: path(&b) }]
    );
    assert_eq!(m.on_reply(t0, Reply::Watching), []);
    assert_eq!(m.outcome(), None);
    // b goes: one listing (a may still be ahead of us), and it is: watch a.
    assert_eq!(m.on_watch(t0 + ms(10), true), [children_op()]);
    assert_eq!(
        m.on_reply(t0, kids(&[&ours, &a])),
        [Op::Watch { path: path(&a) }]
    );
    // a went before our watch was set; it was the only node ahead of us: we hold.
    assert_eq!(m.on_reply(t0, Reply::Failed(ZkError::NoNode)), []);
    assert_eq!(
        m.outcome(),
        Some(&Outcome::Held {
            path: path(&ours),
            czxid: 9
        })
    );
}

#[test]
fn missing_parents_are_made_then_the_attempt_goes_again() {
    let t0 = Instant::now();
    let mut m = machine(None);
    m.start(t0);
    assert_eq!(
        m.on_reply(t0, Reply::Failed(ZkError::NoNode)),
        [Op::CreateParents { path: BASE.into() }]
    );
    // The pipelined listing failed too; nothing to do for it.
    assert_eq!(m.on_reply(t0, Reply::Failed(ZkError::NoNode)), []);
    assert_eq!(m.on_reply(t0, Reply::Done), [create_op(), children_op()]);
    let ours = name(U1, 0);
    m.on_reply(
        t0,
        Reply::Created {
            path: path(&ours),
            czxid: 5,
        },
    );
    m.on_reply(t0, kids(&[&ours]));
    assert!(matches!(m.outcome(), Some(Outcome::Held { .. })));
}

#[test]
fn the_deadline_while_waiting_ends_the_attempt_and_our_node_is_deleted() {
    let t0 = Instant::now();
    let deadline = t0 + ms(500);
    let (a, ours) = (name("a0000000-0000-4000-8000-000000000000", 1), name(U1, 2));
    let mut m = machine(Some(deadline));
    m.start(t0);
    m.on_reply(
        t0,
        Reply::Created {
            path: path(&ours),
            czxid: 9,
        },
    );
    m.on_reply(t0, kids(&[&a, &ours]));
    m.on_reply(t0, Reply::Watching);
    assert_eq!(m.poll_timeout(), Some(deadline));
    assert_eq!(m.on_timeout(t0 + ms(499)), []); // spurious
    assert_eq!(m.outcome(), None);
    assert_eq!(m.on_timeout(deadline), []);
    assert_eq!(m.outcome(), Some(&Outcome::TimedOut));
    assert_eq!(m.cleanup(), Cleanup::Delete(path(&ours)));
    assert_eq!(m.poll_timeout(), None);
}

#[test]
fn a_zero_timeout_takes_a_free_lock_and_gives_up_at_once_on_a_held_one() {
    let t0 = Instant::now();
    let ours = name(U1, 1);
    let mut m = machine(Some(t0));
    m.start(t0);
    m.on_timeout(t0);
    m.on_reply(
        t0,
        Reply::Created {
            path: path(&ours),
            czxid: 3,
        },
    );
    m.on_reply(t0, kids(&[&ours]));
    assert!(
        matches!(m.outcome(), Some(Outcome::Held { .. })),
        "uncontended wins even past the deadline"
    );

    let a = name("a0000000-0000-4000-8000-000000000000", 0);
    let mut m = machine(Some(t0));
    m.start(t0);
    m.on_reply(
        t0,
        Reply::Created {
            path: path(&ours),
            czxid: 3,
        },
    );
    // No getData on the predecessor: Curator spends a round trip on it, we do not.
    assert_eq!(m.on_reply(t0, kids(&[&a, &ours])), []);
    assert_eq!(m.outcome(), Some(&Outcome::TimedOut));
    assert_eq!(m.cleanup(), Cleanup::Delete(path(&ours)));
}

#[test]
fn a_lost_create_reply_is_recovered_by_the_protection_prefix() {
    let t0 = Instant::now();
    let ours = name(U1, 7);
    let mut m = machine(None);
    m.start(t0);
    assert_eq!(m.on_reply(t0, Reply::Failed(ZkError::ConnectionLoss)), []);
    assert_eq!(m.on_reply(t0, Reply::Failed(ZkError::ConnectionLoss)), []);
    // Abandoned now, the node may exist: find it by prefix and delete it.
    assert_eq!(
        m.cleanup(),
        Cleanup::FindAndDelete {
            base: BASE.into(),
            prefix: format!("_c_{U1}-")
        }
    );
    assert_eq!(m.on_state(t0, Connection::Disconnected), []);
    assert_eq!(m.on_state(t0, Connection::Connected), [children_op()]);
    // It was created: adopt it (and read its czxid) instead of creating a second one.
    assert_eq!(
        m.on_reply(t0, kids(&[&ours])),
        [Op::Stat { path: path(&ours) }]
    );
    assert_eq!(m.on_reply(t0, Reply::Stat { czxid: 77 }), [children_op()]);
    m.on_reply(t0, kids(&[&ours]));
    assert_eq!(
        m.outcome(),
        Some(&Outcome::Held {
            path: path(&ours),
            czxid: 77
        })
    );
}

#[test]
fn a_create_that_was_not_applied_is_sent_again_with_the_same_uuid() {
    let t0 = Instant::now();
    let mut m = machine(None);
    m.start(t0);
    m.on_reply(t0, Reply::Failed(ZkError::ConnectionLoss));
    m.on_reply(t0, Reply::Failed(ZkError::ConnectionLoss));
    m.on_state(t0, Connection::Connected);
    let other = name("a0000000-0000-4000-8000-000000000000", 0);
    assert_eq!(
        m.on_reply(t0, kids(&[&other])),
        [create_op(), children_op()]
    );
}

#[test]
fn expiry_and_local_loss_end_the_attempt() {
    let t0 = Instant::now();
    let (a, ours) = (name("a0000000-0000-4000-8000-000000000000", 1), name(U1, 2));
    let mut m = machine(None);
    m.start(t0);
    m.on_reply(
        t0,
        Reply::Created {
            path: path(&ours),
            czxid: 9,
        },
    );
    m.on_reply(t0, kids(&[&a, &ours]));
    m.on_reply(t0, Reply::Watching);
    m.on_state(t0, Connection::Disconnected);
    assert_eq!(m.outcome(), None, "a disconnect alone changes nothing");
    m.on_state(t0, Connection::Expired);
    assert_eq!(m.outcome(), Some(&Outcome::Failed(Failure::SessionExpired)));
    assert_eq!(m.cleanup(), Cleanup::Nothing, "the session took our node");

    let mut m = machine(None);
    m.start(t0);
    m.on_reply(
        t0,
        Reply::Created {
            path: path(&ours),
            czxid: 9,
        },
    );
    m.on_reply(t0, kids(&[&a, &ours]));
    m.on_state(t0, Connection::Lost);
    assert_eq!(m.outcome(), Some(&Outcome::Failed(Failure::SessionLost)));
    assert_eq!(
        m.cleanup(),
        Cleanup::Delete(path(&ours)),
        "in case the session survives"
    );
}

#[test]
fn our_node_missing_from_the_list_means_it_vanished() {
    let t0 = Instant::now();
    let mut m = machine(None);
    m.start(t0);
    m.on_reply(
        t0,
        Reply::Created {
            path: path(&name(U1, 2)),
            czxid: 9,
        },
    );
    m.on_reply(
        t0,
        kids(&[&name("a0000000-0000-4000-8000-000000000000", 1)]),
    );
    assert_eq!(m.outcome(), Some(&Outcome::Failed(Failure::NodeVanished)));
}

#[test]
fn a_listing_lost_to_a_disconnect_is_retried_once_connected() {
    let t0 = Instant::now();
    let ours = name(U1, 2);
    let mut m = machine(None);
    m.start(t0);
    m.on_reply(
        t0,
        Reply::Created {
            path: path(&ours),
            czxid: 9,
        },
    );
    assert_eq!(m.on_reply(t0, Reply::Failed(ZkError::ConnectionLoss)), []);
    assert_eq!(m.on_state(t0, Connection::Connected), [children_op()]);
    m.on_reply(t0, kids(&[&ours]));
    assert!(matches!(m.outcome(), Some(Outcome::Held { .. })));
}

#[test]
fn other_errors_fail_the_attempt() {
    let t0 = Instant::now();
    let mut m = machine(None);
    m.start(t0);
    m.on_reply(t0, Reply::Failed(ZkError::Other));
    assert_eq!(m.outcome(), Some(&Outcome::Failed(Failure::Zk)));
    assert_eq!(m.cleanup(), Cleanup::Nothing);
}

#[test]
fn second_in_line_holds_on_its_predecessors_deletion_without_listing_again() {
    let t0 = Instant::now();
    let (a, ours) = (name("a0000000-0000-4000-8000-000000000000", 1), name(U1, 2));
    let mut m = machine(None);
    m.start(t0);
    m.on_reply(
        t0,
        Reply::Created {
            path: path(&ours),
            czxid: 9,
        },
    );
    assert_eq!(
        m.on_reply(t0, kids(&[&a, &ours])),
        [Op::Watch { path: path(&a) }]
    );
    m.on_reply(t0, Reply::Watching);
    // Any other event on it (a revoke written to it, the watch's end): list again.
    assert_eq!(m.on_watch(t0, false), [children_op()]);
    assert_eq!(
        m.on_reply(t0, kids(&[&a, &ours])),
        [Op::Watch { path: path(&a) }]
    );
    m.on_reply(t0, Reply::Watching);
    // Its deletion: nothing can be ahead of us now.
    assert_eq!(m.on_watch(t0, true), []);
    assert_eq!(
        m.outcome(),
        Some(&Outcome::Held {
            path: path(&ours),
            czxid: 9
        })
    );
}
