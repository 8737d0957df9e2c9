//! `cargo xtask ...`: see `cargo xtask help`.
//!
//! Arguments are parsed by hand; each command lives in the xtask library.

use std::error::Error;
use std::process::ExitCode;
use std::time::Duration;

use xtask::deps::{self, Need};
use xtask::zk::{DetachedEnsemble, Ensemble, Stopped, ZkOptions};

type Result<T = ()> = std::result::Result<T, Box<dyn Error>>;

const HELP: &str = "\
cargo xtask <command> [args...]

Commands:
  zk start [--ensemble N] [--port P]
                 start a standalone ZooKeeper (or an N-member ensemble) on 127.0.0.1
                 that keeps running after this command; P is the first client port
  zk status      show the mode of each server started by `zk start`
  zk stop        stop the servers started by `zk start` and remove their files
  demo           start a local ZooKeeper and show the project at work
  test [ARGS]    the whole suite: cargo test --workspace [ARGS], then conformance
  conformance    check the jute codec against ZooKeeper's Java classes
  bench client [--seconds N] [--rounds R] [--rust-warmup S] [--java-warmup S]
               [--server-warmup S]
                 zk-client against the Java client on one fresh server: sequential
                 create+delete and 100-deep pipelined get_data, N s each (default 10),
                 R rounds (default 1) in alternating order, ratios of the medians
  bench mutex [--seconds N] [--rounds R] [--sessions 1,4,16] [--rust-warmup S]
              [--java-warmup S] [--kazoo-warmup S] [--server-warmup S] [--force-sync on|off]
                 our InterProcessMutex (awaited and dropped release) against Curator 5.4's
                 and kazoo's Lock at each session count (a session each, one process per
                 library), N s each (default 10) on one fresh server: cycles/s, p50/p99,
                 CPU per cycle, peak RSS, server requests per cycle, ratios, targets;
                 --force-sync off takes the server's disk out (a write costs a round trip)
  bench [mutex] [rwlock] [multilock] [semaphore] [FLAGS]
                 the lock benchmarks named (all when none is), each writing a report page
                 with SVG charts under target/bench/ (index: target/bench/README.md)
  bench rwlock|multilock|semaphore [--seconds N] [--rounds R] [--force-sync on|off]
                 the other recipes the same way, a fixed set of cases each (rwlock: readers,
                 writers, a 90/10 mix; multilock: 2 and 4 members; semaphore: the mutex at 1
                 and 4 sessions, 3 leases at 4 and 16)
  interop mutex [--seconds N] [--java-clients N] [--rust-clients N] [--path P]
                [--in-process] [--java-path P]
                 our InterProcessMutex against Curator 5.4's on one path, in separate
                 processes on one fresh server for N s (default 20, 2+2 sessions); fails
                 on any overlap; last line `violations=N`. --java-path gives Curator
                 another path: a negative control that must report overlaps
  interop rwlock|multilock|semaphore|semaphore-mutex [--seconds N] [--java-clients N]
                [--rust-clients N] [--java-path P] [--leases N]
                 the same check for the other recipes (a semaphore: never more than N
                 leases held among both sides; --leases N, default 3)
  sim [--recipe mutex|rwlock|multilock|semaphore|semaphore-mutex] [--schedules N] [--seed S] [--faults LIST]
                 the recipes' machines in the seeded ZooKeeper simulator (zk-sim, release
                 build): N schedules (default 10000) from seed S (default 1) per recipe, with
                 the faults in LIST (default all: disconnect,expire,lost,meddle,foreign,wrap,
                 abandon,deadlines); one line per recipe, then `sim: N schedules, V violations`;
                 a failing schedule prints its seed and trace (`--seed S --schedules 1` replays)
  stress mutex [--seconds N] [--processes P] [--tasks T]
                 P processes (default 3) of T tasks (default 8) acquiring one mutex with
                 timeouts that cancel them at any point for N s (default 10); prints the
                 lock directory's peak size, locks granted and nodes left at the end (0)
  deps           install what the demo, tests and benchmarks need (Debian packages)
  help           show this help
";

/// How long `zk stop` lets a server exit after SIGTERM before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(10);

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &[String]) -> Result {
    let Some((command, rest)) = args.split_first() else {
        print!("{HELP}");
        return Ok(());
    };
    match command.as_str() {
        "zk" => zk(rest),
        "demo" => xtask::demo::run(rest),
        "test" => xtask::suite::run(rest),
        "conformance" => xtask::conformance::run(rest),
        "bench" => xtask::bench::run(rest),
        "interop" => xtask::interop::run(rest),
        "sim" => sim(rest),
        "stress" => xtask::stress::run(rest),
        // Run by `stress` in processes of their own.
        "stress-worker" => xtask::stress::worker(rest),
        "deps" => no_args("deps", rest).and_then(|()| {
            deps::ensure(&[Need::Java, Need::ZooKeeper, Need::Curator, Need::Kazoo])?;
            println!("Java, ZooKeeper, Curator and kazoo are installed");
            Ok(())
        }),
        "help" | "-h" | "--help" => {
            print!("{HELP}");
            Ok(())
        }
        other => Err(format!("unknown command `{other}`; see `cargo xtask help`").into()),
    }
}

/// `cargo xtask sim ...`: the simulator's binary, built in release (a debug build is several
/// times slower), with the same arguments.
fn sim(args: &[String]) -> Result {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = std::process::Command::new(cargo)
        .args([
            "run",
            "--quiet",
            "--release",
            "-p",
            "zk-sim",
            "--bin",
            "zk-sim",
            "--",
        ])
        .args(args)
        .status()?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("the simulator reported violations or bad arguments ({status})").into())
    }
}

fn zk(args: &[String]) -> Result {
    match args.split_first() {
        Some((sub, rest)) if sub == "start" => zk_start(rest),
        Some((sub, rest)) if sub == "status" => {
            no_args("zk status", rest).and_then(|()| zk_status())
        }
        Some((sub, rest)) if sub == "stop" => no_args("zk stop", rest).and_then(|()| zk_stop()),
        Some((sub, _)) => Err(format!("unknown `zk {sub}`: use start, status or stop").into()),
        None => Err("`cargo xtask zk` needs start, status or stop".into()),
    }
}

fn no_args(what: &str, rest: &[String]) -> Result {
    match rest.first() {
        Some(arg) => Err(format!("`{what}` takes no arguments, got `{arg}`").into()),
        None => Ok(()),
    }
}

/// `zk start [--ensemble N] [--port P]` (also `--ensemble=N`, `--port=P`).
fn zk_start(args: &[String]) -> Result {
    let mut members: usize = 1;
    let mut port: Option<u16> = None;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) => (flag, Some(value.to_owned())),
            None => (arg.as_str(), None),
        };
        let mut value = || {
            inline
                .clone()
                .or_else(|| args.next().cloned())
                .ok_or_else(|| format!("`{flag}` needs a value"))
        };
        match flag {
            "--ensemble" => {
                let v = value()?;
                members =
                    v.parse().ok().filter(|&n| n >= 1).ok_or_else(|| {
                        format!("--ensemble wants a member count >= 1, got `{v}`")
                    })?;
            }
            "--port" => {
                let v = value()?;
                port = Some(
                    v.parse()
                        .ok()
                        .filter(|&p: &u16| p != 0)
                        .ok_or_else(|| format!("--port wants a TCP port, got `{v}`"))?,
                );
            }
            _ => return Err(format!("`zk start`: unknown argument `{arg}`").into()),
        }
    }

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

    let opts = ZkOptions {
        port,
        ..ZkOptions::default()
    };
    let ensemble = Ensemble::start_detached(members, opts)?;
    if let Err(e) = ensemble.save(&state_path) {
        let _ = ensemble.stop(STOP_GRACE);
        return Err(format!("writing {}: {e}", state_path.display()).into());
    }
    println!("ZooKeeper is running at {}", ensemble.connect_string());
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
