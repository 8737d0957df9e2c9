//! The two sides: a temporary directory they share ([`TempDir`]), and each side a worker
//! process ([`WorkerProcess`]) or our side in this process ([`InProcessSide`]).

use std::fs;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use super::ours::{WorkerConfig, close_all, connect_clients, run_clients};
use super::{Counts, Result};
use crate::worker_process::WorkerProcess;

/// A fresh temporary directory, removed when dropped unless kept.
pub(crate) struct TempDir {
    pub(crate) path: PathBuf,
    pub(crate) keep: bool,
}

impl TempDir {
    pub(crate) fn new(what: &str) -> std::io::Result<TempDir> {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let path = std::env::temp_dir().join(format!(
            "xtask-interop-{what}-{}-{nanos}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        fs::create_dir_all(&path)?;
        Ok(TempDir { path, keep: false })
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if !self.keep {
            let _ = fs::remove_dir_all(&self.path);
        }
    }
}

/// One side of the contention as the harness drives it.
pub(super) enum Side {
    Process(WorkerProcess),
    InProcess(InProcessSide),
}

impl Side {
    /// Waits for the side to have connected all its clients.
    pub(super) fn ready(&mut self, by: Instant) -> Result<()> {
        match self {
            Side::Process(p) => p.expect("READY", by).map(drop),
            Side::InProcess(s) => s.ready(by),
        }
    }

    /// Starts the side's run.
    pub(super) fn go(&mut self) -> Result<()> {
        match self {
            Side::Process(p) => p.go(),
            Side::InProcess(s) => s.go(),
        }
    }

    /// Waits for the side's counts.
    pub(super) fn counts(&mut self, by: Instant) -> Result<Counts> {
        match self {
            Side::Process(p) => {
                let line = p.expect("COUNTS ", by)?;
                Ok(Counts::parse(&line)?.1)
            }
            Side::InProcess(s) => s.counts(by),
        }
    }

    /// Waits for the side to end.
    pub(super) fn finish(&mut self, by: Instant) -> Result<()> {
        match self {
            Side::Process(p) => p.finish(by),
            Side::InProcess(_) => Ok(()),
        }
    }
}

/// Our side in this process: a thread with a tokio runtime of its own.
pub(super) struct InProcessSide {
    ready: mpsc::Receiver<std::result::Result<(), String>>,
    go: Option<mpsc::Sender<()>>,
    counts: mpsc::Receiver<Counts>,
}

impl InProcessSide {
    pub(super) fn spawn(cfg: WorkerConfig) -> InProcessSide {
        let (ready_tx, ready) = mpsc::channel();
        let (go, go_rx) = mpsc::channel();
        let (counts_tx, counts) = mpsc::channel();
        thread::spawn(move || {
            let rt = match crate::worker_process::side_runtime() {
                Ok(rt) => rt,
                Err(e) => {
                    let _ = ready_tx.send(Err(format!("building a tokio runtime: {e}")));
                    return;
                }
            };
            let clients = match rt.block_on(connect_clients(&cfg.connect, cfg.clients)) {
                Ok(clients) => clients,
                Err(e) => {
                    let _ = ready_tx.send(Err(e.to_string()));
                    return;
                }
            };
            let _ = ready_tx.send(Ok(()));
            if go_rx.recv().is_ok() {
                let counts = rt.block_on(run_clients(clients, &cfg));
                let _ = counts_tx.send(counts);
            } else {
                rt.block_on(close_all(clients));
            }
        });
        InProcessSide {
            ready,
            go: Some(go),
            counts,
        }
    }

    pub(super) fn ready(&mut self, by: Instant) -> Result<()> {
        match self
            .ready
            .recv_timeout(by.saturating_duration_since(Instant::now()))
        {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(format!("our side: {e}").into()),
            Err(_) => Err("our side did not connect in time".into()),
        }
    }

    pub(super) fn go(&mut self) -> Result<()> {
        self.go
            .take()
            .ok_or("started twice")?
            .send(())
            .map_err(|_| "our side ended before GO".into())
    }

    pub(super) fn counts(&mut self, by: Instant) -> Result<Counts> {
        self.counts
            .recv_timeout(by.saturating_duration_since(Instant::now()))
            .map_err(|_| "our side did not finish in time".into())
    }
}
