//! Our side's clients: what each runs ([`WorkerConfig`]) and the loop that holds the lock
//! and checks the marker.

use super::*;

/// What one side's worker is told: the same for the Java worker, `zk-worker interop` and the
/// in-process side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerConfig {
    /// The server's connect string.
    pub connect: String,
    /// The lock path.
    pub path: String,
    /// Clients (sessions) of this side.
    pub clients: usize,
    /// How long to loop after `GO`.
    pub run_for: Duration,
    /// The marker file.
    pub marker: PathBuf,
    /// The shared log.
    pub log: PathBuf,
}

impl WorkerConfig {
    /// The command line: `<connect> <lock path> <clients> <run ms> <marker> <log>`.
    pub fn args(&self) -> Vec<String> {
        vec![
            self.connect.clone(),
            self.path.clone(),
            self.clients.to_string(),
            self.run_for.as_millis().to_string(),
            self.marker.display().to_string(),
            self.log.display().to_string(),
        ]
    }

    /// Parses what [`WorkerConfig::args`] gives.
    ///
    /// # Errors
    /// Not six arguments, or a count that is not a number.
    pub fn parse(args: &[String]) -> Result<WorkerConfig> {
        let [connect, path, clients, run_ms, marker, log] = args else {
            return Err(
                "usage: zk-worker interop <connect> <lock path> <clients> <run ms> <marker> <log>"
                    .into(),
            );
        };
        Ok(WorkerConfig {
            connect: connect.clone(),
            path: path.clone(),
            clients: clients.parse()?,
            run_for: Duration::from_millis(run_ms.parse()?),
            marker: PathBuf::from(marker),
            log: PathBuf::from(log),
        })
    }
}

/// How long after its run a worker process exits by itself, whatever it is doing.
const DEADMAN: Duration = Duration::from_secs(120);

/// Our side of `cargo xtask interop mutex` in a process of its own (`zk-worker interop
/// <connect> <lock path> <clients> <run ms> <marker file> <log file>`): connects the clients,
/// prints `READY`, waits for `GO` on stdin, runs [`run_clients`], and returns the `COUNTS`
/// line. It exits when stdin ends (the harness went away), and by itself two minutes after its
/// run should have ended. A multi-thread runtime with two worker threads.
///
/// # Errors
/// Bad arguments, a runtime or a client that cannot start, or no `GO`.
pub fn process_main(args: &[String]) -> Result<String> {
    use std::io::BufRead;
    let cfg = WorkerConfig::parse(args)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let clients = rt.block_on(connect_clients(&cfg.connect, cfg.clients))?;
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
        eprintln!("zk-worker interop: still running {DEADMAN:?} after its run; exiting");
        std::process::exit(4);
    });
    let counts = rt.block_on(run_clients(clients, &cfg));
    Ok(counts.line("rust"))
}

/// Connects `n` clients to `connect`, each with a session of its own.
///
/// # Errors
/// The first client that cannot connect.
pub async fn connect_clients(connect: &str, n: usize) -> std::result::Result<Vec<Client>, String> {
    let mut clients = Vec::with_capacity(n);
    for i in 0..n {
        match Client::builder()
            .hosts(connect)
            .session_timeout(SESSION_TIMEOUT)
            .connect()
            .await
        {
            Ok(client) => clients.push(client),
            Err(e) => {
                close_all(clients).await;
                return Err(format!("client {i} could not connect to {connect}: {e}"));
            }
        }
    }
    Ok(clients)
}

pub(super) async fn close_all(clients: Vec<Client>) {
    for client in clients {
        let _ = client.close().await;
    }
}

/// Our side's run: one task per client, each with its own `InterProcessMutex` on
/// `cfg.path`, looping acquire → critical section → release for `cfg.run_for`; then closes
/// the clients and returns the sum of the counts.
pub async fn run_clients(clients: Vec<Client>, cfg: &WorkerConfig) -> Counts {
    let end = Instant::now() + cfg.run_for;
    let mut tasks = Vec::new();
    for (i, client) in clients.iter().enumerate() {
        tasks.push(tokio::spawn(client_loop(
            i,
            client.clone(),
            cfg.clone(),
            end,
        )));
    }
    let mut total = Counts {
        clients: u64::try_from(clients.len()).unwrap_or(u64::MAX),
        ..Counts::default()
    };
    for task in tasks {
        match task.await {
            Ok(c) => {
                total.acquisitions += c.acquisitions;
                total.violations += c.violations;
                total.errors += c.errors;
            }
            Err(e) => {
                eprintln!("ERROR-COUNTED a client task failed: {e}");
                total.errors += 1;
            }
        }
    }
    close_all(clients).await;
    total
}

/// A small pseudo-random generator (splitmix64) for hold times.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// One client's loop until `end`.
async fn client_loop(index: usize, client: Client, cfg: WorkerConfig, end: Instant) -> Counts {
    let name = format!("rust-{index}");
    let mut counts = Counts::default();
    let error = |counts: &mut Counts, what: &str, e: &dyn fmt::Display| {
        counts.errors += 1;
        eprintln!("ERROR-COUNTED {name} {what}: {e}");
    };
    let mutex = match InterProcessMutex::new(client, &cfg.path) {
        Ok(mutex) => mutex,
        Err(e) => {
            error(&mut counts, "creating the mutex", &e);
            return counts;
        }
    };
    let mut log = match OpenOptions::new().append(true).create(true).open(&cfg.log) {
        Ok(file) => file,
        Err(e) => {
            error(&mut counts, "opening the log", &e);
            return counts;
        }
    };
    let seed = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut rng = Rng(seed ^ (u64::from(std::process::id()) << 32) ^ ((index as u64) << 48));
    loop {
        let now = Instant::now();
        if now >= end {
            return counts;
        }
        let guard = match mutex.try_lock_for(end - now).await {
            Ok(Some(guard)) => guard,
            Ok(None) => return counts,
            Err(e) => {
                error(&mut counts, "acquire", &e);
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        counts.acquisitions += 1;
        let node = guard
            .node_path()
            .rsplit('/')
            .next()
            .unwrap_or("?")
            .to_owned();
        let token = guard.fencing_token();

        // The critical section.
        let created = match OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&cfg.marker)
        {
            Ok(mut marker) => {
                let _ = marker.write_all(format!("{name} {node} {token}").as_bytes());
                true
            }
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {
                counts.violations += 1;
                let other = fs::read_to_string(&cfg.marker)
                    .unwrap_or_else(|e| format!("(unreadable: {e})"));
                let other = if other.is_empty() {
                    "(empty: its holder has just created it)".to_owned()
                } else {
                    other
                };
                eprintln!(
                    "VIOLATION {name} holds {node} (token {token}, acquisition {}) but the \
                     marker exists, written by: {other}",
                    counts.acquisitions
                );
                false
            }
            Err(e) => {
                error(&mut counts, "creating the marker", &e);
                false
            }
        };
        let flag = if created { "ok" } else { "OVERLAP" };
        let line = format!(
            "{name} {} {node} {token} {flag} {}\n",
            counts.acquisitions,
            unix_micros()
        );
        if let Err(e) = log.write_all(line.as_bytes()) {
            error(&mut counts, "writing the log", &e);
        }
        let hold = Duration::from_micros(200 + rng.next() % 2800);
        tokio::time::sleep(hold).await;
        if created && let Err(e) = fs::remove_file(&cfg.marker) {
            counts.violations += 1;
            eprintln!(
                "VIOLATION {name} holds {node} but its marker was gone when it came to delete it: {e}"
            );
        }

        if let Err(e) = guard.release().await {
            error(&mut counts, "release", &e);
        }
    }
}

/// Microseconds since the Unix epoch (the log's clock, shared with the JVM).
fn unix_micros() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}
