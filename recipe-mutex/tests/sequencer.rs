//! A guard's `Sequencer`, checked by another client (a service outside ZooKeeper that trusts
//! nothing the holder says): valid while held; refused once the node is deleted by another
//! client, once the holder's session is closed or expired, for a waiter's node, and for a
//! forged session; its text round-trips and malformed text is refused. Against a real
//! ZooKeeper server started by the tests.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::time::Duration;

use recipe_mutex::{InterProcessMutex, NodeKind, ParseSequencerError, Sequencer, SequencerCheck};
use zk_client::SessionState;
use zk_testkit::FaultProxy;

mod support;
use support::{bounded, client, client_at, server, wait_children, wait_state};

/// The sequencer as a service receives it: text, parsed.
fn over_the_wire(s: &Sequencer) -> Sequencer {
    let text = s.to_string();
    assert!(text.starts_with("zk-seq:1:mutex:"), "{text}");
    text.parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_that_still_holds_is_valid_and_its_text_round_trips() {
    let path = "/t/sequencer/holds";
    let c = client().await;
    let service = client().await;
    let g = InterProcessMutex::new(c.clone(), path)
        .unwrap()
        .lock()
        .await
        .unwrap();
    let s = g.sequencer();
    assert_eq!(s.lock_path(), path);
    assert_eq!(s.node(), g.node_path());
    assert_eq!(s.czxid(), g.fencing_token());
    assert_eq!(s.session_id(), c.session_id());
    assert_eq!(s.kind(), NodeKind::Mutex);
    let received = over_the_wire(&s);
    assert_eq!(received, s);
    assert_eq!(
        received.check(&service).await.unwrap(),
        SequencerCheck::Valid
    );
    // A forged session (the right node, claimed by another session) is refused.
    let forged =
        Sequencer::new(NodeKind::Mutex, s.node(), s.czxid(), service.session_id()).unwrap();
    assert_eq!(
        forged.check(&service).await.unwrap(),
        SequencerCheck::OtherOwner {
            session_id: c.session_id()
        }
    );
    // A forged creation (the right node and session, another czxid) too.
    let forged = Sequencer::new(NodeKind::Mutex, s.node(), s.czxid() - 1, s.session_id()).unwrap();
    assert_eq!(
        forged.check(&service).await.unwrap(),
        SequencerCheck::OtherNode { czxid: s.czxid() }
    );
    g.release().await.unwrap();
    // Released: no longer valid.
    assert_eq!(
        received.check(&service).await.unwrap(),
        SequencerCheck::NodeGone
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_whose_node_another_client_deleted_is_refused_and_the_next_is_valid() {
    let path = "/t/sequencer/deleted";
    let c = client().await;
    let other = client().await;
    let service = client().await;
    let g = InterProcessMutex::new(c.clone(), path)
        .unwrap()
        .lock()
        .await
        .unwrap();
    let stale = over_the_wire(&g.sequencer());
    let waiter = InterProcessMutex::new(other.clone(), path).unwrap();
    let waiting = tokio::spawn(async move { waiter.lock().await });
    wait_children(&service, path, 2).await;
    other.delete(g.node_path(), None).await.unwrap();
    let g2 = bounded(waiting).await.unwrap().unwrap();
    // The session of the old holder lives on; its claim does not.
    assert_eq!(c.state(), SessionState::Connected);
    assert_eq!(
        stale.check(&service).await.unwrap(),
        SequencerCheck::NodeGone
    );
    let fresh = over_the_wire(&g2.sequencer());
    assert!(fresh.czxid() > stale.czxid());
    assert_eq!(fresh.check(&service).await.unwrap(), SequencerCheck::Valid);
    g.release().await.unwrap();
    g2.release().await.unwrap();
    wait_children(&service, path, 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_whose_session_was_closed_is_refused() {
    let path = "/t/sequencer/closed";
    let c = client().await;
    let service = client().await;
    let g = InterProcessMutex::new(c.clone(), path)
        .unwrap()
        .lock()
        .await
        .unwrap();
    let s = over_the_wire(&g.sequencer());
    assert!(s.check(&service).await.unwrap().is_valid());
    c.close().await.unwrap();
    wait_children(&service, path, 0).await;
    assert_eq!(s.check(&service).await.unwrap(), SequencerCheck::NodeGone);
    drop(g);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_whose_session_expired_is_refused_though_it_was_never_told() {
    let proxy = FaultProxy::start(server().addr()).unwrap();
    let path = "/t/sequencer/expired";
    let service = client().await;
    let c = client_at(&proxy.addr().to_string(), Duration::from_secs(4)).await;
    let g = InterProcessMutex::new(c.clone(), path)
        .unwrap()
        .lock()
        .await
        .unwrap();
    let s = over_the_wire(&g.sequencer());
    assert!(s.check(&service).await.unwrap().is_valid());
    // The holder is cut off: the server expires its session and deletes its node, while the
    // holder itself cannot hear of it. The service, asking the server, knows.
    proxy.stall();
    wait_children(&service, path, 0).await;
    assert_eq!(s.check(&service).await.unwrap(), SequencerCheck::NodeGone);
    proxy.pass();
    wait_state(&c, |st| st == SessionState::Expired).await;
    drop(g);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiters_node_is_not_granted() {
    let path = "/t/sequencer/waiter";
    let c = client().await;
    let other = client().await;
    let service = client().await;
    let g = InterProcessMutex::new(c.clone(), path)
        .unwrap()
        .lock()
        .await
        .unwrap();
    let waiter = InterProcessMutex::new(other.clone(), path).unwrap();
    let participants = waiter.clone();
    let waiting = tokio::spawn(async move { waiter.lock().await });
    wait_children(&service, path, 2).await;
    let nodes = participants.participant_nodes().await.unwrap();
    assert_eq!(nodes[0], g.node_path());
    // What a waiter could present: its own node, session and czxid, all true, but not first.
    let (_, stat) = service.get_data(&nodes[1]).await.unwrap();
    let s = Sequencer::new(NodeKind::Mutex, &nodes[1], stat.czxid, other.session_id()).unwrap();
    assert_eq!(
        over_the_wire(&s).check(&service).await.unwrap(),
        SequencerCheck::NotGranted { ahead: 1 }
    );
    g.release().await.unwrap();
    let g2 = bounded(waiting).await.unwrap().unwrap();
    assert_eq!(g2.sequencer(), s, "the waiter's guard names the same node");
    assert_eq!(s.check(&service).await.unwrap(), SequencerCheck::Valid);
    g2.release().await.unwrap();
    wait_children(&service, path, 0).await;
}

#[test]
fn malformed_text_is_a_parse_error() {
    for (text, want) in [
        (
            "zk-seq:9:mutex:0000000000000001:5:/a/b",
            ParseSequencerError::BadPrefix,
        ),
        (
            "zk-seq:1:mutex:0000000000000001:5",
            ParseSequencerError::Missing("node path"),
        ),
        (
            "zk-seq:1:mutex:xyz:5:/a/b",
            ParseSequencerError::BadSession("xyz".into()),
        ),
        (
            "zk-seq:1:mutex:0000000000000001:5:/a",
            ParseSequencerError::BadNode("/a".into()),
        ),
    ] {
        let err = text.parse::<Sequencer>().unwrap_err();
        assert_eq!(err, want, "{text}");
        assert!(!err.to_string().is_empty());
    }
}
