//! Our side of `bench stampede`: `zk-worker stampede <connect> <n> <budget ms>`.
//!
//! On a tokio runtime of two worker threads (as a service would run its sessions):
//!
//! - connects `<n>` clients, each its own session over `<connect>` (a few at a time, each
//!   tried again if it fails: the setup is not measured), then says `READY` with where they
//!   sit; with `<first>`, each connects there first and then takes `<connect>` as its list
//!   (`update_server_list`: it stays where it is, and goes on in its own random order);
//! - on `CUT <addr>` (or `CUT all`), notes the moment, follows every session connected at
//!   `<addr>` (or every session) from then on (its state watch, taken before it says
//!   `ARMED`), and says `ARMED`;
//! - says `BACK` once every followed session is connected again (to any member), or the budget
//!   passed: how many came back, how many sessions ended instead, the delays from the moment
//!   and where every session sits now;
//! - on `CLOSE`, closes every session and exits. It exits when its stdin ends.
//!
//! Lines: [`super::lines`]. It fails (an `ERROR` line) when its sessions are not all
//! connected within `<budget ms>`.

use std::error::Error;
use std::io::BufRead;
use std::net::SocketAddr;
use std::time::Duration;

use std::sync::Arc;

use tokio::sync::{Semaphore, mpsc, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;
use zk_client::{Client, SessionState};

use super::lines::{Back, Placement, Ready};

type Result<T> = std::result::Result<T, Box<dyn Error + Send + Sync>>;

/// The session timeout (as every bench worker asks for).
const SESSION_TIMEOUT: Duration = Duration::from_secs(10);
/// Connects in flight at once while setting up.
const CONNECTS_AT_ONCE: usize = 32;
/// Tries of each connect while setting up.
const CONNECT_TRIES: u32 = 5;
/// The most sessions one worker connects.
pub const MAX_SESSIONS: usize = 5_000;
/// The usage line.
pub const USAGE: &str = "zk-worker stampede <connect> <n> <budget ms> [<first>]";

/// Runs the worker with its arguments (after `stampede`), printing its lines.
///
/// # Errors
/// Bad arguments, a session that does not connect, or a line out of turn.
pub fn process_main(args: &[String]) -> Result<()> {
    let (connect, n, budget, first) = match args {
        [connect, n, budget] => (connect, n, budget, None),
        [connect, n, budget, first] => (connect, n, budget, Some(first.as_str())),
        _ => return Err(format!("usage: {USAGE}").into()),
    };
    let n: usize = n
        .parse()
        .ok()
        .filter(|n| (1..=MAX_SESSIONS).contains(n))
        .ok_or_else(|| format!("<n> wants 1 to {MAX_SESSIONS}, got `{n}`"))?;
    let budget = Duration::from_millis(
        budget
            .parse()
            .map_err(|_| format!("<budget ms> is not a whole number: `{budget}`"))?,
    );
    let lines = read_lines_from_stdin();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(run(connect, first, n, budget, lines))
}

/// A thread that reads stdin: each line goes to the receiver; the end of stdin exits the
/// process (the bench went away).
fn read_lines_from_stdin() -> mpsc::UnboundedReceiver<String> {
    let (tx, rx) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            let _ = tx.send(line);
        }
        std::process::exit(3);
    });
    rx
}

async fn next_line(lines: &mut mpsc::UnboundedReceiver<String>, by: Instant) -> Result<String> {
    match tokio::time::timeout_at(by, lines.recv()).await {
        Ok(Some(line)) => Ok(line),
        Ok(None) => Err("stdin ended".into()),
        Err(_) => Err("no line from the bench within the budget".into()),
    }
}

/// Where `clients` sit now, by address.
fn placement(clients: &[Client]) -> Placement {
    let mut on: Placement = Vec::new();
    for addr in clients.iter().filter_map(Client::server_addr) {
        match on.iter_mut().find(|(a, _)| *a == addr) {
            Some((_, n)) => *n += 1,
            None => on.push((addr, 1)),
        }
    }
    on.sort_unstable();
    on
}

/// How a followed session came out of the cut.
enum Outcome {
    /// Connected again, at this instant.
    Back(Instant),
    /// The session ended (expired, closed, refused its credentials).
    Ended,
    /// Still not connected at the deadline.
    NotBack,
}

/// Follows one session from the cut: its first connected state after any change is its
/// return (it was connected when followed, so a change means the connection was lost; the
/// watch keeps only the newest state, so a loss and a return between two looks read as one
/// change).
async fn follow(mut state: watch::Receiver<SessionState>, deadline: Instant) -> Outcome {
    let mut changed = false;
    loop {
        let now = *state.borrow_and_update();
        match now {
            s if s.is_terminal() => return Outcome::Ended,
            SessionState::Connected | SessionState::ConnectedReadOnly if changed => {
                return Outcome::Back(Instant::now());
            }
            _ => {}
        }
        match tokio::time::timeout_at(deadline, state.changed()).await {
            Ok(Ok(())) => changed = true,
            Ok(Err(_)) => return Outcome::Ended,
            Err(_) => return Outcome::NotBack,
        }
    }
}

async fn run(
    hosts: &str,
    first: Option<&str>,
    n: usize,
    budget: Duration,
    mut lines: mpsc::UnboundedReceiver<String>,
) -> Result<()> {
    let by = || Instant::now() + budget;
    // The setup is not measured: at most CONNECTS_AT_ONCE connects in flight (a server's
    // listen backlog is 50 by default, and a first connect that finds no server in its one
    // round fails), each tried again a few times.
    let at_once = Arc::new(Semaphore::new(CONNECTS_AT_ONCE));
    let mut connecting = JoinSet::new();
    for _ in 0..n {
        let hosts = hosts.to_owned();
        let first = first.map(str::to_owned);
        let at_once = Arc::clone(&at_once);
        connecting.spawn(async move {
            let _slot = at_once.acquire_owned().await?;
            let mut tries = 0;
            loop {
                let attempt = Client::builder()
                    .hosts(first.as_deref().unwrap_or(&hosts))
                    .session_timeout(SESSION_TIMEOUT)
                    .connect()
                    .await;
                tries += 1;
                match attempt {
                    Err(_) if tries < CONNECT_TRIES => continue,
                    Ok(client) if first.is_some() => {
                        // Connected at <first>: it stays there, and goes on in its own
                        // random order over every member.
                        client.update_server_list(&hosts)?;
                        return Ok(client);
                    }
                    other => return other.map_err(Box::<dyn Error + Send + Sync>::from),
                }
            }
        });
    }
    let deadline = by();
    let mut clients = Vec::with_capacity(n);
    while let Some(joined) = tokio::time::timeout_at(deadline, connecting.join_next())
        .await
        .map_err(|_| {
            format!(
                "{} of {n} sessions not connected within the budget",
                n - clients.len()
            )
        })?
    {
        clients.push(joined??);
    }
    println!(
        "{}",
        Ready {
            on: placement(&clients)
        }
        .line()
    );

    let line = next_line(&mut lines, by()).await?;
    // `None`: every session.
    let cut: Option<SocketAddr> = match line.strip_prefix("CUT ").map(str::trim) {
        Some("all") => None,
        Some(addr) => Some(
            addr.parse()
                .map_err(|_| format!("`{line}`: not an address"))?,
        ),
        None => return Err(format!("`{line}` from the bench, not `CUT <addr>|all`").into()),
    };
    let armed = Instant::now();
    let deadline = armed + budget;
    let mut following = JoinSet::new();
    for client in clients
        .iter()
        .filter(|c| cut.is_none() || c.server_addr() == cut)
    {
        following.spawn(follow(client.state_watch(), deadline));
    }
    let tracked = following.len() as u64;
    println!("ARMED");

    let (mut delays, mut ended) = (Vec::new(), 0);
    while let Some(joined) = following.join_next().await {
        match joined? {
            Outcome::Back(at) => delays.push(at.saturating_duration_since(armed)),
            Outcome::Ended => ended += 1,
            Outcome::NotBack => {}
        }
    }
    println!(
        "{}",
        Back::of(tracked, ended, delays, placement(&clients)).line()
    );

    let line = next_line(&mut lines, by()).await?;
    if line.trim_end() != "CLOSE" {
        return Err(format!("`{line}` from the bench, not `CLOSE`").into());
    }
    let mut closing = JoinSet::new();
    for client in clients {
        closing.spawn(async move { client.close().await });
    }
    let _ =
        tokio::time::timeout_at(by(), async { while closing.join_next().await.is_some() {} }).await;
    Ok(())
}
