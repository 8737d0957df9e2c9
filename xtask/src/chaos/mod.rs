//! `cargo xtask chaos`: every recipe, ours and Curator's, on a ZooKeeper ensemble under a
//! seeded nemesis, in the spirit of Jepsen's lock and register tests.
//!
//! For each recipe, on its own paths ([`layout`]), at the same time: our worker processes
//! (`zk-worker chaos`, [`ours`]) and Curator's (`CuratorWorker chaos`), several clients each,
//! acquiring in four styles (release, drop, timeout, cancel). Every holder updates a
//! **protected register** under its hold: ours in one `multi` with the guard's fencing
//! `check_ops`; Curator's with a `setData` at the version it read (what a Curator user can
//! do). The nemesis ([`nemesis`], seeded) kills and restarts the leader and followers, pauses
//! members, partitions the ensemble (one member off, two members from each other, a
//! minority split off), stalls, cuts and delays either side's client connections, cuts the
//! clients from one member, and pauses whole client processes past their session timeout
//! (the GC-pause case, aimed at a hold), and deletes held lock nodes of both libraries
//! through a session of its own, as an operator would ([`operator`]); faults overlap in
//! pairs. The log judge ([`judge`])
//! decides exclusion, grants, tokens and the registers from the servers' transaction logs
//! alone; the clients' checker ([`check`], pure) decides what only the clients can show
//! (stuck acquires, missing lost signals, nodes left) and reports what they saw of
//! exclusion; [`signal`] measures how soon each hold the server ended, or whose node
//! another session deleted, was told. The run
//! prints a table per recipe and library and the faults' timeline, and draws the run
//! ([`chart`]) under `target/chaos/`.

use std::error::Error;
use std::time::Duration;

pub mod chart;
pub mod check;
pub mod history;
pub mod judge;
pub mod layout;
pub mod nemesis;
pub mod operator;
pub mod ours;
pub mod run;
pub mod signal;

use crate::recipe::Recipe;

/// `cargo xtask chaos`: runs, reports, and fails on what the checker finds.
///
/// # Errors
/// Bad flags, a setup that fails, or the checker's verdict.
pub fn run(cli: &crate::cli::Chaos) -> Result<(), Box<dyn Error>> {
    let nemesis = nemesis::Kind::parse_list(&cli.nemesis)?;
    if cli.members == 4 {
        return Err("--members takes 3 or 5 (an even ensemble tolerates no more faults)".into());
    }
    let recipes: Vec<Recipe> = cli
        .recipes
        .split(',')
        .map(|r| Recipe::parse(r.trim()))
        .collect::<Result<_, _>>()?;
    crate::deps::ensure(&[
        crate::deps::Need::Java,
        crate::deps::Need::ZooKeeper,
        crate::deps::Need::Curator,
    ])?;
    let out_dir = crate::paths::target_dir().join("chaos");
    std::fs::create_dir_all(&out_dir)?;
    let opts = run::ChaosOptions {
        seconds: cli.seconds,
        members: usize::from(cli.members),
        seed: cli.seed,
        nemesis,
        ours_processes: cli.ours_processes,
        curator_processes: cli.curator_processes,
        clients: cli.clients,
        leases: crate::recipe::LEASES,
        session_timeout: Duration::from_millis(cli.session_timeout_ms),
        fence: !cli.no_fence,
        plant: cli.plant,
        cohort: cli.cohort,
        recipes,
        out_dir: out_dir.clone(),
        spacing: None,
        hold: None,
        accept_server_loss: cli.accept_server_loss,
        keep_logs: false,
    };
    let ours_bin = if cli.plant.is_some() {
        planted_worker()?
    } else {
        crate::bench::worker::build_worker("chaos")?
    };
    let classpath = crate::curator::classpath()?;
    let outcome = run::run(&opts, &ours_bin, &classpath)?;

    println!("\nfaults (seed {}):", opts.seed);
    let (start, _) = outcome.span;
    for a in &outcome.timeline {
        println!(
            "  {:>7.1} s – {:>7.1} s  {} on {}",
            a.from.saturating_sub(start) as f64 / 1e9,
            a.to.saturating_sub(start) as f64 / 1e9,
            a.kind,
            a.target
        );
    }
    for s in &outcome.skipped {
        println!("  skipped: {s}");
    }
    println!();
    print!("{}", outcome.report);
    println!();
    print!("{}", outcome.judge);
    let title = format!(
        "cargo xtask chaos --seed {} --seconds {}: holds per client, faults in red",
        opts.seed, opts.seconds
    );
    let chart = out_dir.join(format!("chaos-{}.svg", opts.seed));
    std::fs::write(
        &chart,
        chart::svg(&outcome.events, &outcome.timeline, outcome.span, &title),
    )?;
    println!("chart: {}", chart.display());
    if let Some(seen) = outcome.report.clients_view() {
        println!("the clients' histories show (the log judge decides these): {seen}");
    }
    println!();
    print!("{}", outcome.signal);
    let failure = [
        outcome.judge.failure(),
        outcome.report.failure(),
        outcome.signal.failure(),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>();
    match (!failure.is_empty()).then(|| failure.join("; ")) {
        Some(why) => {
            println!("histories kept in {}", outcome.dir.display());
            Err(format!("chaos: {why}").into())
        }
        None => {
            let _ = std::fs::remove_dir_all(&outcome.dir);
            println!("chaos: passed");
            Ok(())
        }
    }
}

/// A release zk-worker with the feature `plant`, in a target directory of its own (so that
/// the benchmarks' worker is never built with a plant in it).
fn planted_worker() -> Result<std::path::PathBuf, Box<dyn Error>> {
    let target = crate::paths::target_dir().join("chaos-plant");
    eprintln!(
        "chaos: building zk-worker (release, feature plant) in {}...",
        target.display()
    );
    crate::bench::worker::build_release_bin_with("zk-worker", &["plant"], &target)
}
