//! `cargo xtask bench <what>`: benchmarks against local ZooKeeper servers.
//!
//! - [`client`]: zk-client against the plain Java ZooKeeper client, one workload per worker
//!   process on one fresh server, with throughput, latency, CPU and memory side by side.
//! - [`locks`]: our lock recipes (`mutex`, `rwlock`, `multilock`) against Curator's and
//!   kazoo's at several contention levels, each library in a worker process of its own on one
//!   fresh server, with cycles/s, latency, CPU and memory per cycle, and the server's requests
//!   per cycle.
//!
//! The workers print one [`sample::Sample`] line each; [`procfs`] reads their CPU time and
//! peak memory. Nothing here asserts on timing: benchmarks report, they do not pass or fail.

mod args;
pub mod client;
pub mod histogram;
pub mod locks;
pub mod procfs;
pub mod sample;
pub(crate) mod worker;

use std::error::Error;

/// Runs `cargo xtask bench <args>`.
///
/// # Errors
/// An unknown benchmark, or the benchmark's own failure.
pub fn run(args: &[String]) -> Result<(), Box<dyn Error>> {
    match args.split_first() {
        Some((what, rest)) if what == "client" => client::run(rest),
        Some((what, rest)) if what == "mutex" => locks::run(locks::Bench::Mutex, rest),
        Some((what, rest)) if what == "rwlock" => locks::run(locks::Bench::ReadWrite, rest),
        Some((what, rest)) if what == "multilock" => locks::run(locks::Bench::MultiLock, rest),
        Some((what, rest)) if what == "semaphore" => locks::run(locks::Bench::Semaphore, rest),
        Some((what, _)) => Err(format!(
            "unknown benchmark `{what}`: use client, mutex, rwlock, multilock or semaphore"
        )
        .into()),
        None => Err(
            "`cargo xtask bench` needs a benchmark: client, mutex, rwlock, multilock or semaphore"
                .into(),
        ),
    }
}
