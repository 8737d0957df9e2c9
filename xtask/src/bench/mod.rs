//! `cargo xtask bench <what>`: benchmarks against local ZooKeeper servers.
//!
//! - [`client`]: zk-client against the plain Java ZooKeeper client, one workload per worker
//!   process on one fresh server, with throughput, latency, CPU and memory side by side.
//! - [`locks`]: our lock recipes (`mutex`, `rwlock`, `multilock`, `semaphore`) against
//!   Curator's and kazoo's at several contention levels, each library in a worker process of
//!   its own on one fresh server, with cycles/s, latency, CPU and memory per cycle, and the
//!   server's requests per cycle. Each writes a report page with charts under
//!   `target/bench/` (`report`); `cargo xtask bench` alone runs every lock recipe.
//!
//! The workers print one [`sample::Sample`] line each; [`procfs`] reads their CPU time and
//! peak memory. Nothing here asserts on timing: benchmarks report, they do not pass or fail.

mod args;
pub mod client;
pub mod histogram;
pub mod locks;
pub mod procfs;
mod report;
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
        _ => {
            // `bench [RECIPES...] [FLAGS...]`: the named lock recipes (all when none is named),
            // one after the other, each with the same flags.
            let names: Vec<&String> = args.iter().take_while(|a| !a.starts_with('-')).collect();
            let flags = args.get(names.len()..).unwrap_or_default();
            let mut benches = Vec::new();
            for name in &names {
                benches.push(match name.as_str() {
                    "mutex" => locks::Bench::Mutex,
                    "rwlock" => locks::Bench::ReadWrite,
                    "multilock" => locks::Bench::MultiLock,
                    "semaphore" => locks::Bench::Semaphore,
                    other => {
                        return Err(format!(
                            "unknown benchmark `{other}`: use client, mutex, rwlock, multilock \
                             or semaphore (none: every lock recipe)"
                        )
                        .into());
                    }
                });
            }
            if benches.is_empty() {
                benches = vec![
                    locks::Bench::Mutex,
                    locks::Bench::ReadWrite,
                    locks::Bench::MultiLock,
                    locks::Bench::Semaphore,
                ];
            }
            for bench in benches {
                locks::run(bench, flags)?;
            }
            println!("\nreports: {}", report::dir().join("README.md").display());
            Ok(())
        }
    }
}
