//! `zk-lock-audit`: see the library's docs and `zk-lock-audit --help`.

use std::io::Write;
use std::process::ExitCode;

use zk_lock_audit::args::{Output, USAGE, parse};
use zk_lock_audit::datadir::read_into;
use zk_lock_audit::replay::Audit;
use zk_lock_audit::report::{table, timeline};
use zk_lock_audit::{Error, json};

fn run() -> Result<(), Error> {
    let args = parse(std::env::args().skip(1))?;
    if args.help {
        print!("{USAGE}");
        return Ok(());
    }
    let mut out = std::io::stdout().lock();
    let json_many = args.output == Output::Json && args.dirs.len() > 1;
    if json_many {
        let _ = write!(out, "[");
    }
    for (i, dir) in args.dirs.iter().enumerate() {
        let mut audit = Audit::new(args.locks.clone());
        for (path, n) in &args.leases {
            audit = audit.with_leases(path, *n);
        }
        let stats = read_into(dir, args.start, &mut audit)?;
        let history = audit.finish();
        let rate = stats.txns as f64 / stats.seconds.max(1e-9);
        eprintln!(
            "{}: {} snapshot, {} logs, {} transactions in {:.3} s ({:.0} txns/s){}",
            dir.display(),
            stats
                .snapshot
                .as_ref()
                .map_or_else(|| "no".to_owned(), |p| p.display().to_string()),
            stats.logs.len(),
            stats.txns,
            stats.seconds,
            rate,
            stats
                .torn_tail
                .map(|t| format!("; torn last record taken as the end: {t}"))
                .unwrap_or_default()
        );
        let text = match args.output {
            Output::Json => json::to_json(&history, args.range),
            Output::Timeline => timeline(&history, args.range),
            Output::Summary => table(&history, args.range),
            Output::Text => format!(
                "{}{}",
                timeline(&history, args.range),
                table(&history, args.range)
            ),
        };
        if json_many && i > 0 {
            let _ = write!(out, ",");
        } else if args.dirs.len() > 1 && args.output != Output::Json {
            let _ = writeln!(out, "#### {}", dir.display());
        }
        let _ = write!(out, "{text}");
    }
    if json_many {
        let _ = write!(out, "]");
    }
    if args.output == Output::Json {
        let _ = writeln!(out);
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e @ Error::Usage(_)) => {
            eprintln!("zk-lock-audit: {e}\n\n{USAGE}");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("zk-lock-audit: {e}");
            ExitCode::FAILURE
        }
    }
}
