//! Feature `tracing`: a subscriber sees what a user watching the logs needs, from a real
//! server: a reconnect (the connection lost, the decision to reconnect, the session back,
//! same id) and a hand-over (the waiter's hold, with the lock's path, its node, its session
//! and `handed_over`). One test in this binary: it installs the process's global subscriber.

#![cfg(feature = "tracing")]
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use recipe_mutex::InterProcessMutex;
use tokio::sync::Notify;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};
use zk_client::SessionState;
use zk_testkit::FaultProxy;

mod support;
use support::{bounded, client, client_at, server, wait_children, wait_state};

/// One event as the subscriber saw it: its target, level, message and fields as text.
#[derive(Debug, Clone)]
struct Seen {
    target: String,
    level: tracing::Level,
    fields: BTreeMap<String, String>,
}

impl Seen {
    fn message(&self) -> &str {
        self.fields.get("message").map_or("", String::as_str)
    }
    fn field(&self, name: &str) -> Option<&str> {
        self.fields.get(name).map(String::as_str)
    }
}

/// Records every event (spans are not used by the crates).
#[derive(Clone, Default)]
struct Collector {
    events: Arc<Mutex<Vec<Seen>>>,
    added: Arc<Notify>,
}

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl Subscriber for Collector {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        let seen = Seen {
            target: event.metadata().target().to_owned(),
            level: *event.metadata().level(),
            fields,
        };
        self.events.lock().unwrap().push(seen);
        self.added.notify_waiters();
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

impl Collector {
    /// Waits for an event that `pred` accepts, among those seen from `from` on; its index.
    async fn wait_for(&self, from: usize, what: &str, pred: impl Fn(&Seen) -> bool) -> usize {
        let found = tokio::time::timeout(Duration::from_secs(30), async {
            loop {
                let added = self.added.notified();
                if let Some(i) = self.events.lock().unwrap()[from..].iter().position(&pred) {
                    return from + i;
                }
                added.await;
            }
        })
        .await;
        match found {
            Ok(i) => i,
            Err(_) => panic!("no event: {what}; seen: {:#?}", self.events.lock().unwrap()),
        }
    }
    fn len(&self) -> usize {
        self.events.lock().unwrap().len()
    }
    fn get(&self, i: usize) -> Seen {
        self.events.lock().unwrap()[i].clone()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_sees_a_reconnect_and_a_hand_over() {
    let collector = Collector::default();
    tracing::subscriber::set_global_default(collector.clone()).unwrap();

    // A reconnect: the connection through the proxy is cut; the session comes back.
    let proxy = FaultProxy::start(server().addr()).unwrap();
    let a = client_at(&proxy.addr().to_string(), Duration::from_secs(10)).await;
    let session = format!("{:#x}", a.session_id());
    let from = collector.len();
    proxy.cut();
    wait_state(&a, |s| s == SessionState::Disconnected).await;
    wait_state(&a, SessionState::is_connected).await;
    let lost = collector
        .wait_for(from, "connection lost", |e| {
            e.message() == "connection lost: reconnecting" && e.level == tracing::Level::INFO
        })
        .await;
    let seen = collector.get(lost);
    assert!(seen.target.starts_with("zk_client"), "{seen:?}");
    assert_eq!(
        seen.field("server"),
        Some(proxy.addr().to_string().as_str())
    );
    assert!(seen.field("pause_ms").is_some(), "{seen:?}");
    collector
        .wait_for(lost, "the session back", |e| {
            e.message() == "session state changed"
                && e.field("to") == Some("Connected")
                && e.field("session") == Some(session.as_str())
        })
        .await;

    // A hand-over: b waits behind a, a releases, b holds.
    let b = client().await;
    let path = "/t/tracing-hand-over";
    let ma = InterProcessMutex::new(a.clone(), path).unwrap();
    let mb = InterProcessMutex::new(b.clone(), path).unwrap();
    let held = bounded(ma.lock()).await.unwrap();
    let first = collector
        .wait_for(from, "a's hold", |e| {
            e.message() == "lock held" && e.field("session") == Some(session.as_str())
        })
        .await;
    let seen = collector.get(first);
    assert_eq!(seen.field("lock"), Some(path), "{seen:?}");
    assert_eq!(seen.field("handed_over"), Some("false"), "{seen:?}");
    assert_eq!(
        seen.field("fencing_token"),
        Some(held.fencing_token().to_string().as_str())
    );
    let from = collector.len();
    let waiting = tokio::spawn(async move { mb.lock().await });
    let b_session = format!("{:#x}", b.session_id());
    // b waits behind a: it watches a's node.
    collector
        .wait_for(from, "b watching a's node", |e| {
            e.message() == "waiting: watching a node"
                && e.field("session") == Some(b_session.as_str())
        })
        .await;
    wait_children(&b, path, 2).await;
    let from = collector.len();
    bounded(held.release()).await.unwrap();
    let second = bounded(waiting).await.unwrap().unwrap();
    let over = collector
        .wait_for(from, "b's hold, handed over", |e| {
            e.message() == "lock held" && e.field("session") == Some(b_session.as_str())
        })
        .await;
    let seen = collector.get(over);
    assert_eq!(seen.field("handed_over"), Some("true"), "{seen:?}");
    assert_eq!(seen.field("lock"), Some(path), "{seen:?}");
    assert!(
        second.node_path().ends_with(seen.field("node").unwrap()),
        "{seen:?}"
    );
    assert!(seen.target.starts_with("recipe_mutex"), "{seen:?}");
    // a's release was logged, before b's hold.
    let released = collector
        .wait_for(from, "a's release", |e| {
            e.message() == "releasing: delete sent"
        })
        .await;
    assert!(released < over);
    bounded(second.release()).await.unwrap();
}
