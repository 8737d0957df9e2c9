//! `zk-stages`: the worker of `cargo xtask bench stages` (`xtask::bench::stages`). It runs
//! mutex cycles (`lock().await`, then `guard.release().await`) and times each one stage by
//! stage, from the `tracing` events the client and the lock emit (xtask's feature `log`
//! turns on their feature `tracing`; without it this worker refuses to run).
//!
//! ```text
//! zk-stages <connect> <lock path> <sessions> <run ms>
//! ```
//!
//! It installs its own collecting subscriber: each event of the `zk_client` and
//! `recipe_mutex` targets at `debug` and above gets an `Instant` and the tokio task it ran
//! in, and is stored raw (its kind, its `xid` or `handed_over`) in preallocated chunks; a
//! callsite's message is read (formatted) once, the first time it fires, to know its kind.
//! Each contender (a session of its own, on one current-thread runtime as in `zk-worker
//! bench`) records `Instant`s around `lock()` and `release()`. When the run is over, each
//! cycle is cut into stages from its own events (those of its lock's task and its session's
//! IO task) by [`xtask::bench::stages::breakdown`], and printed as one `CYCLE ...` line; a
//! last `STAGES cycles=N skipped=M events=E why=<reason of the first skip or none>
//! cpu_ticks=T` (its CPU time so far) ends the run (`ERROR <message>` on a failure). Cycles are measured from the first one: the
//! server's warm-up is part of what is looked at.

use std::process::ExitCode;

#[cfg(feature = "log")]
mod collect;

fn main() -> ExitCode {
    #[cfg(feature = "log")]
    {
        xtask::worker_process::exit_at_end_of_stdin();
        let args: Vec<String> = std::env::args().skip(1).collect();
        match collect::run(&args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                println!("ERROR {e}");
                ExitCode::FAILURE
            }
        }
    }
    #[cfg(not(feature = "log"))]
    {
        println!("ERROR zk-stages needs xtask's feature `log` (the crates' `tracing` events)");
        ExitCode::FAILURE
    }
}
