//! `lock-worker`: our side of `cargo xtask interop mutex`, in a process of its own. Curator's
//! side is `java/CuratorRecipeWorker.java` (`mutex`); the loop itself is
//! [`xtask::interop::run_clients`].
//!
//! ```text
//! lock-worker <connect> <lock path> <clients> <run ms> <marker file> <log file>
//! ```
//!
//! Connects `<clients>` clients (a session each), prints `READY`, waits for a line `GO` on
//! stdin, then each client loops acquire → critical section → release with its own
//! `recipe_mutex::InterProcessMutex` on `<lock path>` for `<run ms>`. At the end it prints
//! one `COUNTS side=rust ...` line ([`xtask::interop::Counts`]) and exits 0; a setup failure
//! prints `ERROR <message>` and exits 1. It exits when stdin ends (the harness went away),
//! and by itself two minutes after its run should have ended.
//!
//! Runtime: a multi-thread tokio runtime with two worker threads.

use std::error::Error;
use std::io::BufRead;
use std::process::ExitCode;
use std::time::Duration;

use xtask::interop::{self, WorkerConfig};

type Result<T> = std::result::Result<T, Box<dyn Error>>;

/// How long after its run the worker exits by itself, whatever it is doing.
const DEADMAN: Duration = Duration::from_secs(120);

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("ERROR {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &[String]) -> Result<String> {
    let cfg = WorkerConfig::parse(args)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let clients = rt.block_on(interop::connect_clients(&cfg.connect, cfg.clients))?;
    println!("READY");

    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    if line.trim() != "GO" {
        return Err(format!("expected GO on stdin, got `{}`", line.trim()).into());
    }
    // Exit when the harness goes away, or long after the run should be over.
    std::thread::spawn(|| {
        let mut stdin = std::io::stdin().lock();
        let mut sink = String::new();
        while matches!(stdin.read_line(&mut sink), Ok(n) if n > 0) {
            sink.clear();
        }
        std::process::exit(3);
    });
    let halt_after = cfg.run_for + DEADMAN;
    std::thread::spawn(move || {
        std::thread::sleep(halt_after);
        eprintln!("lock-worker: still running {DEADMAN:?} after its run; exiting");
        std::process::exit(4);
    });

    let counts = rt.block_on(interop::run_clients(clients, &cfg));
    Ok(counts.line("rust"))
}
