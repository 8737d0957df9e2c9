//! [`Tap`]: a counting TCP proxy on 127.0.0.1 in front of one ZooKeeper server, for the
//! benches' counted protocol cost.
//!
//! It forwards every byte both ways unchanged and counts what goes by: requests by opcode,
//! `fsync`ed writes, awaited round trips, replies, notifications and bytes
//! ([`TapCounts`]). The counting is `conn::ConnTap`, which does no IO; this module only
//! moves bytes: one accept thread, and two threads per connection (one per direction) with
//! blocking sockets. It is not a fault injector (that is the test kit's `FaultProxy`) and
//! adds no delay of its own beyond a copy.

mod conn;
mod counts;

use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use conn::ConnTap;
pub use counts::{TapCounts, op_name};

/// How long connecting to the server may take (it is on loopback: at once, or refused).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// How long [`Drop`] waits to connect to the tap's own listener, which wakes the accept
/// thread.
const WAKE_TIMEOUT: Duration = Duration::from_secs(1);

/// The most a forwarding thread reads at once.
const CHUNK: usize = 64 * 1024;

/// A counting proxy on `127.0.0.1:<port>` in front of one ZooKeeper server.
///
/// Point a client (or a worker's connect string) at [`addr`](Tap::addr) instead of the
/// server; read the totals with [`counts`](Tap::counts), and the counts of a window as the
/// difference of two snapshots ([`TapCounts::since`]). Each chunk is counted before it is
/// forwarded, so whatever a client has received has been counted.
///
/// A connection the tap cannot split into jute frames (a four-letter-word probe) is passed
/// through and counted in [`TapCounts::uncounted_connections`] only. When the server refuses
/// a connection, the client's is closed.
///
/// Dropping the tap closes its listener and every connection, and joins its threads.
///
/// # Examples
///
/// ```no_run
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use xtask::bench::tap::Tap;
///
/// let server = xtask::ZkServer::start()?;
/// let tap = Tap::start(server.addr())?;
/// let before = tap.counts();
/// // ... a client connected to tap.addr() does its work ...
/// let window = tap.counts().since(&before);
/// println!("{} requests, {} round trips", window.requests, window.round_trips);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Tap {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

/// What the tap's threads share.
#[derive(Debug)]
struct Shared {
    upstream: SocketAddr,
    counts: Mutex<TapCounts>,
    stopping: AtomicBool,
    /// The connections not known to be over: their sockets (shut down on drop) and threads.
    live: Mutex<Vec<Live>>,
}

/// One proxied connection's sockets and forwarding threads.
#[derive(Debug)]
struct Live {
    client: TcpStream,
    server: TcpStream,
    threads: Vec<JoinHandle<()>>,
}

impl Live {
    fn close(&self) {
        let _ = self.client.shutdown(Shutdown::Both);
        let _ = self.server.shutdown(Shutdown::Both);
    }

    fn join(self) {
        for thread in self.threads {
            let _ = thread.join();
        }
    }
}

/// Locks `m`, going on with the data of a thread that panicked holding it (counts are plain
/// numbers, never left half-changed in a way that matters).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Tap {
    /// Starts a tap in front of the server at `upstream`, listening on `127.0.0.1:0`.
    ///
    /// # Errors
    /// Binding the listener or spawning its thread fails.
    pub fn start(upstream: SocketAddr) -> io::Result<Tap> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            upstream,
            counts: Mutex::new(TapCounts::default()),
            stopping: AtomicBool::new(false),
            live: Mutex::new(Vec::new()),
        });
        let accept = thread::Builder::new()
            .name(format!("tap-{}", addr.port()))
            .spawn({
                let shared = Arc::clone(&shared);
                move || accept_loop(&listener, &shared)
            })?;
        Ok(Tap {
            addr,
            shared,
            accept: Some(accept),
        })
    }

    /// The tap's address, to connect to instead of the server's.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The totals counted so far, over every connection.
    pub fn counts(&self) -> TapCounts {
        lock(&self.shared.counts).clone()
    }
}

impl Drop for Tap {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        if let Some(accept) = self.accept.take() {
            // The accept thread blocks in accept(): a connection of our own wakes it to see
            // the flag. Should that fail, the thread is left to end at its next accept.
            if TcpStream::connect_timeout(&self.addr, WAKE_TIMEOUT).is_ok() {
                let _ = accept.join();
            }
        }
        let live = std::mem::take(&mut *lock(&self.shared.live));
        for conn in &live {
            conn.close();
        }
        for conn in live {
            conn.join();
        }
    }
}

/// Accepts connections until the tap stops; connects each to the server and starts its two
/// forwarding threads.
fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    loop {
        let accepted = listener.accept();
        if shared.stopping.load(Ordering::SeqCst) {
            return;
        }
        let Ok((client, _)) = accepted else {
            // Out of descriptors or the like: the client sees its connect fail; the next
            // accept is another chance.
            continue;
        };
        // When the server refuses, or a thread cannot start, the client's connection is
        // closed (dropped), as if the server had closed it.
        let _ = admit(shared, client);
        prune(shared);
    }
}

/// Connects `client` to the server and starts forwarding it.
fn admit(shared: &Arc<Shared>, client: TcpStream) -> io::Result<()> {
    let server = TcpStream::connect_timeout(&shared.upstream, CONNECT_TIMEOUT)?;
    client.set_nodelay(true)?;
    server.set_nodelay(true)?;
    let conn = Arc::new(Mutex::new(ConnTap::open(&mut lock(&shared.counts))));
    let mut live = Live {
        client: client.try_clone()?,
        server: server.try_clone()?,
        threads: Vec::with_capacity(2),
    };
    let port = live.client.peer_addr().map_or(0, |a| a.port());
    for (dir, from, to) in [
        (Direction::Up, client.try_clone()?, server.try_clone()?),
        (Direction::Down, server, client),
    ] {
        let spawned = thread::Builder::new()
            .name(format!("tap-{port}-{dir:?}"))
            .spawn({
                let shared = Arc::clone(shared);
                let conn = Arc::clone(&conn);
                move || pump(&shared, &conn, dir, from, to)
            });
        match spawned {
            Ok(thread) => live.threads.push(thread),
            Err(e) => {
                live.close();
                live.join();
                return Err(e);
            }
        }
    }
    lock(&shared.live).push(live);
    Ok(())
}

/// Joins the connections whose threads have both ended.
fn prune(shared: &Shared) {
    let done: Vec<Live> = {
        let mut live = lock(&shared.live);
        let (done, open) = std::mem::take(&mut *live)
            .into_iter()
            .partition(|c| c.threads.iter().all(JoinHandle::is_finished));
        *live = open;
        done
    };
    for conn in done {
        conn.join();
    }
}

/// Which way a forwarding thread moves bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    /// Client to server.
    Up,
    /// Server to client.
    Down,
}

/// Forwards `from` to `to`, counting each chunk first, until end-of-stream (forwarded as a
/// shutdown of `to`'s sending half) or an error (which closes both sockets).
fn pump(
    shared: &Shared,
    conn: &Mutex<ConnTap>,
    dir: Direction,
    mut from: TcpStream,
    mut to: TcpStream,
) {
    let mut buf = vec![0u8; CHUNK];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => {
                let _ = to.shutdown(Shutdown::Write);
                return;
            }
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let chunk = buf.get(..n).unwrap_or_default();
        {
            let mut conn = lock(conn);
            let mut counts = lock(&shared.counts);
            match dir {
                Direction::Up => conn.handle_client_bytes(chunk, &mut counts),
                Direction::Down => conn.handle_server_bytes(chunk, &mut counts),
            }
        }
        if to.write_all(chunk).is_err() {
            break;
        }
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}
