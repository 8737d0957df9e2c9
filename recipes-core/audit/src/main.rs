//! `zk-lock-audit`: see the library's docs and `zk-lock-audit --help`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use zk_lock_audit::args::{Args, Output, USAGE, parse};
use zk_lock_audit::datadir::read_ensemble;
use zk_lock_audit::replay::Audit;
use zk_lock_audit::report::{table, timeline};
use zk_lock_audit::{Error, json};

/// Audits `dirs` as one history and renders it as `args` asks.
fn audit(args: &Args, dirs: &[PathBuf]) -> Result<String, Error> {
    let mut audit = Audit::new(args.locks.clone()).keep_only(args.range);
    if args.output == Output::Summary {
        audit = audit.summary_only();
    }
    for (path, n) in &args.leases {
        audit = audit.with_leases(path, *n);
    }
    let ensemble = args.ensemble.unwrap_or(dirs.len());
    let stats = read_ensemble(dirs, ensemble, args.start, &mut audit)?;
    let history = audit.finish();
    if let Some(statement) = history.commits.as_ref().and_then(|c| c.statement()) {
        eprintln!("{statement}");
    }
    for path in &stats.unknown_method {
        eprintln!(
            "{}: a snapshot of an unknown compression method (not gz or snappy), not read",
            path.display()
        );
    }
    let rate = stats.txns as f64 / stats.seconds.max(1e-9);
    let names: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    eprintln!(
        "{}: snapshot {}, {} logs, {} transactions read in {:.3} s ({:.0} txns/s){}{}",
        names.join(" + "),
        stats
            .snapshot
            .as_ref()
            .map_or_else(|| "none".to_owned(), |p| p.display().to_string()),
        stats.logs.len(),
        stats.txns,
        stats.seconds,
        rate,
        if stats.repeated > 0 {
            format!(
                "; {} records of transactions a member logged again, read once",
                stats.repeated
            )
        } else {
            String::new()
        },
        stats
            .torn_tail
            .map(|t| format!("; a torn last record taken as the end: {t}"))
            .unwrap_or_default()
    );
    Ok(match args.output {
        Output::Json => json::to_json(&history, args.range),
        Output::Timeline => timeline(&history, args.range),
        Output::Summary => table(&history, args.range),
        Output::Text => {
            let mut text = timeline(&history, args.range);
            text.push_str(&table(&history, args.range));
            text
        }
    })
}

fn run() -> Result<(), Error> {
    let args = parse(std::env::args().skip(1))?;
    if args.help {
        print!("{USAGE}");
        return Ok(());
    }
    let groups: Vec<Vec<PathBuf>> = if args.separately {
        args.dirs.iter().map(|d| vec![d.clone()]).collect()
    } else {
        vec![args.dirs.clone()]
    };
    let mut outputs = Vec::new();
    for dirs in &groups {
        outputs.push(audit(&args, dirs)?);
    }
    let mut out = std::io::stdout().lock();
    let written = match (args.output, outputs.as_slice()) {
        (Output::Json, [one]) => writeln!(out, "{one}"),
        (Output::Json, many) => writeln!(out, "[{}]", many.join(",")),
        (_, [one]) => write!(out, "{one}"),
        (_, many) => many.iter().zip(&groups).try_for_each(|(text, dirs)| {
            let names: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
            writeln!(out, "#### {}", names.join(" + "))?;
            write!(out, "{text}")
        }),
    };
    written.map_err(|e| Error::Io {
        path: PathBuf::from("<stdout>"),
        message: e.to_string(),
    })
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
