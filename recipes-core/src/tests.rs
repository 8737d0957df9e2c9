//! Scripted tests of the machines: replies, watch events, connection changes and time are fed
//! in by hand through a [`Runner`] (so the liveness invariant is checked after every input);
//! the ops that come out are checked. No server, no clock.

use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::*;

const U1: &str = "11111111-1111-4111-8111-111111111111";
const UA: &str = "a0000000-0000-4000-8000-000000000000";
const UB: &str = "b0000000-0000-4000-8000-000000000000";
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

/// A machine under a runner; every input must leave it live.
struct Script<M: Machine>(Runner<M>);

impl<M: Machine> Script<M> {
    fn feed(&mut self, now: Instant, input: Input) -> Vec<Op> {
        self.0.handle(now, input).expect("machine stuck");
        std::iter::from_fn(|| self.0.poll_op()).collect()
    }
    fn start(&mut self, now: Instant) -> Vec<Op> {
        self.feed(now, Input::Start)
    }
    fn reply(&mut self, now: Instant, reply: Reply) -> Vec<Op> {
        self.feed(now, Input::Reply(reply))
    }
    fn conn(&mut self, now: Instant, c: Connection) -> Vec<Op> {
        self.feed(now, Input::Connection(c))
    }
    fn timeout(&mut self, now: Instant) -> Vec<Op> {
        self.feed(now, Input::Timeout)
    }
    fn m(&self) -> &M {
        self.0.machine()
    }
}

fn attempt(deadline: Option<Instant>) -> Script<AcquireMachine<Exclusive>> {
    Script(Runner::new(AcquireMachine::new(
        BASE,
        Exclusive::mutex(),
        U1,
        Bytes::from_static(b"10.0.0.1"),
        deadline,
    )))
}

fn create_op() -> Op {
    Op::Create {
        path: format!("{BASE}/_c_{U1}-lock-"),
        mode: NodeMode::EphemeralSequential,
        data: Bytes::from_static(b"10.0.0.1"),
    }
}

fn children_op() -> Op {
    Op::Children {
        path: BASE.into(),
        watch: false,
    }
}

fn sync_op() -> Op {
    Op::Sync { path: BASE.into() }
}

fn watch_op(n: &str) -> Op {
    Op::GetData {
        path: path(n),
        watch: true,
    }
}

fn kids(names: &[&str]) -> Reply {
    Reply::Children(names.iter().map(|s| (*s).to_owned()).collect())
}

fn created(n: &str, czxid: i64) -> Reply {
    Reply::Created {
        path: path(n),
        czxid,
    }
}

fn data() -> Reply {
    Reply::Data {
        data: Bytes::new(),
        czxid: 1,
    }
}

fn deleted(n: &str) -> Input {
    Input::Watch {
        kind: WatchKind::Data,
        path: path(n),
        event: WatchEvent::Deleted,
    }
}

fn failed(e: ZkError) -> Reply {
    Reply::Failed(e)
}

fn held(n: &str, czxid: i64) -> Option<&'static Outcome<Held>> {
    Some(Box::leak(Box::new(Outcome::Held(Held {
        path: path(n),
        czxid,
    }))))
}

fn find_ours() -> Cleanup {
    Cleanup::FindAndDelete {
        base: BASE.into(),
        prefix: format!("_c_{U1}-"),
    }
}

/// Takes `s` to waiting behind `pred`, with our node `ours` (czxid 9).
fn waiting_behind(
    s: &mut Script<AcquireMachine<Exclusive>>,
    t0: Instant,
    ours: &str,
    listing: &[&str],
    pred: &str,
) {
    assert_eq!(s.start(t0), [create_op(), children_op()]);
    assert_eq!(s.reply(t0, created(ours, 9)), []);
    assert_eq!(s.reply(t0, kids(listing)), [watch_op(pred)]);
    assert_eq!(s.reply(t0, data()), []);
    assert_eq!(s.m().outcome(), None);
}

/// Starts `s`, loses its create's reply to a disconnect, reconnects and answers the sync: the
/// recovery listing is in flight.
fn lose_the_create_reply_and_sync(s: &mut Script<AcquireMachine<Exclusive>>, t0: Instant) {
    assert_eq!(s.start(t0), [create_op(), children_op()]);
    assert_eq!(s.reply(t0, failed(ZkError::ConnectionLoss)), []);
    assert_eq!(s.conn(t0, Connection::Disconnected), []);
    assert_eq!(s.reply(t0, failed(ZkError::ConnectionLoss)), []);
    assert_eq!(s.m().cleanups(), [find_ours()]);
    assert_eq!(
        s.conn(t0, Connection::Connected),
        [sync_op(), children_op()]
    );
    assert_eq!(s.reply(t0, Reply::Done), []);
}

#[test]
fn uncontended_lock_is_one_flight() {
    let t0 = Instant::now();
    let mut s = attempt(None);
    assert_eq!(s.start(t0), [create_op(), children_op()]);
    let ours = name(U1, 3);
    assert_eq!(s.reply(t0, created(&ours, 42)), []);
    // Another client's node sorting after ours does not matter.
    assert_eq!(s.reply(t0, kids(&[&name(UA, 4), &ours])), []);
    assert_eq!(s.m().outcome(), held(&ours, 42));
    assert_eq!(s.m().cleanups(), []);
}

#[test]
fn waiters_watch_their_predecessor_and_hold_only_after_a_listing() {
    let t0 = Instant::now();
    let (a, b, ours) = (name(UA, 1), name(UB, 2), name(U1, 3));
    let mut s = attempt(None);
    // Unsorted, as the server returns them.
    waiting_behind(&mut s, t0, &ours, &[&ours, &a, &b], &b);
    // b goes: list again (a is still ahead of us): watch a.
    assert_eq!(s.feed(t0 + ms(10), deleted(&b)), [children_op()]);
    assert_eq!(s.reply(t0, kids(&[&ours, &a])), [watch_op(&a)]);
    // a went before our watch was set: list again, and only then hold.
    assert_eq!(s.reply(t0, failed(ZkError::NoNode)), [children_op()]);
    assert_eq!(s.m().outcome(), None);
    assert_eq!(s.reply(t0, kids(&[&ours])), []);
    assert_eq!(s.m().outcome(), held(&ours, 9));
}

/// Defect 1: the second in line must not hold on its predecessor's deletion alone. With A
/// holding and our node deleted by hand, A's release must not make us a holder.
#[test]
fn the_predecessors_deletion_alone_never_makes_a_holder() {
    let t0 = Instant::now();
    let (a, ours) = (name(UA, 1), name(U1, 2));
    let mut s = attempt(None);
    waiting_behind(&mut s, t0, &ours, &[&a, &ours], &a);
    // Someone deletes our node, then A releases.
    assert_eq!(s.feed(t0, deleted(&a)), [children_op()]);
    assert_eq!(s.m().outcome(), None, "held on the deletion alone");
    let c = name(UB, 3);
    assert_eq!(s.reply(t0, kids(&[&c])), []);
    assert_eq!(
        s.m().outcome(),
        Some(&Outcome::Failed(Failure::NodeVanished))
    );
    assert_eq!(s.m().cleanups(), []);
}

/// Defect 1, second form: a node that sorts before ours appears while we wait (a sequence
/// number past 2^31 prints negative and sorts first; a foreign name such as `-x`).
#[test]
fn a_node_sorting_before_ours_that_appears_later_keeps_us_waiting() {
    let t0 = Instant::now();
    let (a, ours) = (name(UA, 1), name(U1, 2));
    let wrapped = format!("_c_{UB}-lock--2147483647");
    let mut s = attempt(None);
    waiting_behind(&mut s, t0, &ours, &[&a, &ours], &a);
    assert_eq!(s.feed(t0, deleted(&a)), [children_op()]);
    assert_eq!(s.reply(t0, kids(&[&ours, &wrapped])), [watch_op(&wrapped)]);
    assert_eq!(s.m().outcome(), None);
}

/// A node of ours whose sequence wrapped (negative, sorting before older nodes) never holds.
#[test]
fn a_wrapped_sequence_never_holds() {
    let t0 = Instant::now();
    let ours = format!("_c_{U1}-lock--2147483648");
    let older = name(UA, 2_147_483_647);
    let mut s = attempt(None);
    s.start(t0);
    s.reply(t0, created(&ours, 9));
    assert_eq!(s.reply(t0, kids(&[&older, &ours])), []);
    assert_eq!(
        s.m().outcome(),
        Some(&Outcome::Failed(Failure::SequenceWrapped))
    );
    assert_eq!(s.m().cleanups(), [Cleanup::Delete(path(&ours))]);
}

#[test]
fn a_data_change_on_the_predecessor_means_look_again() {
    let t0 = Instant::now();
    let (a, ours) = (name(UA, 1), name(U1, 2));
    let mut s = attempt(None);
    waiting_behind(&mut s, t0, &ours, &[&a, &ours], &a);
    let changed = Input::Watch {
        kind: WatchKind::Data,
        path: path(&a),
        event: WatchEvent::DataChanged,
    };
    assert_eq!(s.feed(t0, changed), [children_op()]);
    assert_eq!(s.reply(t0, kids(&[&a, &ours])), [watch_op(&a)]);
}

#[test]
fn missing_parents_are_made_then_the_attempt_goes_again() {
    let t0 = Instant::now();
    let mut s = attempt(None);
    s.start(t0);
    assert_eq!(s.reply(t0, failed(ZkError::NoNode)), []);
    assert_eq!(
        s.reply(t0, failed(ZkError::NoNode)),
        [Op::CreateParents { path: BASE.into() }]
    );
    assert_eq!(s.reply(t0, Reply::Done), [create_op(), children_op()]);
    let ours = name(U1, 0);
    s.reply(t0, created(&ours, 5));
    s.reply(t0, kids(&[&ours]));
    assert_eq!(s.m().outcome(), held(&ours, 5));
}

/// Defect 9: a missing chroot node is reported as such.
#[test]
fn parents_that_cannot_be_made_are_reported_as_missing() {
    let t0 = Instant::now();
    let mut s = attempt(None);
    s.start(t0);
    s.reply(t0, failed(ZkError::NoNode));
    s.reply(t0, failed(ZkError::NoNode));
    assert_eq!(s.reply(t0, failed(ZkError::NoNode)), []);
    assert_eq!(
        s.m().outcome(),
        Some(&Outcome::Failed(Failure::ParentMissing))
    );
}

#[test]
fn the_deadline_while_waiting_ends_the_attempt_and_our_node_is_owed() {
    let t0 = Instant::now();
    let (a, ours) = (name(UA, 1), name(U1, 2));
    let mut s = attempt(Some(t0 + ms(100)));
    waiting_behind(&mut s, t0, &ours, &[&a, &ours], &a);
    assert_eq!(s.m().poll_timeout(), Some(t0 + ms(100)));
    assert_eq!(s.timeout(t0 + ms(99)), []);
    assert_eq!(s.m().outcome(), None);
    assert_eq!(s.timeout(t0 + ms(100)), []);
    assert_eq!(s.m().outcome(), Some(&Outcome::TimedOut));
    assert_eq!(s.m().cleanups(), [Cleanup::Delete(path(&ours))]);
}

#[test]
fn a_zero_timeout_takes_a_free_lock_and_gives_up_at_once_on_a_held_one() {
    let t0 = Instant::now();
    let ours = name(U1, 1);
    let mut s = attempt(Some(t0));
    s.start(t0);
    // Replies in flight at the deadline: a short grace, not a timer in the past.
    assert_eq!(s.m().poll_timeout(), Some(t0 + DEADLINE_GRACE));
    s.reply(t0 + ms(1), created(&ours, 3));
    s.reply(t0 + ms(1), kids(&[&ours]));
    assert_eq!(s.m().outcome(), held(&ours, 3));

    let mut s = attempt(Some(t0));
    s.start(t0);
    s.reply(t0 + ms(1), created(&ours, 3));
    assert_eq!(s.reply(t0 + ms(1), kids(&[&name(UA, 0), &ours])), []);
    assert_eq!(s.m().outcome(), Some(&Outcome::TimedOut));
    assert_eq!(s.m().cleanups(), [Cleanup::Delete(path(&ours))]);
}

/// Defect 2: at the deadline while disconnected, the attempt ends at once; the create whose
/// reply is unknown is owed to the cleanups.
#[test]
fn the_deadline_while_disconnected_ends_at_once_and_owes_the_unknown_create() {
    let t0 = Instant::now();
    let mut s = attempt(Some(t0 + ms(100)));
    s.start(t0);
    s.conn(t0 + ms(10), Connection::Disconnected);
    assert_eq!(s.timeout(t0 + ms(100)), []);
    assert_eq!(s.m().outcome(), Some(&Outcome::TimedOut));
    assert_eq!(s.m().cleanups(), [find_ours()]);
    // The create's reply comes in later: now the exact node is owed, no listing needed.
    let ours = name(U1, 4);
    s.reply(t0 + ms(200), created(&ours, 3));
    assert_eq!(s.m().cleanups(), [Cleanup::Delete(path(&ours))]);
}

/// Defect 2: replies in flight past the deadline while connected are waited for only for the
/// grace; the attempt then ends.
#[test]
fn the_grace_past_the_deadline_is_bounded() {
    let t0 = Instant::now();
    let mut s = attempt(Some(t0 + ms(100)));
    s.start(t0);
    assert_eq!(s.timeout(t0 + ms(100)), []);
    assert_eq!(s.m().outcome(), None);
    assert_eq!(s.m().poll_timeout(), Some(t0 + ms(100) + DEADLINE_GRACE));
    s.timeout(t0 + ms(100) + DEADLINE_GRACE);
    assert_eq!(s.m().outcome(), Some(&Outcome::TimedOut));
    assert_eq!(s.m().cleanups(), [find_ours()]);
}

/// Defect 8: abandoning with the create in flight owes a find-by-prefix only until its reply
/// comes; then the exact path.
#[test]
fn abandoning_with_the_create_in_flight_owes_the_exact_node_once_its_reply_comes() {
    let t0 = Instant::now();
    let mut s = attempt(None);
    s.start(t0);
    assert_eq!(s.feed(t0, Input::Abandon), []);
    assert_eq!(s.m().outcome(), Some(&Outcome::Failed(Failure::Abandoned)));
    assert_eq!(s.m().cleanups(), [find_ours()]);
    let ours = name(U1, 8);
    assert_eq!(s.reply(t0, created(&ours, 3)), []);
    assert_eq!(s.m().cleanups(), [Cleanup::Delete(path(&ours))]);
    assert_eq!(s.reply(t0, kids(&[&ours])), [], "abandoned: issues nothing");
    assert_eq!(s.m().cleanups(), [Cleanup::Delete(path(&ours))]);
}

#[test]
fn a_lost_create_reply_is_recovered_by_the_protection_prefix_after_a_sync() {
    let t0 = Instant::now();
    let mut s = attempt(None);
    s.start(t0);
    assert_eq!(s.reply(t0, failed(ZkError::ConnectionLoss)), []);
    assert_eq!(s.conn(t0, Connection::Disconnected), []);
    assert_eq!(s.reply(t0, failed(ZkError::ConnectionLoss)), []);
    assert_eq!(s.m().cleanups(), [find_ours()]);
    assert_eq!(
        s.conn(t0, Connection::Connected),
        [sync_op(), children_op()]
    );
    let ours = name(U1, 7);
    s.reply(t0, Reply::Done);
    assert_eq!(
        s.reply(t0, kids(&[&name(UA, 6), &ours])),
        [
            Op::Exists {
                path: path(&ours),
                watch: false
            },
            children_op()
        ]
    );
    assert_eq!(s.m().cleanups(), [Cleanup::Delete(path(&ours))]);
    s.reply(t0, Reply::Exists(Some(77)));
    assert_eq!(
        s.reply(t0, kids(&[&name(UA, 6), &ours])),
        [watch_op(&name(UA, 6))]
    );
}

/// Issue 34, defect 1: the recovery's `Exists` (for the czxid) is lost to a second cut. The
/// czxid is asked again when a listing shows our node in front; the attempt holds, instead of
/// failing with `Zk(Other)` on a free lock while the session lives.
#[test]
fn a_czxid_lost_to_a_second_cut_is_asked_again() {
    let t0 = Instant::now();
    let mut s = attempt(None);
    let ours = name(U1, 7);
    let exists = Op::Exists {
        path: path(&ours),
        watch: false,
    };
    lose_the_create_reply_and_sync(&mut s, t0);
    assert_eq!(s.reply(t0, kids(&[&ours])), [exists.clone(), children_op()]);
    // The second cut: the exists and the listing fail.
    assert_eq!(s.conn(t0, Connection::Disconnected), []);
    assert_eq!(s.reply(t0, failed(ZkError::ConnectionLoss)), []);
    assert_eq!(s.reply(t0, failed(ZkError::ConnectionLoss)), []);
    assert_eq!(s.conn(t0, Connection::Connected), [children_op()]);
    // In front, but the czxid is unknown: ask for it, and list again with it.
    assert_eq!(s.reply(t0, kids(&[&ours])), [exists.clone(), children_op()]);
    assert_eq!(s.m().outcome(), None);
    assert_eq!(s.m().cleanups(), [Cleanup::Delete(path(&ours))]);
    assert_eq!(s.reply(t0, Reply::Exists(Some(77))), []);
    assert_eq!(s.reply(t0, kids(&[&ours])), []);
    assert_eq!(s.m().outcome(), held(&ours, 77));
    // Asked again and gone meanwhile (meddled with): the listing without it decides.
    let mut s = attempt(None);
    lose_the_create_reply_and_sync(&mut s, t0);
    s.reply(t0, kids(&[&ours]));
    s.reply(t0, failed(ZkError::ConnectionLoss));
    s.reply(t0, failed(ZkError::ConnectionLoss));
    s.conn(t0, Connection::Connected);
    s.reply(t0, kids(&[&ours]));
    assert_eq!(s.reply(t0, Reply::Exists(None)), []);
    assert_eq!(s.reply(t0, kids(&[])), []);
    assert_eq!(
        s.m().outcome(),
        Some(&Outcome::Failed(Failure::NodeVanished))
    );
}

#[test]
fn a_create_that_was_not_applied_is_sent_again_with_the_same_uuid() {
    let t0 = Instant::now();
    let mut s = attempt(None);
    lose_the_create_reply_and_sync(&mut s, t0);
    assert_eq!(
        s.reply(t0, kids(&[&name(UA, 6)])),
        [create_op(), children_op()]
    );
}

/// Defect 4: the recovery listing fails with `NoNode` (the base container was removed): the
/// attempt starts over with the parents, and is never left without anything to do.
#[test]
fn a_failed_recovery_listing_starts_over_instead_of_stalling() {
    let t0 = Instant::now();
    let mut s = attempt(Some(t0 + ms(100)));
    s.start(t0);
    s.reply(t0, failed(ZkError::ConnectionLoss));
    s.conn(t0, Connection::Disconnected);
    s.reply(t0, failed(ZkError::ConnectionLoss));
    s.conn(t0 + ms(10), Connection::Connected);
    s.reply(t0 + ms(10), failed(ZkError::NoNode));
    assert_eq!(
        s.reply(t0 + ms(10), failed(ZkError::NoNode)),
        [Op::CreateParents { path: BASE.into() }]
    );
    // A listing that fails otherwise, past the deadline: it ends, with a timer never in the past.
    let mut s = attempt(Some(t0 + ms(100)));
    s.start(t0);
    s.reply(t0, failed(ZkError::ConnectionLoss));
    s.reply(t0, failed(ZkError::ConnectionLoss));
    s.conn(t0 + ms(150), Connection::Connected);
    assert_eq!(s.m().outcome(), Some(&Outcome::TimedOut));
    assert_eq!(s.m().cleanups(), [find_ours()]);
}

/// Defect 4: a connection loss the session has not reported yet is retried after a delay, not
/// in a loop.
#[test]
fn a_connection_loss_before_the_state_change_is_retried_after_a_delay() {
    let t0 = Instant::now();
    let (a, ours) = (name(UA, 1), name(U1, 2));
    let mut s = attempt(None);
    waiting_behind(&mut s, t0, &ours, &[&a, &ours], &a);
    assert_eq!(s.feed(t0, deleted(&a)), [children_op()]);
    assert_eq!(s.reply(t0, failed(ZkError::ConnectionLoss)), []);
    assert_eq!(s.m().poll_timeout(), Some(t0 + RETRY_DELAY));
    assert_eq!(s.timeout(t0 + RETRY_DELAY), [children_op()]);
}

/// Defect 7: a create re-sent with the same protection id that fails keeps the duty to find
/// the first one.
#[test]
fn a_failed_resent_create_keeps_the_duty_to_find_the_first() {
    let t0 = Instant::now();
    let mut s = attempt(None);
    lose_the_create_reply_and_sync(&mut s, t0);
    assert_eq!(s.reply(t0, kids(&[])), [create_op(), children_op()]);
    // The second create fails too, for a lost connection: the duty stays.
    s.reply(t0, failed(ZkError::ConnectionLoss));
    assert_eq!(s.m().cleanups(), [find_ours()]);
    // ... and for a final error: it still stays (the first may exist).
    let mut s = attempt(None);
    lose_the_create_reply_and_sync(&mut s, t0);
    s.reply(t0, failed(ZkError::Transient)); // the sync's listing fails for a moment
    s.timeout(t0 + RETRY_DELAY);
    assert_eq!(s.m().cleanups(), [find_ours()]);
}

#[test]
fn a_second_node_of_ours_is_deleted_when_seen() {
    let t0 = Instant::now();
    let (ours, twin) = (name(U1, 3), name(U1, 5));
    let mut s = attempt(None);
    s.start(t0);
    s.reply(t0, created(&ours, 4));
    assert_eq!(
        s.reply(t0, kids(&[&twin, &ours])),
        [Op::Delete { path: path(&twin) }]
    );
    assert_eq!(s.m().outcome(), held(&ours, 4));
}

#[test]
fn expiry_and_local_loss_end_the_attempt() {
    let t0 = Instant::now();
    let (a, ours) = (name(UA, 1), name(U1, 2));
    let mut s = attempt(None);
    waiting_behind(&mut s, t0, &ours, &[&a, &ours], &a);
    s.conn(t0, Connection::Expired);
    assert_eq!(
        s.m().outcome(),
        Some(&Outcome::Failed(Failure::SessionExpired))
    );
    assert_eq!(s.m().cleanups(), [], "ephemerals went with the session");
}

/// Defect 10 of issue 23: `Lost` (no server for the session timeout) is not the end. The
/// session may have survived; the waiter goes on and the next `Connected` or `Expired`
/// decides (Curator's waiter keeps going too).
#[test]
fn local_loss_does_not_end_a_waiter() {
    let t0 = Instant::now();
    let (a, ours) = (name(UA, 1), name(U1, 2));
    // The session survives: the waiter lists again, its node still there, and holds.
    let mut s = attempt(None);
    waiting_behind(&mut s, t0, &ours, &[&a, &ours], &a);
    s.conn(t0, Connection::Disconnected);
    assert_eq!(s.conn(t0, Connection::Lost), []);
    assert_eq!(s.m().outcome(), None);
    // Its watch was restored with the session: the predecessor's deletion reaches it.
    assert_eq!(s.conn(t0, Connection::Connected), []);
    assert_eq!(s.feed(t0, deleted(&a)), [children_op()]);
    s.reply(t0, kids(&[&ours]));
    assert!(matches!(s.m().outcome(), Some(Outcome::Held(_))));

    // It does not: the expiry ends it, nothing to delete.
    let mut s = attempt(None);
    waiting_behind(&mut s, t0, &ours, &[&a, &ours], &a);
    s.conn(t0, Connection::Disconnected);
    s.conn(t0, Connection::Lost);
    s.conn(t0, Connection::Expired);
    assert_eq!(
        s.m().outcome(),
        Some(&Outcome::Failed(Failure::SessionExpired))
    );
    assert_eq!(s.m().cleanups(), []);

    // With a deadline, the deadline ends it.
    let mut s = attempt(Some(t0 + Duration::from_secs(1)));
    waiting_behind(&mut s, t0, &ours, &[&a, &ours], &a);
    s.conn(t0, Connection::Disconnected);
    s.conn(t0, Connection::Lost);
    s.feed(t0 + Duration::from_secs(2), Input::Timeout);
    assert_eq!(s.m().outcome(), Some(&Outcome::TimedOut));
    assert_eq!(s.m().cleanups(), [Cleanup::Delete(path(&ours))]);
}

#[test]
fn a_listing_lost_to_a_disconnect_is_retried_once_connected() {
    let t0 = Instant::now();
    let (a, ours) = (name(UA, 1), name(U1, 2));
    let mut s = attempt(None);
    waiting_behind(&mut s, t0, &ours, &[&a, &ours], &a);
    s.feed(t0, deleted(&a));
    s.conn(t0, Connection::Disconnected);
    assert_eq!(s.reply(t0, failed(ZkError::ConnectionLoss)), []);
    assert_eq!(s.m().poll_timeout(), None, "waits for the connection");
    assert_eq!(s.conn(t0, Connection::ReadOnly), []);
    assert_eq!(s.conn(t0, Connection::Connected), [children_op()]);
}

#[test]
fn other_errors_fail_the_attempt() {
    let t0 = Instant::now();
    let mut s = attempt(None);
    s.start(t0);
    s.reply(t0, failed(ZkError::Other));
    assert_eq!(
        s.m().outcome(),
        Some(&Outcome::Failed(Failure::Zk(ZkError::Other)))
    );
}

#[test]
fn starting_disconnected_waits_for_the_connection() {
    let t0 = Instant::now();
    let mut s = attempt(None);
    assert_eq!(s.conn(t0, Connection::Disconnected), []);
    assert_eq!(s.start(t0), []);
    assert_eq!(
        s.conn(t0, Connection::Connected),
        [create_op(), children_op()]
    );
}

#[test]
fn a_lock_under_the_root_has_no_double_slash() {
    let t0 = Instant::now();
    let mut m = AcquireMachine::new("/", Exclusive::mutex(), U1, Bytes::new(), None);
    m.handle(t0, Input::Start);
    assert_eq!(
        m.poll_op(),
        Some(Op::Create {
            path: format!("/_c_{U1}-lock-"),
            mode: NodeMode::EphemeralSequential,
            data: Bytes::new()
        })
    );
}

// The cleanup machine.

fn cleanup(cleanups: Vec<Cleanup>) -> Script<CleanupMachine> {
    Script(Runner::new(CleanupMachine::new(cleanups)))
}

/// Defect 6: every transient error is retried, with a growing back-off.
#[test]
fn cleanups_retry_every_transient_error_until_done() {
    let t0 = Instant::now();
    let node = path(&name(U1, 1));
    let del = Op::Delete { path: node.clone() };
    let mut s = cleanup(vec![Cleanup::Delete(node)]);
    assert_eq!(s.start(t0), std::slice::from_ref(&del));
    assert_eq!(s.reply(t0, failed(ZkError::Transient)), []);
    assert_eq!(s.m().poll_timeout(), Some(t0 + ms(50)));
    assert_eq!(s.timeout(t0 + ms(50)), std::slice::from_ref(&del));
    assert_eq!(s.reply(t0 + ms(50), failed(ZkError::Transient)), []);
    assert_eq!(s.m().poll_timeout(), Some(t0 + ms(150)));
    s.conn(t0 + ms(60), Connection::Disconnected);
    assert_eq!(
        s.conn(t0 + ms(70), Connection::Connected),
        std::slice::from_ref(&del)
    );
    assert_eq!(s.reply(t0, failed(ZkError::ConnectionLoss)), []);
    s.conn(t0 + ms(80), Connection::Disconnected);
    assert_eq!(s.conn(t0 + ms(90), Connection::Connected), [del]);
    assert_eq!(s.reply(t0, Reply::Done), []);
    assert_eq!(s.m().outcome(), Some(&Outcome::Held(())));
}

#[test]
fn find_and_delete_syncs_first_and_deletes_every_node_with_the_prefix() {
    let t0 = Instant::now();
    let mut s = cleanup(vec![find_ours(), Cleanup::Delete("/x".into())]);
    assert_eq!(s.start(t0), [sync_op(), children_op()]);
    s.reply(t0, Reply::Done);
    assert_eq!(
        s.reply(t0, kids(&[&name(UA, 1), &name(U1, 2), &name(U1, 3)])),
        [
            Op::Delete {
                path: path(&name(U1, 2))
            },
            Op::Delete {
                path: path(&name(U1, 3))
            }
        ]
    );
    s.reply(t0, Reply::Done);
    assert_eq!(
        s.reply(t0, failed(ZkError::NoNode)),
        [Op::Delete { path: "/x".into() }]
    );
    // The session's end ends the rest (the nodes went with it), and says so.
    s.reply(t0, failed(ZkError::SessionExpired));
    assert_eq!(
        s.m().outcome(),
        Some(&Outcome::Failed(Failure::SessionExpired))
    );
}

#[test]
fn a_final_error_gives_one_cleanup_up_and_goes_on() {
    let t0 = Instant::now();
    let mut s = cleanup(vec![
        Cleanup::Delete("/a".into()),
        Cleanup::Delete("/b".into()),
    ]);
    s.start(t0);
    assert_eq!(
        s.reply(t0, failed(ZkError::Other)),
        [Op::Delete { path: "/b".into() }]
    );
    s.reply(t0, Reply::Done);
    assert_eq!(
        s.m().outcome(),
        Some(&Outcome::Failed(Failure::Zk(ZkError::Other)))
    );
}

#[test]
fn a_runner_catches_a_machine_left_with_nothing_to_do() {
    /// Forgets to do anything after its first reply.
    struct Forgetful;
    impl Machine for Forgetful {
        type Output = ();
        fn handle(&mut self, _: Instant, _: Input) {}
        fn poll_op(&mut self) -> Option<Op> {
            None
        }
        fn poll_timeout(&self) -> Option<Instant> {
            None
        }
        fn outcome(&self) -> Option<&Outcome<()>> {
            None
        }
        fn cleanups(&self) -> Vec<Cleanup> {
            Vec::new()
        }
    }
    let mut r = Runner::new(Forgetful);
    assert!(r.handle(Instant::now(), Input::Start).is_err());

    /// Keeps a timer in the past (the spin of defect 4).
    struct Spinner(Instant);
    impl Machine for Spinner {
        type Output = ();
        fn handle(&mut self, _: Instant, _: Input) {}
        fn poll_op(&mut self) -> Option<Op> {
            None
        }
        fn poll_timeout(&self) -> Option<Instant> {
            Some(self.0)
        }
        fn outcome(&self) -> Option<&Outcome<()>> {
            None
        }
        fn cleanups(&self) -> Vec<Cleanup> {
            Vec::new()
        }
    }
    let t0 = Instant::now();
    let mut r = Runner::new(Spinner(t0));
    let err = r.handle(t0 + ms(1), Input::Timeout).unwrap_err();
    assert!(err.to_string().contains("already due"), "{err}");
}

// The read/write lock.

mod rw {
    use super::*;
    use crate::rwlock::{ReadPredicate, WritePredicate, rw_sort};

    fn r(uuid: &str, seq: i32) -> String {
        format!("_c_{uuid}-__READ__{seq:010}")
    }

    fn w(uuid: &str, seq: i32) -> String {
        format!("_c_{uuid}-__WRIT__{seq:010}")
    }

    fn sorted(names: &[&str]) -> Vec<String> {
        let mut v: Vec<String> = names.iter().map(|s| (*s).to_owned()).collect();
        rw_sort(&mut v);
        v
    }

    #[test]
    fn reads_and_writes_interleave_by_sequence() {
        let v = sorted(&[&r(UA, 4), &w(UB, 3), "foreign", &r(U1, 1)]);
        assert_eq!(v, [r(U1, 1), w(UB, 3), r(UA, 4), "foreign".to_owned()]);
    }

    #[test]
    fn a_writer_holds_only_when_first_and_watches_the_node_just_before_it() {
        let p = WritePredicate;
        let v = sorted(&[&r(UA, 1), &w(UB, 2), &w(U1, 3)]);
        assert_eq!(p.verdict(&v, &w(UB, 2)), Ok(Verdict::Watch(r(UA, 1))));
        assert_eq!(p.verdict(&v, &w(U1, 3)), Ok(Verdict::Watch(w(UB, 2))));
        let v = sorted(&[&w(UB, 2)]);
        assert_eq!(p.verdict(&v, &w(UB, 2)), Ok(Verdict::Hold));
        // Foreign names block writers.
        let v = sorted(&[&w(UB, 2), "-x"]);
        assert_eq!(p.verdict(&v, &w(UB, 2)), Ok(Verdict::Watch("-x".into())));
    }

    #[test]
    fn readers_share_unless_a_writer_is_ahead_and_then_watch_the_first_writer() {
        let p = ReadPredicate;
        let v = sorted(&[
            &r(UA, 1),
            &r(UB, 2),
            &w(U1, 3),
            &r(UA, 4),
            &w(UB, 5),
            &r(U1, 6),
        ]);
        assert_eq!(p.verdict(&v, &r(UA, 1)), Ok(Verdict::Hold));
        assert_eq!(p.verdict(&v, &r(UB, 2)), Ok(Verdict::Hold));
        assert_eq!(p.verdict(&v, &r(UA, 4)), Ok(Verdict::Watch(w(U1, 3))));
        assert_eq!(p.verdict(&v, &r(U1, 6)), Ok(Verdict::Watch(w(U1, 3))));
        // Foreign names do not block readers.
        let v = sorted(&[&r(UA, 1), "-x"]);
        assert_eq!(p.verdict(&v, &r(UA, 1)), Ok(Verdict::Hold));
        assert_eq!(p.verdict(&v, &r(UB, 9)), Err(NodeMissing));
    }

    /// CURATOR-621: the downgrade node sorts level with its write node, so a writer queued
    /// behind stays blocked once the write node goes, and a later reader waits for that writer.
    #[test]
    fn a_downgrade_node_keeps_a_queued_writer_blocked() {
        let down = crate::rwlock::downgrade_name(U1, &w(UA, 1)).unwrap();
        assert_eq!(down, r(U1, 1));
        let v = sorted(&[&w(UB, 2), &w(UA, 1), &down, &r(UA, 3)]);
        assert_eq!(
            WritePredicate.verdict(&v, &w(UB, 2)),
            Ok(Verdict::Watch(v[1].clone()))
        );
        // The write lock released: the writer behind still waits, on the downgrade node.
        let v = sorted(&[&w(UB, 2), &down, &r(UA, 3)]);
        assert_eq!(
            WritePredicate.verdict(&v, &w(UB, 2)),
            Ok(Verdict::Watch(down))
        );
        assert_eq!(
            ReadPredicate.verdict(&v, &r(UA, 3)),
            Ok(Verdict::Watch(w(UB, 2)))
        );
    }

    fn downgrade(deadline: Option<Instant>) -> Script<DowngradeMachine> {
        let m = DowngradeMachine::new(BASE, &w(UA, 7), 3, U1, Bytes::new(), deadline).unwrap();
        Script(Runner::new(m))
    }

    fn down_path() -> String {
        path(&r(U1, 7))
    }

    fn create_down() -> [Op; 2] {
        [
            Op::Create {
                path: down_path(),
                mode: NodeMode::Ephemeral,
                data: Bytes::new(),
            },
            children_op(),
        ]
    }

    fn check_down() -> [Op; 2] {
        [sync_op(), children_op()]
    }

    fn both() -> Reply {
        kids(&[&w(UA, 7), &r(U1, 7), &w(UB, 8)])
    }

    #[test]
    fn a_downgrade_is_one_exact_create_with_a_listing_that_shows_the_write_node() {
        let t0 = Instant::now();
        let mut s = downgrade(None);
        assert_eq!(s.start(t0), create_down());
        let created = Reply::Created {
            path: down_path(),
            czxid: 12,
        };
        assert_eq!(s.reply(t0, created.clone()), []);
        assert_eq!(s.m().outcome(), None, "the listing decides");
        s.reply(t0, both());
        // The read hold carries the write hold's token.
        assert_eq!(
            s.m().outcome(),
            Some(&Outcome::Held(Held {
                path: down_path(),
                czxid: 3
            }))
        );
        assert_eq!(s.m().cleanups(), []);

        // Someone deleted our write node: another writer may hold; do not read.
        let mut s = downgrade(None);
        s.start(t0);
        s.reply(t0, created);
        s.reply(t0, kids(&[&r(U1, 7), &w(UB, 8)]));
        assert_eq!(
            s.m().outcome(),
            Some(&Outcome::Failed(Failure::NodeVanished))
        );
        assert_eq!(s.m().cleanups(), [Cleanup::Delete(down_path())]);
    }

    /// Defect 5 of issue 23: a downgrade whose replies do not come (a stalled connection)
    /// ended only when they did; it now ends within its deadline and one grace, and owes
    /// the delete of the read node it may have made.
    #[test]
    fn a_downgrade_with_replies_stalled_ends_one_grace_past_its_deadline() {
        let t0 = Instant::now();
        let mut s = downgrade(Some(t0 + ms(200)));
        assert_eq!(s.start(t0), create_down());
        assert_eq!(s.m().poll_timeout(), Some(t0 + ms(200) + DEADLINE_GRACE));
        assert_eq!(s.timeout(t0 + ms(200)), []);
        assert_eq!(
            s.m().outcome(),
            None,
            "replies may still come within the grace"
        );
        s.timeout(t0 + ms(200) + DEADLINE_GRACE);
        assert_eq!(s.m().outcome(), Some(&Outcome::TimedOut));
        assert_eq!(s.m().cleanups(), [Cleanup::Delete(down_path())]);
    }

    #[test]
    fn a_lost_downgrade_reply_is_recovered_by_the_exact_name() {
        let t0 = Instant::now();
        let mut s = downgrade(None);
        s.start(t0);
        s.conn(t0, Connection::Disconnected);
        assert_eq!(s.reply(t0, failed(ZkError::ConnectionLoss)), []);
        assert_eq!(s.reply(t0, failed(ZkError::ConnectionLoss)), []);
        assert_eq!(s.m().cleanups(), [Cleanup::Delete(down_path())]);
        assert_eq!(s.conn(t0, Connection::Connected), check_down());
        s.reply(t0, Reply::Done);
        s.reply(t0, both());
        assert!(matches!(s.m().outcome(), Some(Outcome::Held(_))));

        // Not applied: created again; NodeExists then is ours, and the listing shows it.
        let mut s = downgrade(None);
        s.start(t0);
        s.conn(t0, Connection::Disconnected);
        s.reply(t0, failed(ZkError::ConnectionLoss));
        s.reply(t0, failed(ZkError::ConnectionLoss));
        s.conn(t0, Connection::Connected);
        s.reply(t0, Reply::Done);
        assert_eq!(s.reply(t0, kids(&[&w(UA, 7)])), create_down());
        s.reply(t0, failed(ZkError::NodeExists));
        s.reply(t0, both());
        assert!(matches!(s.m().outcome(), Some(Outcome::Held(_))));
    }

    #[test]
    fn a_downgrade_waiting_for_the_connection_ends_at_its_deadline_and_owes_its_node() {
        let t0 = Instant::now();
        let mut s = downgrade(Some(t0 + ms(100)));
        s.start(t0);
        s.conn(t0, Connection::Disconnected);
        s.reply(t0, failed(ZkError::ConnectionLoss));
        s.reply(t0, failed(ZkError::ConnectionLoss));
        assert_eq!(s.m().poll_timeout(), Some(t0 + ms(100)));
        s.timeout(t0 + ms(100));
        assert_eq!(s.m().outcome(), Some(&Outcome::TimedOut));
        assert_eq!(s.m().cleanups(), [Cleanup::Delete(down_path())]);
        // Abandoned with its create in flight: the exact node is owed.
        let mut s = downgrade(None);
        s.start(t0);
        s.feed(t0, Input::Abandon);
        assert_eq!(s.m().cleanups(), [Cleanup::Delete(down_path())]);
    }
}

mod semaphore {
    use super::*;
    use crate::semaphore::{MaxLeases, SemaphoreMachine};

    const SEM: &str = "/sem";

    fn inner(uuid: &str, seq: u32) -> String {
        format!("_c_{uuid}-lock-{seq:010}")
    }
    fn lease(uuid: &str, seq: u32) -> String {
        format!("_c_{uuid}-lease-{seq:010}")
    }
    fn lease_path(n: &str) -> String {
        format!("{SEM}/leases/{n}")
    }
    fn inner_path(n: &str) -> String {
        format!("{SEM}/locks/{n}")
    }
    fn sem(qty: u32, max: &MaxLeases, deadline: Option<Instant>) -> Script<SemaphoreMachine> {
        Script(Runner::new(SemaphoreMachine::new(
            SEM,
            qty,
            max.clone(),
            U1,
            Bytes::new(),
            deadline,
        )))
    }
    fn lease_create() -> Op {
        Op::Create {
            path: format!("{SEM}/leases/_c_{U1}-lease-"),
            mode: NodeMode::EphemeralSequential,
            data: Bytes::new(),
        }
    }
    fn leases(watch: bool) -> Op {
        Op::Children {
            path: format!("{SEM}/leases"),
            watch,
        }
    }
    fn leases_changed() -> Input {
        Input::Watch {
            kind: WatchKind::Children,
            path: format!("{SEM}/leases"),
            event: WatchEvent::ChildrenChanged,
        }
    }
    /// Starts and takes the inner lock (uncontended); returns the lease stage's first ops.
    fn take_inner(s: &mut Script<SemaphoreMachine>, t0: Instant) -> Vec<Op> {
        let ops = s.start(t0);
        assert_eq!(
            ops.len(),
            2,
            "inner create and listing in one flight: {ops:?}"
        );
        assert_eq!(
            ops[1],
            Op::Children {
                path: format!("{SEM}/locks"),
                watch: false
            }
        );
        let me = inner(U1, 0);
        let none = s.reply(
            t0,
            Reply::Created {
                path: inner_path(&me),
                czxid: 10,
            },
        );
        assert!(none.is_empty());
        s.reply(t0, kids(&[&me]))
    }
    fn watch_inner() -> Op {
        Op::GetData {
            path: inner_path(&inner(U1, 0)),
            watch: true,
        }
    }
    /// A first count that is too high: count again with a watch, and watch the inner node.
    fn too_many(s: &mut Script<SemaphoreMachine>, t0: Instant, names: &[&str]) {
        assert_eq!(s.reply(t0, kids(names)), vec![leases(true), watch_inner()]);
        assert!(s.reply(t0, kids(names)).is_empty());
        assert!(s.reply(t0, data()).is_empty());
    }
    fn lease_created(n: &str, czxid: i64) -> Reply {
        Reply::Created {
            path: lease_path(n),
            czxid,
        }
    }

    #[test]
    fn uncontended_is_two_flights_with_no_watch_and_the_inner_lock_released_after() {
        let t0 = Instant::now();
        let max = MaxLeases::new(3);
        let mut s = sem(1, &max, None);
        assert_eq!(take_inner(&mut s, t0), vec![lease_create(), leases(false)]);
        let l = lease(U1, 4);
        assert!(s.reply(t0, lease_created(&l, 11)).is_empty());
        assert!(
            s.m().releases().is_empty(),
            "nothing released before holding"
        );
        s.reply(t0, kids(&["a", "b", &l]));
        assert_eq!(
            s.m().outcome(),
            Some(&Outcome::Held(vec![Held {
                path: lease_path(&l),
                czxid: 11
            }]))
        );
        assert_eq!(
            s.m().releases(),
            vec![Cleanup::Delete(inner_path(&inner(U1, 0)))]
        );
        assert!(s.m().cleanups().is_empty());
        assert!(
            s.0.watches().is_empty(),
            "no watch left: no wasted notification"
        );
    }

    #[test]
    fn too_many_children_wait_on_a_children_watch_holding_the_inner_lock() {
        let t0 = Instant::now();
        let max = MaxLeases::new(1);
        let mut s = sem(1, &max, None);
        take_inner(&mut s, t0);
        let l = lease(U1, 2);
        s.reply(t0, lease_created(&l, 11));
        // Two children for one lease: count again, this time with a watch.
        too_many(&mut s, t0, &["x", &l]);
        assert_eq!(s.0.watches().len(), 2);
        assert!(s.m().outcome().is_none());
        assert!(
            s.m().releases().is_empty(),
            "the inner lock is kept while waiting"
        );
        // Someone leaves: count again.
        assert_eq!(s.feed(t0, leases_changed()), vec![leases(true)]);
        s.reply(t0, kids(&[&l]));
        assert!(matches!(s.m().outcome(), Some(Outcome::Held(v)) if v.len() == 1));
    }

    #[test]
    fn many_leases_are_created_in_one_flight_and_counted_together() {
        let t0 = Instant::now();
        let max = MaxLeases::new(3);
        let mut s = sem(3, &max, None);
        let ops = take_inner(&mut s, t0);
        assert_eq!(
            ops,
            vec![
                lease_create(),
                lease_create(),
                lease_create(),
                leases(false)
            ]
        );
        let ls: Vec<String> = (0..3).map(|i| lease(U1, i)).collect();
        for (i, l) in ls.iter().enumerate() {
            s.reply(t0, lease_created(l, 20 + i as i64));
        }
        // A fourth child (someone else's lease): 4 > 3, wait.
        let mut all: Vec<&str> = ls.iter().map(String::as_str).collect();
        all.push("other");
        assert_eq!(s.reply(t0, kids(&all)), vec![leases(true), watch_inner()]);
        all.pop();
        s.reply(t0, kids(&all));
        let Some(Outcome::Held(held)) = s.m().outcome() else {
            panic!("not held: {:?}", s.m().outcome());
        };
        assert_eq!(held.len(), 3);
    }

    #[test]
    fn a_grown_maximum_wakes_a_waiter() {
        let t0 = Instant::now();
        let max = MaxLeases::new(1);
        let mut s = sem(1, &max, None);
        take_inner(&mut s, t0);
        let l = lease(U1, 1);
        s.reply(t0, lease_created(&l, 11));
        too_many(&mut s, t0, &["x", &l]);
        max.set(2);
        assert_eq!(s.feed(t0, Input::Wake), vec![leases(false)]);
        s.reply(t0, kids(&["x", &l]));
        assert!(matches!(s.m().outcome(), Some(Outcome::Held(_))));
    }

    #[test]
    fn the_deadline_while_waiting_owes_the_leases_and_the_inner_lock() {
        let t0 = Instant::now();
        let max = MaxLeases::new(1);
        let mut s = sem(2, &max, Some(t0 + ms(100)));
        take_inner(&mut s, t0);
        let (a, b) = (lease(U1, 1), lease(U1, 2));
        s.reply(t0, lease_created(&a, 11));
        s.reply(t0, lease_created(&b, 12));
        too_many(&mut s, t0, &[&a, &b]);
        assert_eq!(s.m().poll_timeout(), Some(t0 + ms(100)));
        s.timeout(t0 + ms(100));
        assert_eq!(s.m().outcome(), Some(&Outcome::TimedOut));
        assert_eq!(
            s.m().cleanups(),
            vec![
                Cleanup::Delete(lease_path(&a)),
                Cleanup::Delete(lease_path(&b)),
                Cleanup::Delete(inner_path(&inner(U1, 0))),
            ]
        );
        assert!(s.m().releases().is_empty());
    }

    #[test]
    fn the_inner_node_deleted_by_hand_while_waiting_gives_the_lease_back() {
        let t0 = Instant::now();
        let max = MaxLeases::new(1);
        let mut s = sem(1, &max, None);
        take_inner(&mut s, t0);
        let l = lease(U1, 1);
        s.reply(t0, lease_created(&l, 11));
        too_many(&mut s, t0, &["x", &l]);
        s.feed(
            t0,
            Input::Watch {
                kind: WatchKind::Data,
                path: inner_path(&inner(U1, 0)),
                event: WatchEvent::Deleted,
            },
        );
        assert_eq!(
            s.m().outcome(),
            Some(&Outcome::Failed(Failure::NodeVanished))
        );
        assert_eq!(s.m().cleanups()[0], Cleanup::Delete(lease_path(&l)));
    }

    #[test]
    fn the_inner_watch_lost_with_the_connection_is_set_again() {
        let t0 = Instant::now();
        let max = MaxLeases::new(1);
        let mut s = sem(1, &max, None);
        take_inner(&mut s, t0);
        let l = lease(U1, 1);
        s.reply(t0, lease_created(&l, 11));
        assert_eq!(
            s.reply(t0, kids(&["x", &l])),
            vec![leases(true), watch_inner()]
        );
        s.reply(t0, kids(&["x", &l]));
        s.conn(t0, Connection::Disconnected);
        s.reply(t0, failed(ZkError::ConnectionLoss));
        assert_eq!(s.conn(t0, Connection::Connected), vec![watch_inner()]);
        s.reply(t0, failed(ZkError::NoNode));
        assert_eq!(
            s.m().outcome(),
            Some(&Outcome::Failed(Failure::NodeVanished))
        );
    }

    #[test]
    fn a_lease_directory_gone_after_a_lease_was_made_ends_the_attempt() {
        let t0 = Instant::now();
        let max = MaxLeases::new(2);
        let mut s = sem(2, &max, None);
        take_inner(&mut s, t0);
        let a = lease(U1, 0);
        s.reply(t0, lease_created(&a, 14));
        s.reply(t0, failed(ZkError::NoNode));
        s.reply(t0, failed(ZkError::NoNode));
        assert_eq!(
            s.m().outcome(),
            Some(&Outcome::Failed(Failure::NodeVanished))
        );
    }

    #[test]
    fn a_lost_lease_create_is_found_by_prefix_after_a_sync() {
        let t0 = Instant::now();
        let max = MaxLeases::new(2);
        let mut s = sem(1, &max, None);
        take_inner(&mut s, t0);
        s.reply(t0, failed(ZkError::ConnectionLoss));
        assert!(s.reply(t0, failed(ZkError::ConnectionLoss)).is_empty());
        assert!(s.m().cleanups().iter().any(|c| matches!(
            c,
            Cleanup::FindAndDelete { base, .. } if base == "/sem/leases"
        )));
        s.conn(t0, Connection::Disconnected);
        let ops = s.conn(t0, Connection::Connected);
        assert_eq!(
            ops,
            vec![
                Op::Sync {
                    path: "/sem/leases".into()
                },
                leases(false)
            ]
        );
        let l = lease(U1, 7);
        s.reply(t0, Reply::Done);
        // Found: its creation zxid, then one more count.
        let ops = s.reply(t0, kids(&[&l]));
        assert_eq!(
            ops,
            vec![
                Op::Exists {
                    path: lease_path(&l),
                    watch: false
                },
                leases(false)
            ]
        );
        s.reply(t0, Reply::Exists(Some(33)));
        s.reply(t0, kids(&[&l]));
        assert_eq!(
            s.m().outcome(),
            Some(&Outcome::Held(vec![Held {
                path: lease_path(&l),
                czxid: 33
            }]))
        );
    }

    #[test]
    fn a_lost_create_that_was_not_applied_is_created_again() {
        let t0 = Instant::now();
        let max = MaxLeases::new(2);
        let mut s = sem(1, &max, None);
        take_inner(&mut s, t0);
        s.reply(t0, failed(ZkError::ConnectionLoss));
        s.reply(t0, failed(ZkError::ConnectionLoss));
        s.conn(t0, Connection::Disconnected);
        s.conn(t0, Connection::Connected);
        s.reply(t0, Reply::Done);
        assert_eq!(s.reply(t0, kids(&[])), vec![lease_create(), leases(false)]);
    }

    #[test]
    fn a_lease_deleted_under_us_ends_the_attempt_as_vanished() {
        let t0 = Instant::now();
        let max = MaxLeases::new(1);
        let mut s = sem(1, &max, None);
        take_inner(&mut s, t0);
        let l = lease(U1, 1);
        s.reply(t0, lease_created(&l, 11));
        too_many(&mut s, t0, &["x", &l]);
        s.feed(t0, leases_changed());
        s.reply(t0, kids(&["x"]));
        assert_eq!(
            s.m().outcome(),
            Some(&Outcome::Failed(Failure::NodeVanished))
        );
        assert_eq!(
            s.m().cleanups(),
            vec![
                Cleanup::Delete(lease_path(&l)),
                Cleanup::Delete(inner_path(&inner(U1, 0)))
            ]
        );
    }

    #[test]
    fn abandoning_while_the_inner_lock_is_contended_owes_only_the_inner_node() {
        let t0 = Instant::now();
        let max = MaxLeases::new(1);
        let mut s = sem(1, &max, None);
        s.start(t0);
        let me = inner(U1, 1);
        s.reply(
            t0,
            Reply::Created {
                path: inner_path(&me),
                czxid: 10,
            },
        );
        let first = inner(UA, 0);
        let ops = s.reply(t0, kids(&[&first, &me]));
        assert_eq!(
            ops,
            vec![Op::GetData {
                path: inner_path(&first),
                watch: true
            }]
        );
        s.reply(t0, data());
        s.feed(t0, Input::Abandon);
        assert_eq!(s.m().outcome(), Some(&Outcome::Failed(Failure::Abandoned)));
        assert_eq!(s.m().cleanups(), vec![Cleanup::Delete(inner_path(&me))]);
    }

    #[test]
    fn missing_lease_parents_are_made_then_the_leases_created() {
        let t0 = Instant::now();
        let max = MaxLeases::new(1);
        let mut s = sem(1, &max, None);
        take_inner(&mut s, t0);
        s.reply(t0, failed(ZkError::NoNode));
        let ops = s.reply(t0, failed(ZkError::NoNode));
        assert_eq!(
            ops,
            vec![Op::CreateParents {
                path: "/sem/leases".into()
            }]
        );
        assert_eq!(
            s.reply(t0, Reply::Done),
            vec![lease_create(), leases(false)]
        );
    }

    #[test]
    fn expiry_in_the_lease_stage_owes_nothing() {
        let t0 = Instant::now();
        let max = MaxLeases::new(1);
        let mut s = sem(1, &max, None);
        take_inner(&mut s, t0);
        let l = lease(U1, 1);
        s.reply(t0, lease_created(&l, 11));
        too_many(&mut s, t0, &["x", &l]);
        s.conn(t0, Connection::Expired);
        assert_eq!(
            s.m().outcome(),
            Some(&Outcome::Failed(Failure::SessionExpired))
        );
        assert!(s.m().cleanups().is_empty());
    }

    #[test]
    fn a_zero_timeout_takes_a_free_semaphore() {
        let t0 = Instant::now();
        let max = MaxLeases::new(1);
        let mut s = sem(1, &max, Some(t0));
        take_inner(&mut s, t0);
        let l = lease(U1, 1);
        s.reply(t0 + ms(1), lease_created(&l, 11));
        s.reply(t0 + ms(2), kids(&[&l]));
        assert!(matches!(s.m().outcome(), Some(Outcome::Held(_))));
    }

    #[test]
    fn a_zero_timeout_gives_up_at_once_on_a_full_one() {
        let t0 = Instant::now();
        let max = MaxLeases::new(1);
        let mut s = sem(1, &max, Some(t0));
        take_inner(&mut s, t0);
        let l = lease(U1, 1);
        s.reply(t0 + ms(1), lease_created(&l, 11));
        s.reply(t0 + ms(2), kids(&["x", &l]));
        assert_eq!(s.m().outcome(), Some(&Outcome::TimedOut));
        assert_eq!(s.m().cleanups().len(), 2);
    }
}
