//! `cargo xtask bench <what>`: benchmarks against local ZooKeeper servers.
//!
//! - [`client`]: zk-client against the plain Java ZooKeeper client, one workload per worker
//!   process on one fresh server, with throughput, latency, CPU and memory side by side.
//! - [`locks`]: our lock recipes (`mutex`, `rwlock`, `multilock`, `semaphore`, `semaphore-mutex`) against
//!   Curator's and kazoo's at several contention levels, each library in a worker process of
//!   its own on one fresh server, with cycles/s, latency, CPU and memory per cycle, and the
//!   server's requests per cycle. Each writes a report page with charts under
//!   `target/bench/` (`report`); `cargo xtask bench` alone runs every lock recipe, then the
//!   footprint.
//! - [`footprint`]: the client's own cost, counted: instructions (callgrind) and allocations
//!   per uncontended cycle of every recipe, and the one-lock program's size, split by crate.
//!
//! The workers print one [`sample::Sample`] line each; [`procfs`] reads their CPU time and
//! peak memory. Before each worker run a bench prints one line on stderr (the run's number,
//! round, case and library, and the time left, from `progress`), and its report gives the
//! bench's wall-clock time from its start. Nothing here asserts on timing: benchmarks report,
//! they do not pass or fail.

pub mod client;
pub mod failover;
pub mod footprint;
pub mod histogram;
mod interval;
mod load;
pub mod locks;
pub mod many;
mod pin;
pub mod procfs;
mod progress;
pub mod queue;
mod report;
pub mod sample;
mod slices;
pub mod stages;
pub mod stampede;
pub mod tap;
mod versions;
pub(crate) mod worker;

use std::error::Error;

/// The median of `field` over `all` (the upper one of an even count); none when `all` is
/// empty. The benches' medians over rounds are taken field by field with it.
pub(crate) fn median_by<T>(all: &[T], field: impl Fn(&T) -> f64) -> Option<f64> {
    let mut values: Vec<f64> = all.iter().map(field).collect();
    values.sort_unstable_by(f64::total_cmp);
    values.get(values.len() / 2).copied()
}

/// Starts the fresh standalone server a bench measures against (`force_sync` as asked), pins
/// it to its CPU when `pinning` says so, and returns it with its version (`srvr`); `what`
/// names the bench in what it prints.
pub(crate) fn start_server(
    what: &str,
    force_sync: bool,
    pinning: Option<&pin::Pinning>,
) -> Result<(crate::zk::ZkServer, String), Box<dyn Error>> {
    use crate::zk::{ZkOptions, ZkServer};
    let sync = if force_sync { "on" } else { "off" };
    eprintln!("bench {what}: starting ZooKeeper (forceSync {sync})...");
    let server = ZkServer::start_with(ZkOptions::default().force_sync(force_sync))?;
    if let (Some(p), Some(pid)) = (pinning, server.pid()) {
        if let Err(e) = p.pin_server(pid) {
            eprintln!("bench {what}: could not pin the server ({e}); going on unpinned");
        }
    }
    let version = server
        .four_letter("srvr")?
        .lines()
        .find_map(|line| line.strip_prefix("Zookeeper version: "))
        .map_or("unknown", |v| v.split(',').next().unwrap_or(v))
        .to_owned();
    Ok((server, version))
}

/// Runs `cargo xtask bench [NAMES...] [FLAGS]`: the benchmarks named (every lock recipe and
/// the footprint when none is), one after the other, with the same flags.
///
/// # Errors
/// A benchmark's own failure.
pub fn run(cli: &crate::cli::Bench) -> Result<(), Box<dyn Error>> {
    use crate::cli::{BenchName, OnOff};
    let started = std::time::Instant::now();
    let names = if cli.names.is_empty() {
        let mut all = BenchName::recipes();
        all.push(BenchName::Footprint);
        all
    } else {
        cli.names.clone()
    };
    // `--sessions` goes up to 1,000 for `many`; the lock recipes take at most 256.
    if names.iter().any(|n| matches!(n, BenchName::Recipe(_)))
        && cli.sessions.iter().any(|&n| n > 256)
    {
        return Err("--sessions: the lock benchmarks take 1 to 256 sessions".into());
    }
    let lock_opts = locks::Options {
        seconds: cli.seconds,
        rounds: cli.rounds.unwrap_or(locks::DEFAULT_ROUNDS),
        sessions: match cli.sessions.is_empty() {
            true => vec![1, 4, 16],
            false => cli.sessions.iter().map(|&n| usize::from(n)).collect(),
        },
        rust_warmup: cli.rust_warmup,
        java_warmup: cli.java_warmup.unwrap_or(5.0),
        kazoo_warmup: cli.kazoo_warmup,
        server_warmup: cli.server_warmup.unwrap_or(8.0),
        force_sync: cli.force_sync == OnOff::On,
        pin: cli.pin == OnOff::On,
        cost: !cli.no_cost,
    };
    let mut wrote_reports = false;
    let count = names.len();
    for name in names {
        let recipe = match name {
            BenchName::Client => {
                client::run(&client::Options {
                    seconds: cli.seconds,
                    rust_warmup: cli.rust_warmup,
                    java_warmup: cli.java_warmup.unwrap_or(3.0),
                    server_warmup: cli.server_warmup.unwrap_or(3.0),
                    rounds: cli.rounds.unwrap_or(1),
                    tls: cli.tls,
                })?;
                continue;
            }
            BenchName::Footprint => {
                footprint::run()?;
                wrote_reports = true;
                continue;
            }
            BenchName::Queue => {
                queue::run(&queue::Options {
                    waiters: cli.waiters.clone(),
                    force_sync: cli.force_sync == OnOff::On,
                })?;
                wrote_reports = true;
                continue;
            }
            BenchName::Many => {
                many::run(&many::Options {
                    locks: cli.locks.clone(),
                    sessions: match cli.sessions.is_empty() {
                        true => many::DEFAULT_SESSIONS.to_vec(),
                        false => cli.sessions.iter().map(|&n| usize::from(n)).collect(),
                    },
                    force_sync: cli.force_sync == OnOff::On,
                })?;
                wrote_reports = true;
                continue;
            }
            BenchName::Stampede => {
                stampede::run(&stampede::Options {
                    sessions: match cli.sessions.is_empty() {
                        true => stampede::DEFAULT_SESSIONS.to_vec(),
                        false => cli.sessions.iter().map(|&n| usize::from(n)).collect(),
                    },
                    force_sync: cli.force_sync == OnOff::On,
                })?;
                wrote_reports = true;
                continue;
            }
            BenchName::Failover => {
                failover::run(&failover::Options {
                    kinds: failover::kinds(cli.fault.as_deref())?,
                    keep_histories: cli.keep_histories,
                    faults: usize::from(cli.faults),
                    gap: std::time::Duration::from_secs(cli.gap),
                    session_timeout: std::time::Duration::from_secs(4),
                    seed: 1,
                })?;
                wrote_reports = true;
                continue;
            }
            BenchName::Stages => {
                stages::run(&stages::Options {
                    seconds: cli.seconds,
                    force_sync: cli.force_sync == OnOff::On,
                    pin: cli.pin == OnOff::On,
                })?;
                wrote_reports = true;
                continue;
            }
            BenchName::Recipe(recipe) => recipe,
        };
        locks::run(recipe, &lock_opts)?;
        wrote_reports = true;
    }
    if wrote_reports {
        println!("\nreports: {}", report::dir().join("README.md").display());
    }
    if count > 1 {
        println!(
            "bench: {} wall-clock for the {count} benchmarks, builds and server starts included",
            progress::human(started.elapsed())
        );
    }
    Ok(())
}
