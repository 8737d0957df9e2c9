//! A `tracing` subscriber that records every event, for the tests that assert what a user
//! watching the logs sees (feature `tracing`). A binary installs it as its global subscriber
//! once: one such test per binary.

#![allow(dead_code, clippy::unwrap_used, clippy::indexing_slicing)]

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// One event as the subscriber saw it: its target, level, message and fields as text.
#[derive(Debug, Clone)]
pub struct Seen {
    pub target: String,
    pub level: tracing::Level,
    pub fields: BTreeMap<String, String>,
}

impl Seen {
    pub fn message(&self) -> &str {
        self.fields.get("message").map_or("", String::as_str)
    }
    pub fn field(&self, name: &str) -> Option<&str> {
        self.fields.get(name).map(String::as_str)
    }
}

/// Records every event (spans are not used by the crates).
#[derive(Clone, Default)]
pub struct Collector {
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
    pub async fn wait_for(&self, from: usize, what: &str, pred: impl Fn(&Seen) -> bool) -> usize {
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
    pub fn len(&self) -> usize {
        self.events.lock().unwrap().len()
    }
    pub fn get(&self, i: usize) -> Seen {
        self.events.lock().unwrap()[i].clone()
    }
}

impl Collector {
    /// Every event seen so far that `pred` accepts.
    pub fn all(&self, pred: impl Fn(&Seen) -> bool) -> Vec<Seen> {
        self.events
            .lock()
            .unwrap()
            .iter()
            .filter(|e| pred(e))
            .cloned()
            .collect()
    }
}
