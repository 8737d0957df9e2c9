//! `cargo xtask ...`: see `cargo xtask --help` (and `cargo xtask <command> --help`). The
//! command line is parsed in one place, `xtask::cli`; each command lives in the xtask library.

use std::error::Error;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use xtask::cli::{Cli, Command, Differential, DifferentialPlant, Explore, Fuzz, Sim, Zk};
use xtask::deps::{self, Need};
use xtask::zk::{DetachedEnsemble, Ensemble, Stopped, ZkOptions};

type Result<T = ()> = std::result::Result<T, Box<dyn Error>>;

/// ZooKeeper's default `tickTime`, which `zk start` keeps: session timeouts are bounded to
/// 2 to 20 ticks (4 s to 40 s).
const ZOOKEEPER_TICK_MS: u32 = 2000;

/// How long `zk stop` lets a server exit after SIGTERM before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(10);

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(command: Command) -> Result {
    match command {
        Command::Zk(Zk::Start { ensemble, port }) => zk_start(usize::from(ensemble), port),
        Command::Zk(Zk::Status) => zk_status(),
        Command::Zk(Zk::Stop) => zk_stop(),
        Command::Demo { log } => xtask::demo::run(log),
        Command::Test { cargo_args } => xtask::suite::run(&cargo_args),
        Command::Conformance => xtask::conformance::run(),
        Command::Bench(bench) => xtask::bench::run(&bench),
        Command::Interop(interop) => xtask::interop::run(&interop),
        Command::Stress(stress) => xtask::stress::run(&stress),
        Command::Chaos(chaos) => xtask::chaos::run(&chaos),
        Command::Sim(sim_args) => sim(&sim_args),
        Command::Explore(explore_args) => explore(&explore_args),
        Command::Differential(d) => differential(&d),
        Command::Fuzz(Fuzz {
            seconds,
            runs,
            no_sanitizer,
            no_trace_compares,
            targets,
        }) => {
            let budget = match runs {
                Some(n) => xtask::fuzz::Budget::Runs(n),
                None => xtask::fuzz::Budget::Seconds(seconds),
            };
            let root = xtask::paths::workspace_root();
            let instrumentation = xtask::fuzz::Instrumentation {
                address_sanitizer: !no_sanitizer,
                trace_compares: !no_trace_compares,
            };
            xtask::fuzz::run(&root, &targets, budget, instrumentation).map(drop)
        }
        Command::Txnlog {
            judge: false,
            paths,
        } => xtask::txnlog::run(&paths),
        Command::Txnlog { judge: true, paths } => {
            let cfg = xtask::chaos::judge::Config::chaos(
                &xtask::recipe::Recipe::ALL,
                xtask::recipe::LEASES,
            );
            let verdict = xtask::chaos::judge::judge_dirs(&paths, &cfg)?;
            print!("{verdict}");
            match verdict.failure() {
                Some(why) => Err(why.into()),
                None => Ok(()),
            }
        }
        Command::Deps => {
            deps::ensure(&[Need::Java, Need::ZooKeeper, Need::Curator, Need::Kazoo])?;
            println!("Java, ZooKeeper, Curator and kazoo are installed");
            Ok(())
        }
    }
}

/// `cargo xtask sim ...`: the simulator's binary, built in release (a debug build is several
/// times slower), with the same flags.
fn sim(args: &Sim) -> Result {
    let layer = match args.layer {
        xtask::cli::SimLayer::Machines => "machines",
        xtask::cli::SimLayer::Async => "async",
    };
    let mut flags = vec![
        "--schedules".to_owned(),
        args.schedules.to_string(),
        "--seed".to_owned(),
        args.seed.to_string(),
        "--faults".to_owned(),
        args.faults.clone(),
        "--layer".to_owned(),
        layer.to_owned(),
    ];
    if let Some(recipe) = args
        .recipe
        .and_then(|r| clap::ValueEnum::to_possible_value(&r))
    {
        flags.extend(["--recipe".to_owned(), recipe.get_name().to_owned()]);
    }
    run_sim_binary("zk-sim-layer", "zk-sim", &flags, "the simulator")
}

/// `cargo xtask explore ...`: the explorer's binary, built in release, with the same flags.
fn explore(args: &Explore) -> Result {
    fn name(value: impl clap::ValueEnum) -> String {
        value
            .to_possible_value()
            .map(|p| p.get_name().to_owned())
            .unwrap_or_default()
    }
    let mut flags = vec![
        "--machine".to_owned(),
        name(args.machine),
        "--depth".to_owned(),
        args.depth.to_string(),
        "--deadline".to_owned(),
        name(args.deadline),
    ];
    if let Some(seconds) = args.seconds {
        flags.extend(["--seconds".to_owned(), seconds.to_string()]);
    }
    run_sim_binary("zk-sim", "zk-explore", &flags, "the explorer")
}

/// Runs package `package`'s binary `bin` in release with `flags` (`zk-sim`'s explorer, or the
/// simulator's command in `zk-sim-layer`, which runs both layers); `what` names it in the
/// error.
fn run_sim_binary(package: &str, bin: &str, flags: &[String], what: &str) -> Result {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = std::process::Command::new(cargo)
        .args([
            "run",
            "--quiet",
            "--release",
            "-p",
            package,
            "--bin",
            bin,
            "--",
        ])
        .args(flags)
        .status()?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{what} reported violations or bad arguments ({status})").into())
    }
}

/// `zk start`: `members` servers (1: standalone), client ports from `port` (or free ones).
fn zk_start(members: usize, port: Option<u16>) -> Result {
    deps::ensure(&[Need::Java, Need::ZooKeeper])?;
    let state_path = DetachedEnsemble::state_path();
    if let Some(old) = DetachedEnsemble::load(&state_path)? {
        if old.any_alive() {
            return Err(format!(
                "ZooKeeper is already running at {} (state in {}); run `cargo xtask zk stop` first",
                old.connect_string(),
                state_path.display()
            )
            .into());
        }
        // Left by servers that died on their own: clear it.
        let _ = std::fs::remove_dir_all(&old.root);
        std::fs::remove_file(&state_path)?;
    }

    // ZooKeeper's own defaults (tickTime 2000: sessions of 4 s to 40 s), as a user's
    // server has them; the test kit's faster ticks are for tests.
    let opts = ZkOptions {
        port,
        ..ZkOptions::default()
    }
    .tick_time_ms(ZOOKEEPER_TICK_MS);
    let ensemble = Ensemble::start_detached(members, opts)?;
    if let Err(e) = ensemble.save(&state_path) {
        let _ = ensemble.stop(STOP_GRACE);
        return Err(format!("writing {}: {e}", state_path.display()).into());
    }
    println!("ZooKeeper is running at {}", ensemble.connect_string());
    println!(
        "  tickTime {ZOOKEEPER_TICK_MS} ms: session timeouts from {} s to {} s (ZooKeeper's defaults)",
        2 * ZOOKEEPER_TICK_MS / 1000,
        20 * ZOOKEEPER_TICK_MS / 1000
    );
    for (i, member) in ensemble.members.iter().enumerate() {
        println!(
            "  member {i}: {} pid {} {}",
            member.client_addr(),
            member.pid,
            mode_text(member.mode())
        );
    }
    println!("files in {}", ensemble.root.display());
    println!("stop it with `cargo xtask zk stop`");
    Ok(())
}

/// `zk status`: each member's mode or "down".
fn zk_status() -> Result {
    let state_path = DetachedEnsemble::state_path();
    let Some(ensemble) = DetachedEnsemble::load(&state_path)? else {
        println!("no ZooKeeper started by `cargo xtask zk start`");
        return Ok(());
    };
    println!("ZooKeeper at {}", ensemble.connect_string());
    for (i, member) in ensemble.members.iter().enumerate() {
        let state = if member.is_alive() {
            mode_text(member.mode())
        } else {
            "down".to_owned()
        };
        println!(
            "  member {i}: {} pid {} {state}",
            member.client_addr(),
            member.pid
        );
    }
    Ok(())
}

/// `zk stop`: SIGTERM, then SIGKILL; removes the files and the state file.
fn zk_stop() -> Result {
    let state_path = DetachedEnsemble::state_path();
    let Some(ensemble) = DetachedEnsemble::load(&state_path)? else {
        println!("no ZooKeeper started by `cargo xtask zk start`: nothing to stop");
        return Ok(());
    };
    let outcome = ensemble.stop(STOP_GRACE)?;
    for (i, (member, how)) in ensemble.members.iter().zip(outcome).enumerate() {
        let how = match how {
            Stopped::AlreadyGone => "was not running",
            Stopped::Terminated => "stopped (SIGTERM)",
            Stopped::Killed => "killed (SIGKILL after SIGTERM)",
        };
        println!(
            "  member {i}: {} pid {} {how}",
            member.client_addr(),
            member.pid
        );
    }
    std::fs::remove_file(&state_path)?;
    println!(
        "removed {} and {}",
        ensemble.root.display(),
        state_path.display()
    );
    Ok(())
}

/// A member's mode for display: the mode, "not serving" (answers without a mode) or "down".
fn mode_text(mode: std::io::Result<Option<xtask::Mode>>) -> String {
    match mode {
        Ok(Some(mode)) => mode.to_string(),
        Ok(None) => "not serving".to_owned(),
        Err(_) => "down".to_owned(),
    }
}

/// `cargo xtask differential`: prints the summary; fails on a difference, or, as the negative
/// control, on finding none.
fn differential(d: &Differential) -> Result<()> {
    deps::ensure(&[Need::Java, Need::ZooKeeper])?;
    let summary = xtask::differential::run(&xtask::differential::Options {
        seed: d.seed,
        seeds: d.seeds,
        steps: d.steps,
        negative_control: d.negative_control.map(|plant| match plant {
            DifferentialPlant::Sequence => xtask::differential::Plant::Sequence,
            DifferentialPlant::SkipAcl => xtask::differential::Plant::SkipAcl,
        }),
    })?;
    println!(
        "differential{}: {} seeds, {} steps compared, {} differences, {:.1} s",
        match d.negative_control {
            Some(plant) => format!(" (negative control {plant:?})"),
            None => String::new(),
        },
        summary.seeds,
        summary.steps,
        summary.differences.len(),
        summary.seconds
    );
    match (d.negative_control.is_some(), summary.differences.is_empty()) {
        (false, true) | (true, false) => Ok(()),
        (false, false) => Err("the in-memory server differs from ZooKeeper (see above)".into()),
        (true, true) => Err("negative control: the misconfigured server was not caught".into()),
    }
}
