//! `zk-explore [--machine mutex|read|write|semaphore|downgrade|cleanup|all] [--depth K]
//! [--deadline none|1s|both] [--seconds S]`: explores every reachable state of recipes-core's
//! machines to a depth against the explorer's model (`cargo xtask explore` runs this). One
//! line per machine and deadline (states, transitions, depth reached, time, violations, with
//! a trace), then `explore: N machines, V violations`; exits 1 on a violation.

use std::process::ExitCode;
use std::time::Duration;

use zk_sim::explore::{Config, MACHINES, explore_named, timed};

const USAGE: &str = "zk-explore [--machine mutex|read|write|semaphore|downgrade|cleanup|all] [--depth K] [--deadline none|1s|both] [--seconds S]";

fn main() -> ExitCode {
    let mut machines: Vec<&str> = MACHINES.to_vec();
    let mut depth = 16;
    let mut deadlines = vec![None, Some(Duration::from_secs(1))];
    let mut seconds = None;
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut args = args.iter();
    while let Some(flag) = args.next() {
        if flag == "--help" {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        let value = args.next().map(String::as_str);
        let ok = match (flag.as_str(), value) {
            ("--machine", Some("all")) => true,
            ("--machine", Some(m)) => match MACHINES.iter().find(|n| **n == m) {
                Some(n) => {
                    machines = vec![n];
                    true
                }
                None => false,
            },
            ("--depth", Some(k)) => k.parse().map(|k| depth = k).is_ok(),
            ("--seconds", Some(s)) => s
                .parse()
                .map(|s| seconds = Some(Duration::from_secs(s)))
                .is_ok(),
            ("--deadline", Some("none")) => {
                deadlines = vec![None];
                true
            }
            ("--deadline", Some("1s")) => {
                deadlines = vec![Some(Duration::from_secs(1))];
                true
            }
            ("--deadline", Some("both")) => true,
            _ => false,
        };
        if !ok {
            eprintln!("zk-explore: bad {flag}; usage: {USAGE}");
            return ExitCode::from(2);
        }
    }
    let mut violations = 0;
    let mut runs = 0;
    for machine in &machines {
        for deadline in &deadlines {
            if deadline.is_some() && !timed(machine) {
                continue;
            }
            let config = Config {
                time_limit: seconds,
                ..Config::new(depth).with_deadline(*deadline)
            };
            let Some(report) = explore_named(machine, &config) else {
                continue;
            };
            println!("{report}");
            runs += 1;
            violations += usize::from(report.found.is_some());
        }
    }
    println!(
        "explore: {} machines, {violations} violations ({runs} explorations, depth {depth})",
        machines.len()
    );
    if violations == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
