//! The harness's lines during the run, and the pause it aims at a hold (`STOP-AT-HOLD`).

use std::sync::Mutex;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::SeqCst;
use std::time::Duration;

/// Set by the harness's `STOP-AT-HOLD` (cleared by `STOP-CANCEL`): the next hold to begin
/// waits there for the harness to stop and resume this whole process.
static STOP_AT_HOLD: AtomicBool = AtomicBool::new(false);

/// How many `RESUMED` lines the harness has sent (each after a pause of this process).
static RESUMES: (Mutex<u64>, std::sync::Condvar) = (Mutex::new(0), std::sync::Condvar::new());

/// How long an aimed hold waits for `RESUMED` at most (the harness sends it after every pause).
const RESUME_WAIT: Duration = Duration::from_secs(30);

/// If a pause is aimed (`STOP-AT-HOLD`), says `STOPPING <who>` and blocks until the harness
/// has stopped this process (SIGSTOP), resumed it (SIGCONT) and said `RESUMED`. Called when a
/// hold has made its mark and before its writes: the holder resumes believing it holds, its
/// session surely expired. The thread blocks (the runtime's too: the whole process is about
/// to stop anyway).
pub(super) fn stop_if_aimed(who: &str) {
    let (count, changed) = &RESUMES;
    let before = *count
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !STOP_AT_HOLD.swap(false, SeqCst) {
        return;
    }
    println!("STOPPING {who}");
    let _ = std::io::Write::flush(&mut std::io::stdout());
    let guard = count
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let _ = changed.wait_timeout_while(guard, RESUME_WAIT, |n| *n == before);
}

/// The harness's lines during the run, until `CLOSE` or the end of stdin.
pub(super) fn harness_line(line: &str) {
    match line {
        "STOP-AT-HOLD" => STOP_AT_HOLD.store(true, SeqCst),
        "STOP-CANCEL" => STOP_AT_HOLD.store(false, SeqCst),
        "RESUMED" => {
            let (count, changed) = &RESUMES;
            *count
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) += 1;
            changed.notify_all();
        }
        _ => {}
    }
}
