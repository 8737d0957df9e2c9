//! `zk-sim [--layer machines|async] [--recipe R] [--schedules N] [--seed S] [--faults LIST]
//! [--trace]`:
//! runs the simulator (`cargo xtask sim` runs this). `--layer machines` (the default) runs the
//! recipes-core machines against the modelled server; `--layer async` runs the real recipe
//! crates over real sessions to the in-memory wire server on tokio's paused clock (every
//! recipe, and the cohorts: `cohort-mutex` and `cohort-rwlock`, the tasks of each session
//! sharing one cohort with a bound drawn per schedule). One line per recipe, then `sim: N schedules, V violations`; a failing schedule prints its seed (and
//! for the machines its trace), and `--seed S --schedules 1` replays it. With `--layer async`,
//! `--trace` prints each schedule's whole trace (every frame the server read and wrote, every
//! connection, fault and hold, in order): two runs of one seed print the same.

use std::process::ExitCode;
use std::time::Instant;

use zk_sim::{Config, Faults, Recipe, sweep};
use zk_sim_layer::{self as layer, LayerConfig};

fn main() -> ExitCode {
    let mut recipes: Option<Vec<Recipe>> = None;
    let mut schedules: u64 = 10_000;
    let mut seed: u64 = 1;
    let mut faults = Faults::ALL;
    let mut async_layer = false;
    let mut trace = false;
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) => (f.to_owned(), Some(v.to_owned())),
            None => (arg.clone(), None),
        };
        let value = match inline {
            Some(v) => Some(v),
            None if flag != "--help" && flag != "--trace" => {
                i += 1;
                args.get(i).cloned()
            }
            None => None,
        };
        let bad = |what: &str| -> ExitCode {
            eprintln!(
                "zk-sim: bad {what}; usage: zk-sim [--layer machines|async] [--recipe mutex|rwlock|multilock|semaphore|semaphore-mutex|cohort-mutex|cohort-rwlock] [--schedules N] [--seed S] [--faults all|none|disconnect,expire,lost,meddle,foreign,wrap,abandon,deadlines] [--trace]"
            );
            ExitCode::from(2)
        };
        match (flag.as_str(), value) {
            ("--recipe", Some(v)) => match Recipe::parse(&v) {
                Some(r) => recipes = Some(vec![r]),
                None => return bad("--recipe"),
            },
            ("--schedules", Some(v)) => match v.parse() {
                Ok(n) => schedules = n,
                Err(_) => return bad("--schedules"),
            },
            ("--seed", Some(v)) => match v.parse() {
                Ok(n) => seed = n,
                Err(_) => return bad("--seed"),
            },
            ("--layer", Some(v)) => match v.as_str() {
                "machines" => async_layer = false,
                "async" => async_layer = true,
                _ => return bad("--layer"),
            },
            ("--faults", Some(v)) => match Faults::parse(&v) {
                Some(f) => faults = f,
                None => return bad("--faults"),
            },
            ("--trace", _) => trace = true,
            ("--help", _) => {
                println!(
                    "zk-sim [--layer machines|async] [--recipe mutex|rwlock|multilock|semaphore|semaphore-mutex|cohort-mutex|cohort-rwlock] [--schedules N] [--seed S] [--faults LIST] [--trace]"
                );
                return ExitCode::SUCCESS;
            }
            _ => return bad(&flag),
        }
        i += 1;
    }
    // By default every recipe; the async layer adds the cohorts (the machines layer has no
    // cohort: there each would be its recipe again).
    let recipes = recipes.unwrap_or_else(|| match async_layer {
        true => Recipe::ALL.into_iter().chain(Recipe::COHORTS).collect(),
        false => Recipe::ALL.to_vec(),
    });
    let mut violations = 0;
    let mut total = 0;
    let layer_flag = if async_layer { "--layer async " } else { "" };
    for recipe in recipes {
        let start = Instant::now();
        // The sweep's totals as text, or the failing seed and what broke.
        let outcome: Result<String, (u64, String)> = if async_layer {
            let config = LayerConfig {
                faults: faults != Faults::NONE,
                meddle: faults.meddle,
                ..LayerConfig::new(recipe)
            };
            let swept = match trace {
                true => traced_sweep(recipe, schedules, seed, config),
                false => layer::sweep(schedules, seed, config),
            };
            swept
                .map(|stats| {
                    format!(
                        "async layer, {} holds, {} faults ({} silent expiries: {} holds said Lost in time, {} fenced writes refused); {} schedules meddled: {} held nodes deleted by another client, {} holders told Deleted ({} within 100 ms, worst {:?}), {} told Lost or expired first, {} holds ended first",
                        stats.holds,
                        stats.faults,
                        stats.silent,
                        stats.lost_in_time,
                        stats.fenced_refused,
                        stats.meddling,
                        stats.meddles,
                        stats.told,
                        stats.told_fast,
                        stats.told_worst,
                        stats.told_otherwise,
                        stats.ended_first
                    )
                })
                .map_err(|failure| (failure.seed, failure.to_string()))
        } else {
            let config = Config {
                faults,
                ..Config::new(recipe)
            };
            sweep(schedules, seed, config, recipe.factory())
                .map(|stats| {
                    format!(
                        "{} holds, {} faults ({} held nodes deleted by another client), {} steps",
                        stats.holds, stats.faults, stats.meddled_held, stats.steps
                    )
                })
                .map_err(|failure| (failure.seed, failure.to_string()))
        };
        match outcome {
            Ok(totals) => println!(
                "{:<15} {schedules} schedules from seed {seed}: 0 violations; {totals}, {:.1} s",
                recipe.name(),
                start.elapsed().as_secs_f64()
            ),
            Err((failed, failure)) => {
                violations += 1;
                println!("{:<15} VIOLATION at {failure}", recipe.name());
                println!(
                    "replay: zk-sim {layer_flag}--recipe {} --seed {failed} --schedules 1",
                    recipe.name(),
                );
            }
        }
        total += schedules;
    }
    println!("sim: {total} schedules, {violations} violations");
    if violations == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The async layer's sweep, printing each schedule's trace.
fn traced_sweep(
    recipe: Recipe,
    schedules: u64,
    first: u64,
    config: LayerConfig,
) -> Result<layer::LayerStats, layer::LayerFailure> {
    let mut total = layer::LayerStats::default();
    for seed in first..first.saturating_add(schedules) {
        let (outcome, lines) = layer::run_traced(seed, config);
        println!(
            "trace of {} seed {seed} ({} lines):",
            recipe.name(),
            lines.len()
        );
        for line in &lines {
            println!("  {line}");
        }
        total += outcome?;
    }
    Ok(total)
}
