//! The command line of `cargo xtask`: every command and flag, parsed in one place (clap's
//! derive), so that `cargo xtask <command> --help` works for each.

use clap::{Args, Parser, Subcommand, ValueEnum};

pub use crate::recipe::Recipe;

/// Developer tooling: local ZooKeeper servers, the demo, the test suite, conformance,
/// benchmarks, Curator interop, stress, the simulator.
#[derive(Debug, Parser)]
#[command(name = "cargo xtask", bin_name = "cargo xtask")]
pub struct Cli {
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Local ZooKeeper servers that keep running after the command.
    #[command(subcommand)]
    Zk(Zk),
    /// Start a local ZooKeeper and show the recipes at work.
    Demo {
        /// Also print the client's and the recipes' events (feature `tracing`) to stderr, at
        /// this level and above: `info` (state changes, holds, releases, reconnects) or
        /// `debug` (every attempt, request and reply).
        #[arg(long, value_name = "LEVEL", num_args = 0..=1, default_missing_value = "info")]
        log: Option<LogLevel>,
    },
    /// The whole suite: `cargo test --workspace --all-features [ARGS]`, then the conformance
    /// checks.
    Test {
        /// Passed on to `cargo test`.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        cargo_args: Vec<String>,
    },
    /// Check the jute codec against ZooKeeper's own Java classes.
    Conformance,
    /// Benchmarks against Curator 5.4, kazoo and the Java client, on a fresh server.
    Bench(Bench),
    /// One of our recipes and Curator's on the same paths, in two processes; ends with
    /// `violations=N`.
    Interop(Interop),
    /// Many processes of tasks that cancel their acquires at random points.
    Stress(Stress),
    /// Every recipe, ours and Curator's, on an ensemble under a seeded nemesis, each holder
    /// updating a protected register under its hold; fails on an overlap, an accepted stale
    /// write of ours, a stuck acquire or a node left.
    Chaos(Chaos),
    /// The seeded simulator (release build): the recipes' machines (`--layer machines`), or
    /// the real recipe crates over real sessions to an in-memory server on tokio's paused
    /// clock (`--layer async`).
    Sim(Sim),
    /// Every reachable state of recipes-core's machines to a depth, against the explorer's
    /// own model of the server and link (release build).
    Explore(Explore),
    /// zk-mem-server against a real ZooKeeper: seeded op sequences over several sessions on
    /// both, every reply, stat and watch event compared (zxids and sessions mapped); fails on
    /// a difference (with `--negative-control`, on finding none).
    Differential(Differential),
    /// The fuzz targets under cargo-fuzz (installed when missing), counted: executions,
    /// coverage and corpus per target; fails on a crash.
    Fuzz(Fuzz),
    /// A server's transaction log, one line per transaction (zxid, time, session, type, path,
    /// ephemeral owner, a multi's inner transactions): who did what, when.
    Txnlog {
        /// Judge the paths as the members of one chaos ensemble (every recipe's layout, the
        /// default leases) instead of printing them: what `cargo xtask chaos` keeps beside
        /// the histories of a run the log judge failed (`member-N`).
        #[arg(long)]
        judge: bool,
        /// A server's dataDir, its `version-2` directory, or `log.*` files.
        #[arg(required = true)]
        paths: Vec<std::path::PathBuf>,
    },
    /// Install what the demo, tests and benchmarks need (Debian packages).
    Deps,
}

/// `zk ...`.
#[derive(Debug, Subcommand)]
pub enum Zk {
    /// Start a standalone server (or an ensemble) on 127.0.0.1.
    Start {
        /// Members of the ensemble.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=9))]
        ensemble: u16,
        /// The first client port (default: free ports).
        #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
        port: Option<u16>,
    },
    /// The mode of each server started by `zk start`.
    Status,
    /// Stop the servers started by `zk start` and remove their files.
    Stop,
}

/// What `bench` measures: zk-client alone, or one lock recipe (the names of [`Recipe`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BenchName {
    /// zk-client against the Java client: sequential create+delete, pipelined get_data.
    Client,
    /// A lock recipe against Curator's (and kazoo's where kazoo has it).
    Recipe(Recipe),
    /// N waiters queued on one mutex and drained, ours against Curator's (`bench::queue`).
    Queue,
    /// Many distinct locks held at once by one process, over one session or a session each,
    /// ours against Curator's (`bench::many`).
    Many,
    /// How soon a stream of lock cycles comes back after a fault on a 3-member ensemble,
    /// ours against Curator's (`bench::failover`).
    Failover,
    /// Sessions cut from the member they sit on, and how they come back: connects per second
    /// at each member, time until all are back (`bench::stampede`).
    Stampede,
    /// The client's own cost, counted: instructions and allocations per lock cycle, the
    /// one-lock program's size (`bench::footprint`).
    Footprint,
    /// One mutex cycle's time split into stages, from the crates' `tracing` events
    /// (`bench::stages`).
    Stages,
}

impl BenchName {
    /// Every lock recipe, which `bench` alone runs.
    pub fn recipes() -> Vec<BenchName> {
        Recipe::ALL.into_iter().map(BenchName::Recipe).collect()
    }
}

impl ValueEnum for BenchName {
    fn value_variants<'a>() -> &'a [Self] {
        &[
            BenchName::Client,
            BenchName::Recipe(Recipe::Mutex),
            BenchName::Recipe(Recipe::Rwlock),
            BenchName::Recipe(Recipe::Multilock),
            BenchName::Recipe(Recipe::Semaphore),
            BenchName::Recipe(Recipe::SemaphoreMutex),
            BenchName::Queue,
            BenchName::Many,
            BenchName::Failover,
            BenchName::Stampede,
            BenchName::Footprint,
            BenchName::Stages,
        ]
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        use clap::builder::PossibleValue;
        Some(match self {
            BenchName::Client => PossibleValue::new("client")
                .help("zk-client against the Java client: create+delete, pipelined get_data"),
            BenchName::Recipe(r) => PossibleValue::new(r.name()).help(match r {
                Recipe::Mutex => "InterProcessMutex at 1, 4 and 16 sessions (--sessions)",
                Recipe::Rwlock => "InterProcessReadWriteLock: readers, writers, a 90/10 mix",
                Recipe::Multilock => "InterProcessMultiLock over 2 and 4 members",
                Recipe::Semaphore => "InterProcessSemaphoreV2 of 3 leases at 4 and 16 sessions",
                Recipe::SemaphoreMutex => "InterProcessSemaphoreMutex at 1 and 4 sessions",
            }),
            BenchName::Queue => PossibleValue::new("queue").help(
                "N waiters on one mutex drained one by one (--waiters), in 1 and 4 processes",
            ),
            BenchName::Many => PossibleValue::new("many").help(
                "N distinct locks over one session (--locks), S sessions a lock each (--sessions)",
            ),
            BenchName::Failover => PossibleValue::new("failover").help(
                "delay to the next hold and to the old rate after a leader kill, a member cut, a paused holder (--faults, --gap)",
            ),
            BenchName::Stampede => PossibleValue::new("stampede").help(
                "S sessions (--sessions, default 1000) cut from the one member they sit on: connects/s at each member, time until all are back",
            ),
            BenchName::Footprint => PossibleValue::new("footprint").help(
                "instructions and allocations per lock cycle (callgrind), the one-lock program's size",
            ),
            BenchName::Stages => PossibleValue::new("stages").help(
                "one mutex cycle split into stages (tracing events) at 1 and 4 sessions, and its tail",
            ),
        })
    }
}

/// `bench [NAMES...] [FLAGS]`.
#[derive(Debug, Args)]
pub struct Bench {
    /// What to measure (every lock recipe and the footprint when none is named); each lock benchmark writes
    /// a report with charts under target/bench/.
    #[arg(value_enum)]
    pub names: Vec<BenchName>,
    /// The measured window of each worker, in seconds.
    #[arg(long, default_value_t = 10.0, value_parser = seconds_window)]
    pub seconds: f64,
    /// Runs of each library per case (default 5 for the lock recipes, 1 for client); the
    /// order rotates from round to round, and a lock target is met only when every round's
    /// ratio meets it over at least 5 rounds.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=20))]
    pub rounds: Option<u32>,
    /// Session counts: of the mutex benchmark (1 to 256 each, at most 10; default 1,4,16),
    /// of `many`'s S sessions taking a lock each (1 to 1,000; default 10,100,1000), and of
    /// `stampede`'s sessions cut from one member (1 to 1,000; default 1000).
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub sessions: Vec<u16>,
    /// Lock counts of `many`'s N locks over one session (1 to 100,000 each).
    #[arg(long, value_delimiter = ',', default_values_t = crate::bench::many::DEFAULT_LOCKS,
          value_parser = many_locks)]
    pub locks: Vec<usize>,
    /// `failover`: faults of each kind (1 to 100).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u16).range(1..=100))]
    pub faults: u16,
    /// `failover`: seconds of health before and after each fault (2 to 120).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u64).range(2..=120))]
    pub gap: u64,
    /// `failover`: the kinds of fault, comma-separated, among `leader-kill`,
    /// `client-member-cut`, `ours-pause` and `curator-pause` (default: all four).
    #[arg(long)]
    pub fault: Option<String>,
    /// `failover`: keep every run's client histories and the members' transaction logs
    /// (`target/bench/failover/<kind>-<library>/histories-<seed>`, `member-N` in it), not only
    /// those of a run the chaos judges failed, to trace where a recovery's time went.
    #[arg(long)]
    pub keep_histories: bool,
    /// Queue lengths of the queue benchmark (1 to 100,000 each).
    #[arg(long, value_delimiter = ',', default_values_t = crate::bench::queue::DEFAULT_WAITERS,
          value_parser = queue_waiters)]
    pub waiters: Vec<usize>,
    /// Our worker's unmeasured warm-up, in seconds.
    #[arg(long, default_value_t = 1.0, value_parser = seconds_warmup)]
    pub rust_warmup: f64,
    /// The JVM's unmeasured warm-up, in seconds (default 5 for the recipes, 3 for client).
    #[arg(long, value_parser = seconds_warmup)]
    pub java_warmup: Option<f64>,
    /// kazoo's unmeasured warm-up, in seconds.
    #[arg(long, default_value_t = 1.0, value_parser = seconds_warmup)]
    pub kazoo_warmup: f64,
    /// The server's warm-up per case, in seconds (default 8 for the recipes: long enough for its
    /// JIT, as the first slices of round 1 showed with 2; 3 for client).
    #[arg(long, value_parser = seconds_warmup)]
    pub server_warmup: Option<f64>,
    /// The server's forceSync (off takes its disk out: a write then costs a round trip).
    #[arg(long, value_enum, default_value_t = OnOff::On)]
    pub force_sync: OnOff,
    /// Pin the server to CPU 0 and the workers to the others (taskset), so that they do not
    /// preempt each other (steadier CPU figures; on a 2-CPU machine the server then has one
    /// CPU, which can make it the bottleneck).
    #[arg(long, value_enum, default_value_t = OnOff::On)]
    pub pin: OnOff,
    /// Skip the lock benchmarks' counted-cost pass (each library once more through a
    /// counting proxy: round trips, fsync'd writes, requests and bytes per cycle,
    /// notifications per hand-off).
    #[arg(long)]
    pub no_cost: bool,
    /// `bench client` only: serve a TLS client port too and run our client over it as a
    /// third side, to give the cost of TLS against plain TCP.
    #[arg(long)]
    pub tls: bool,
}

/// A switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnOff {
    /// On.
    On,
    /// Off.
    Off,
}

/// `interop RECIPE [FLAGS]`.
#[derive(Debug, Args)]
pub struct Interop {
    /// The recipe (the mutex also checks lock order and fencing tokens; the semaphore takes
    /// `--leases N`).
    #[arg(value_enum)]
    pub recipe: Recipe,
    /// How long the clients contend, in seconds.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub seconds: u64,
    /// Curator's clients (a session each, in one JVM).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub java_clients: u16,
    /// Our clients (a session each).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub rust_clients: u16,
    /// The lock path (default `/interop/<recipe>`).
    #[arg(long, value_parser = zk_path)]
    pub path: Option<String>,
    /// Another path for Curator only: a negative control that must report violations.
    #[arg(long, value_parser = zk_path)]
    pub java_path: Option<String>,
    /// Run our side in this process (default: a release `zk-worker` process of its own).
    #[arg(long)]
    pub in_process: bool,
    /// The semaphore's leases.
    #[arg(long, default_value_t = crate::recipe::LEASES, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub leases: u32,
    /// Cut our clients' connections every this many milliseconds (through a fault proxy; the
    /// sessions survive and reconnect): exclusion must hold across the reconnects.
    #[arg(long, value_parser = clap::value_parser!(u64).range(50..=60_000))]
    pub cut_every_ms: Option<u64>,
    /// The mutex and the read/write lock: our clients are tasks of one session sharing one
    /// `CohortMutex` or `CohortReadWriteLock` (lock cohorting): local hand-offs, one node per
    /// batch in Curator's queue.
    #[arg(long)]
    pub cohort: bool,
}

/// `chaos [FLAGS]`.
#[derive(Debug, Args)]
pub struct Chaos {
    /// How long the clients run, in seconds.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(10..=86_400))]
    pub seconds: u64,
    /// Ensemble members: 3 or 5.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u16).range(3..=5))]
    pub members: u16,
    /// The nemesis's seed: the same seed, the same schedule of faults.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// The faults, comma-separated: leader-kill, follower-kill, member-pause, partition,
    /// link-cut, split, client-stall, client-cut, client-member-cut, client-latency,
    /// ours-pause, curator-pause, delete-held (held lock nodes deleted through a session of
    /// the nemesis's own, as an operator would); or `all`.
    #[arg(long, default_value = "all")]
    pub nemesis: String,
    /// Our worker processes.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=8))]
    pub ours_processes: u32,
    /// Curator's worker processes (a JVM each).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(0..=8))]
    pub curator_processes: u32,
    /// Clients per recipe in each process (a session each).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=32))]
    pub clients: u32,
    /// The clients' session timeout, in milliseconds.
    #[arg(long, default_value_t = 4000, value_parser = clap::value_parser!(u64).range(1000..=60_000))]
    pub session_timeout_ms: u64,
    /// The recipes, comma-separated (default: all five).
    #[arg(
        long,
        default_value = "mutex,rwlock,multilock,semaphore,semaphore-mutex"
    )]
    pub recipes: String,
    /// Negative control: our writes without the fencing check; the run must then fail with
    /// stale writes of ours accepted (given pauses of our processes).
    #[arg(long)]
    pub no_fence: bool,
    /// Negative control: a defect planted in our recipes (`shortcut`: a waiter holds on its
    /// predecessor's deletion without looking again; `grant-on-disconnect`: a waiter holds
    /// when its connection drops, whatever is ahead of it; `cohort-double-grant`, with
    /// `--cohort`: a cohort grants its node to two local waiters at once;
    /// `lease-wait-shortcut`: a semaphore's waiter lets the inner lock go while it waits and
    /// takes its lease on any change of `leases/`, uncounted); the run must then fail with
    /// holds the servers' log shows were not granted; or `no-node-watch`, with the nemesis
    /// `delete-held`: a hold keeps no watch on its node, and the run must fail with holds of
    /// ours never told that their node was deleted; or `deletes-others`: before each acquire
    /// of the mutex, our client deletes the node that sorts first in the lock's directory,
    /// by name, and the run must fail with foreign deletes charged to ours. Builds a zk-worker of its own with
    /// xtask's feature `plant`.
    #[arg(long, value_enum)]
    pub plant: Option<crate::chaos::ours::ChaosPlant>,
    /// Our mutex and read/write lock clients of each process are tasks of one session sharing
    /// one `CohortMutex` and one `CohortReadWriteLock` (lock cohorting), its session replaced
    /// for all of them when it ends.
    #[arg(long)]
    pub cohort: bool,
    /// Pass a run whose servers lost committed transactions (ZooKeeper's bug: the log
    /// judge finds it) when nothing judged up to the loss fails it; without this flag such a
    /// run is inconclusive and fails.
    #[arg(long)]
    pub accept_server_loss: bool,
}

/// `stress RECIPE [FLAGS]`.
#[derive(Debug, Args)]
pub struct Stress {
    /// The recipe.
    #[arg(value_enum)]
    pub recipe: Recipe,
    /// How long, in seconds.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub seconds: u64,
    /// Worker processes, a session each.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub processes: u16,
    /// Cancelling tasks per process.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub tasks: u16,
}

/// Which layer the simulator runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SimLayer {
    /// recipes-core's machines against the modelled server.
    Machines,
    /// The recipe crates, the driver and the hold layer, over zk-client sessions to the
    /// in-memory wire server.
    Async,
}

/// `sim [FLAGS]`: passed on to the `zk-sim` binary.
#[derive(Debug, Args)]
pub struct Sim {
    /// The layer: the machines, or the async layer above them.
    #[arg(long, value_enum, default_value = "machines")]
    pub layer: SimLayer,
    /// One recipe (default: every one; with the async layer, the cohorts too).
    #[arg(long, value_enum)]
    pub recipe: Option<SimRecipe>,
    /// Schedules per recipe.
    #[arg(long, default_value_t = 10_000)]
    pub schedules: u64,
    /// The first seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// The faults: all, none, or (machines only) a list of disconnect,expire,lost,meddle,
    /// foreign,wrap,abandon,deadlines.
    #[arg(long, default_value = "all")]
    pub faults: String,
}

/// What the simulator runs: a recipe, or a cohort (lock cohorting; the machines
/// layer runs the plain recipe's machines for it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SimRecipe {
    /// InterProcessMutex.
    Mutex,
    /// InterProcessReadWriteLock.
    Rwlock,
    /// InterProcessMultiLock.
    Multilock,
    /// InterProcessSemaphoreV2.
    Semaphore,
    /// InterProcessSemaphoreMutex.
    SemaphoreMutex,
    /// CohortMutex: the tasks of each session share one cohort.
    CohortMutex,
    /// CohortReadWriteLock: the tasks of each session share one cohort read/write lock.
    CohortRwlock,
}

/// Which machine `explore` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExploreMachine {
    /// The mutex's attempt.
    Mutex,
    /// The read lock's attempt.
    Read,
    /// The write lock's attempt.
    Write,
    /// The semaphore's attempt (one lease of one).
    Semaphore,
    /// A write holder's downgrade.
    Downgrade,
    /// The cleanup machine.
    Cleanup,
    /// Every one.
    All,
}

/// Which deadlines `explore` gives the attempts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExploreDeadline {
    /// None.
    None,
    /// One second after the start.
    #[value(name = "1s")]
    OneSecond,
    /// Both, one exploration each.
    Both,
}

/// `explore [FLAGS]`: passed on to the `zk-explore` binary.
#[derive(Debug, Args)]
pub struct Explore {
    /// The machine.
    #[arg(long, value_enum, default_value = "all")]
    pub machine: ExploreMachine,
    /// Steps explored from the start.
    #[arg(long, default_value_t = 12)]
    pub depth: usize,
    /// The deadlines.
    #[arg(long, value_enum, default_value = "both")]
    pub deadline: ExploreDeadline,
    /// Stop each exploration after this many seconds (reporting the depth reached).
    #[arg(long)]
    pub seconds: Option<u64>,
}

/// `differential [--seeds N] [--steps N] [--seed S] [--negative-control sequence|skip-acl]`.
#[derive(Debug, Args)]
pub struct Differential {
    /// The first seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Seeds to run.
    #[arg(long, default_value_t = 20)]
    pub seeds: u64,
    /// Steps per seed.
    #[arg(long, default_value_t = 200)]
    pub steps: usize,
    /// Run a negative control instead: the in-memory server misconfigured, which the run must
    /// find (and fails if it finds no difference).
    #[arg(long, value_enum)]
    pub negative_control: Option<DifferentialPlant>,
}

/// How `differential --negative-control` misconfigures the in-memory server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DifferentialPlant {
    /// Sequence numbers start one off.
    Sequence,
    /// No ACL is checked (`skip_acl`, ZooKeeper's `zookeeper.skipACL`).
    SkipAcl,
}

/// `fuzz [--seconds N | --runs N] [TARGET ...]`.
#[derive(Debug, Args)]
pub struct Fuzz {
    /// Seconds of fuzzing per target.
    #[arg(long, default_value_t = 60, conflicts_with = "runs")]
    pub seconds: u64,
    /// Executions per target instead of a time.
    #[arg(long)]
    pub runs: Option<u64>,
    /// Build without AddressSanitizer (every crate here forbids unsafe code, so it watches
    /// only our dependencies' unsafe code): about twice the executions per second, for long
    /// runs. Panics, overflow checks and the targets' own checks stay.
    #[arg(long)]
    pub no_sanitizer: bool,
    /// Build without comparison tracing (`sanitizer-coverage-trace-compares`): libFuzzer no
    /// longer steers inputs towards compared values, and `session_bytes` runs about five
    /// times as fast. For long runs carrying on from a corpus grown with it.
    #[arg(long)]
    pub no_trace_compares: bool,
    /// The targets (default: all): server_frames, request_frames, txn_log, session_bytes.
    pub targets: Vec<String>,
}

fn seconds_in(value: &str, range: std::ops::RangeInclusive<f64>) -> Result<f64, String> {
    value
        .parse::<f64>()
        .ok()
        .filter(|v| range.contains(v))
        .ok_or_else(|| format!("wants seconds in {range:?}"))
}

fn seconds_window(value: &str) -> Result<f64, String> {
    seconds_in(value, 0.001..=3600.0)
}

fn seconds_warmup(value: &str) -> Result<f64, String> {
    seconds_in(value, 0.0..=60.0)
}

fn queue_waiters(value: &str) -> Result<usize, String> {
    let max = crate::bench::queue::ours::MAX_WAITERS;
    value
        .parse()
        .ok()
        .filter(|n| (1..=max).contains(n))
        .ok_or_else(|| format!("`{value}`: want a whole number from 1 to {max}"))
}

fn many_locks(value: &str) -> Result<usize, String> {
    let max = crate::bench::many::ours::MAX_LOCKS;
    value
        .parse()
        .ok()
        .filter(|n| (1..=max).contains(n))
        .ok_or_else(|| format!("`{value}`: want a whole number from 1 to {max}"))
}

fn zk_path(value: &str) -> Result<String, String> {
    zk_proto::validate_path(value, false)
        .map(|()| value.to_owned())
        .map_err(|e| e.to_string())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("xtask").chain(args.iter().copied()))
    }

    #[test]
    fn every_command_has_help() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
        for cmd in [
            "zk",
            "demo",
            "test",
            "conformance",
            "bench",
            "interop",
            "stress",
            "sim",
            "deps",
        ] {
            let err = parse(&[cmd, "--help"]).unwrap_err();
            assert_eq!(err.kind(), clap::error::ErrorKind::DisplayHelp, "{cmd}");
        }
        let err = parse(&["zk", "start", "--help"]).unwrap_err();
        assert_eq!(err.kind(), clap::error::ErrorKind::DisplayHelp);
    }

    #[test]
    fn flags_take_both_forms_and_ranges_are_checked() {
        let Command::Bench(b) = parse(&["bench", "mutex", "--seconds=2", "--rounds", "3"])
            .unwrap()
            .command
        else {
            panic!()
        };
        assert_eq!(
            (b.names, b.seconds, b.rounds),
            (vec![BenchName::Recipe(Recipe::Mutex)], 2.0, Some(3))
        );
        let Command::Bench(b) = parse(&["bench", "queue", "--waiters", "10,100"])
            .unwrap()
            .command
        else {
            panic!()
        };
        assert_eq!(
            (b.names, b.waiters),
            (vec![BenchName::Queue], vec![10, 100])
        );
        assert!(parse(&["bench", "queue", "--waiters", "0"]).is_err());
        assert!(parse(&["bench", "queue", "--waiters", "100001"]).is_err());
        let Command::Bench(b) = parse(&[
            "bench",
            "many",
            "--locks",
            "10,100000",
            "--sessions",
            "1000",
        ])
        .unwrap()
        .command
        else {
            panic!()
        };
        assert_eq!(
            (b.names, b.locks, b.sessions),
            (vec![BenchName::Many], vec![10, 100_000], vec![1000])
        );
        assert!(parse(&["bench", "many", "--locks", "100001"]).is_err());
        assert!(parse(&["bench", "many", "--sessions", "1001"]).is_err());
        assert!(parse(&["bench", "--rounds", "21"]).is_err());
        assert!(parse(&["bench", "--seconds", "0"]).is_err());
        assert!(parse(&["interop", "mutex", "--path", "bad"]).is_err());
        let Command::Test { cargo_args } = parse(&["test", "-p", "zk-proto", "--", "--nocapture"])
            .unwrap()
            .command
        else {
            panic!()
        };
        assert_eq!(cargo_args, ["-p", "zk-proto", "--", "--nocapture"]);
    }
}

/// How much `demo --log` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogLevel {
    /// Warnings only: failed attempts, sessions that ended.
    Warn,
    /// State changes, holds, releases, reconnect decisions.
    Info,
    /// Every attempt, request, reply and cleanup.
    Debug,
}
