//! Read and write guards' `Sequencer`s, checked by another client with the read/write lock's
//! rule: readers ahead of any writer are valid, a waiting writer is not granted until first,
//! a write node's claim is gone after a downgrade (whose read guard's sequencer is refused,
//! fail-closed). Against a real ZooKeeper server started by the tests.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use recipe_rwlock::{InterProcessReadWriteLock, NodeKind, Sequencer, SequencerCheck};

#[path = "../../recipe-mutex/tests/support/mod.rs"]
mod support;
use support::{bounded, client, wait_children};

/// The sequencer as a service receives it: text, parsed.
fn over_the_wire(s: &Sequencer) -> Sequencer {
    s.to_string().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_are_valid_a_waiting_writer_is_not_and_a_downgrade_moves_the_claim() {
    let path = "/t/sequencer/rw";
    let (a, b, w) = (client().await, client().await, client().await);
    let service = client().await;
    let r1 = InterProcessReadWriteLock::new(a.clone(), path)
        .unwrap()
        .read_lock()
        .lock()
        .await
        .unwrap();
    let r2 = InterProcessReadWriteLock::new(b.clone(), path)
        .unwrap()
        .read_lock()
        .lock()
        .await
        .unwrap();
    for r in [&r1, &r2] {
        let s = over_the_wire(&r.sequencer());
        assert_eq!(s.kind(), NodeKind::Read);
        assert_eq!(s.check(&service).await.unwrap(), SequencerCheck::Valid);
    }
    // A writer queues behind both readers: its true node, session and czxid, not granted.
    let writer = InterProcessReadWriteLock::new(w.clone(), path).unwrap();
    let participants = writer.clone();
    let waiting = tokio::spawn(async move { writer.write_lock().lock().await });
    wait_children(&service, path, 3).await;
    let nodes = participants.write_lock().participant_nodes().await.unwrap();
    let write_node = nodes.iter().find(|n| n.contains("__WRIT__")).unwrap();
    let (_, stat) = service.get_data(write_node).await.unwrap();
    let s = Sequencer::new(NodeKind::Write, write_node, stat.czxid, w.session_id()).unwrap();
    assert_eq!(
        over_the_wire(&s).check(&service).await.unwrap(),
        SequencerCheck::NotGranted { ahead: 2 }
    );
    // Claimed as a read, the write node is refused whatever its place.
    let as_read = Sequencer::new(NodeKind::Read, write_node, stat.czxid, w.session_id()).unwrap();
    assert_eq!(
        as_read.check(&service).await.unwrap(),
        SequencerCheck::NotALockNode
    );
    r1.release().await.unwrap();
    r2.release().await.unwrap();
    let g = bounded(waiting).await.unwrap().unwrap();
    assert_eq!(g.sequencer(), s, "the writer's guard names the same node");
    assert_eq!(s.check(&service).await.unwrap(), SequencerCheck::Valid);
    // Downgraded: the write node's claim is gone. The read guard keeps the write hold's
    // fencing token, not its read node's czxid, so its sequencer is refused (fail-closed:
    // a known limit, see `Hold::sequencer`).
    let read = g.downgrade().await.unwrap();
    assert_eq!(s.check(&service).await.unwrap(), SequencerCheck::NodeGone);
    let down = over_the_wire(&read.sequencer());
    assert_eq!(down.kind(), NodeKind::Read);
    assert_eq!(down.czxid(), s.czxid());
    assert!(matches!(
        down.check(&service).await.unwrap(),
        SequencerCheck::OtherNode { czxid } if czxid > s.czxid()
    ));
    read.release().await.unwrap();
    assert_eq!(
        down.check(&service).await.unwrap(),
        SequencerCheck::NodeGone
    );
    wait_children(&service, path, 0).await;
}
