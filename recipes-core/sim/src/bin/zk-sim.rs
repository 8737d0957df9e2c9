//! `zk-sim [--layer machines|async] [--recipe R] [--schedules N] [--seed S] [--faults LIST]`:
//! runs the simulator (`cargo xtask sim` runs this). `--layer machines` (the default) runs the
//! recipes-core machines against the modelled server; `--layer async` runs the real recipe
//! crates over real sessions to the in-memory wire server on tokio's paused clock. One line
//! per recipe, then `sim: N schedules, V violations`; a failing schedule prints its seed (and
//! for the machines its trace), and `--seed S --schedules 1` replays it.

use std::process::ExitCode;
use std::time::Instant;

use zk_sim::layer::{self, LayerConfig};
use zk_sim::{Config, Faults, Recipe, sweep};

fn main() -> ExitCode {
    let mut recipes: Vec<Recipe> = Recipe::ALL.to_vec();
    let mut schedules: u64 = 10_000;
    let mut seed: u64 = 1;
    let mut faults = Faults::ALL;
    let mut async_layer = false;
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) => (f.to_owned(), Some(v.to_owned())),
            None => (arg.clone(), None),
        };
        let value = match inline {
            Some(v) => Some(v),
            None if flag != "--help" => {
                i += 1;
                args.get(i).cloned()
            }
            None => None,
        };
        let bad = |what: &str| -> ExitCode {
            eprintln!(
                "zk-sim: bad {what}; usage: zk-sim [--layer machines|async] [--recipe mutex|rwlock|multilock|semaphore|semaphore-mutex] [--schedules N] [--seed S] [--faults all|none|disconnect,expire,lost,meddle,foreign,wrap,abandon,deadlines]"
            );
            ExitCode::from(2)
        };
        match (flag.as_str(), value) {
            ("--recipe", Some(v)) => match Recipe::parse(&v) {
                Some(r) => recipes = vec![r],
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
            ("--help", _) => {
                println!(
                    "zk-sim [--layer machines|async] [--recipe mutex|rwlock|multilock|semaphore|semaphore-mutex] [--schedules N] [--seed S] [--faults LIST]"
                );
                return ExitCode::SUCCESS;
            }
            _ => return bad(&flag),
        }
        i += 1;
    }
    let mut violations = 0;
    let mut total = 0;
    let layer_flag = if async_layer { "--layer async " } else { "" };
    for recipe in recipes {
        let start = Instant::now();
        // The sweep's totals as text, or the failing seed and what broke.
        let outcome: Result<String, (u64, String)> = if async_layer {
            let config = LayerConfig {
                faults: faults != Faults::NONE,
                ..LayerConfig::new(recipe)
            };
            layer::sweep(schedules, seed, config)
                .map(|stats| {
                    format!(
                        "async layer, {} holds, {} faults",
                        stats.holds, stats.faults
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
                        "{} holds, {} faults, {} steps",
                        stats.holds, stats.faults, stats.steps
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
