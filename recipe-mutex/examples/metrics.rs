//! The lock metrics (feature `metrics`), printed as they are recorded by a hand-written
//! `metrics` recorder: in a service, install an exporter instead (Prometheus, StatsD, ...),
//! the names are the same. Takes a lock, lets a second attempt time out, releases.
//! `cargo run --example metrics --features metrics -- 127.0.0.1:2181 /app/locks/job`.

use std::sync::Arc;
use std::time::Duration;

use metrics::{
    Counter, CounterFn, Gauge, GaugeFn, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder,
    SharedString, Unit,
};
use recipe_mutex::InterProcessMutex;
use zk_client::Client;

/// A recorder that prints every value it is given, one line each.
struct Printer;

/// One metric's handle: its name and labels as text, printed with each value.
struct Line(String);

impl Line {
    fn of(key: &Key) -> Arc<Self> {
        let labels: Vec<String> = key
            .labels()
            .map(|l| format!("{}=\"{}\"", l.key(), l.value()))
            .collect();
        Arc::new(Line(format!("{}{{{}}}", key.name(), labels.join(","))))
    }
}

impl CounterFn for Line {
    fn increment(&self, value: u64) {
        println!("counter   {} += {value}", self.0);
    }
    fn absolute(&self, value: u64) {
        println!("counter   {} = {value}", self.0);
    }
}

impl GaugeFn for Line {
    fn increment(&self, value: f64) {
        println!("gauge     {} += {value}", self.0);
    }
    fn decrement(&self, value: f64) {
        println!("gauge     {} -= {value}", self.0);
    }
    fn set(&self, value: f64) {
        println!("gauge     {} = {value}", self.0);
    }
}

impl HistogramFn for Line {
    fn record(&self, value: f64) {
        println!("histogram {} <- {value}", self.0);
    }
}

impl Recorder for Printer {
    fn describe_counter(&self, key: KeyName, unit: Option<Unit>, description: SharedString) {
        println!("# {} ({unit:?}): {description}", key.as_str());
    }
    fn describe_gauge(&self, key: KeyName, unit: Option<Unit>, description: SharedString) {
        println!("# {} ({unit:?}): {description}", key.as_str());
    }
    fn describe_histogram(&self, key: KeyName, unit: Option<Unit>, description: SharedString) {
        println!("# {} ({unit:?}): {description}", key.as_str());
    }
    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        Counter::from_arc(Line::of(key))
    }
    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::from_arc(Line::of(key))
    }
    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::from_arc(Line::of(key))
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    if metrics::set_global_recorder(Printer).is_err() {
        eprintln!("error: a recorder was already installed");
        return std::process::ExitCode::FAILURE;
    }
    recipe_mutex::metrics::describe();
    match run().await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let hosts = args.next().unwrap_or_else(|| "127.0.0.1:2181".to_owned());
    let path = args.next().unwrap_or_else(|| "/app/locks/job".to_owned());
    let client = Client::builder().hosts(hosts).connect().await?;
    let mutex = InterProcessMutex::new(client.clone(), &path)?;
    // zk_lock_acquire_wait_seconds{outcome="acquired"}, zk_lock_acquisitions_total
    let guard = mutex.lock().await?;
    // Busy: zk_lock_acquire_wait_seconds{outcome="timeout"}, zk_lock_acquire_timeouts_total
    let second = mutex.try_lock_for(Duration::from_millis(200)).await?;
    assert!(second.is_none(), "a mutex has one holder");
    // zk_lock_hold_seconds
    guard.release().await?;
    client.close().await?;
    Ok(())
}
