//! A `metrics` recorder for tests: every value kept, by series (`name{k=v,...}`, labels
//! sorted), and [`recorded`], which runs a test on a current-thread runtime of its own inside
//! `metrics::with_local_recorder`, so every task it spawns records there and tests running
//! in parallel do not see each other's figures.

#![allow(dead_code, clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use metrics::{
    Counter, CounterFn, Gauge, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder,
    SharedString, Unit,
};

/// A metric's name with its labels, `name{k=v,...}` (labels sorted).
fn series(key: &Key) -> String {
    let mut labels: Vec<String> = key
        .labels()
        .map(|l| format!("{}={}", l.key(), l.value()))
        .collect();
    labels.sort();
    format!("{}{{{}}}", key.name(), labels.join(","))
}

/// What a test recorded: counter totals and histogram values, by series.
#[derive(Default)]
struct Seen {
    counters: BTreeMap<String, u64>,
    histograms: BTreeMap<String, Vec<f64>>,
}

/// The test recorder: every value kept, by series.
#[derive(Clone, Default)]
pub struct Keep(Arc<Mutex<Seen>>);

struct Handle {
    seen: Keep,
    series: String,
}

impl CounterFn for Handle {
    fn increment(&self, value: u64) {
        let mut seen = self.seen.0.lock().unwrap();
        *seen.counters.entry(self.series.clone()).or_default() += value;
    }
    fn absolute(&self, value: u64) {
        let mut seen = self.seen.0.lock().unwrap();
        seen.counters.insert(self.series.clone(), value);
    }
}

impl HistogramFn for Handle {
    fn record(&self, value: f64) {
        let mut seen = self.seen.0.lock().unwrap();
        seen.histograms
            .entry(self.series.clone())
            .or_default()
            .push(value);
    }
}

impl Keep {
    fn handle(&self, key: &Key) -> Arc<Handle> {
        Arc::new(Handle {
            seen: self.clone(),
            series: series(key),
        })
    }

    /// Every counter, `name{labels} = n`, sorted.
    pub fn counters(&self) -> Vec<String> {
        let seen = self.0.lock().unwrap();
        seen.counters
            .iter()
            .map(|(k, v)| format!("{k} = {v}"))
            .collect()
    }

    pub fn counter(&self, series: &str) -> u64 {
        let seen = self.0.lock().unwrap();
        seen.counters.get(series).copied().unwrap_or(0)
    }

    pub fn histogram(&self, series: &str) -> Vec<f64> {
        let seen = self.0.lock().unwrap();
        seen.histograms.get(series).cloned().unwrap_or_default()
    }

    /// Histogram series and how many values each got, `name{labels} x n`, sorted.
    pub fn histogram_counts(&self) -> Vec<String> {
        let seen = self.0.lock().unwrap();
        seen.histograms
            .iter()
            .map(|(k, v)| format!("{k} x {}", v.len()))
            .collect()
    }
}

impl Recorder for Keep {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        Counter::from_arc(self.handle(key))
    }
    fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::noop()
    }
    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::from_arc(self.handle(key))
    }
}

/// Runs `test` on a current-thread runtime with a recorder of its own: what it recorded.
pub fn recorded<F: Future<Output = ()>>(test: impl FnOnce() -> F) -> Keep {
    let keep = Keep::default();
    metrics::with_local_recorder(&keep, || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(test());
        // The runtime's background tasks (cleanups, watches) end here, still recorded.
        drop(runtime);
    });
    keep
}

/// The series `name{labels}` (labels sorted, `k=v` joined by commas).
pub fn s(name: &str, labels: &str) -> String {
    format!("{name}{{{labels}}}")
}
