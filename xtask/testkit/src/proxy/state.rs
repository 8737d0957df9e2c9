//! The state a [`FaultProxy`](super::FaultProxy) shares with its threads: the forwarding
//! policy, the refuse and shutdown flags, and the registry of open connections.

use std::collections::HashMap;
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The longest a waiting thread sleeps before it looks at the state again. Every change
/// notifies the waiters, so this only bounds the cost of a missed notification.
pub(super) const POLL: Duration = Duration::from_millis(50);

/// What the forwarding threads do with the bytes they read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Policy {
    /// Forward at once.
    Pass,
    /// Forward each chunk this long after it was read.
    Delay(Duration),
    /// Forward nothing; keep the sockets open.
    Stall,
}

/// One proxied connection, as seen by [`FaultProxy::cut`](super::FaultProxy::cut) and drop.
#[derive(Debug)]
pub(super) struct Conn {
    /// Set once the connection is being closed; its threads stop at their next look.
    closed: AtomicBool,
    /// Handles (clones) of the connection's sockets, for shutting them down from outside.
    sockets: Mutex<Sockets>,
}

/// The socket handles of a [`Conn`].
#[derive(Debug)]
struct Sockets {
    /// The client's side.
    client: TcpStream,
    /// The server's side, once connected.
    server: Option<TcpStream>,
}

impl Conn {
    /// Whether the connection has been closed.
    pub(super) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Records `server` as the connection's server side, unless the connection was closed
    /// meanwhile: then `server` is shut down and `false` returned.
    pub(super) fn attach_server(&self, server: TcpStream) -> bool {
        let mut sockets = lock(&self.sockets);
        if self.is_closed() {
            let _ = server.shutdown(Shutdown::Both);
            return false;
        }
        sockets.server = Some(server);
        true
    }

    /// Marks the connection closed and shuts down both its sockets, which wakes its threads
    /// from their reads and writes.
    fn shut(&self) {
        let sockets = lock(&self.sockets);
        self.closed.store(true, Ordering::SeqCst);
        let _ = sockets.client.shutdown(Shutdown::Both);
        if let Some(server) = &sockets.server {
            let _ = server.shutdown(Shutdown::Both);
        }
    }
}

/// The open connections and the threads serving them.
#[derive(Debug, Default)]
struct Registry {
    /// The id the next registered connection gets.
    next_id: u64,
    /// Connections accepted so far, refused ones included.
    accepted: usize,
    /// The open connections, by id.
    open: HashMap<u64, Arc<Conn>>,
    /// Connection threads not yet joined.
    threads: Vec<JoinHandle<()>>,
}

/// State shared between a [`FaultProxy`](super::FaultProxy) and its threads.
#[derive(Debug)]
pub(super) struct Shared {
    /// Where connections are forwarded to.
    pub(super) target: SocketAddr,
    /// The current forwarding policy.
    policy: Mutex<Policy>,
    /// Notified when the policy changes, a connection closes, or the proxy shuts down.
    policy_changed: Condvar,
    /// Whether new connections are closed at once.
    refuse: AtomicBool,
    /// How long connecting to the target is retried before a connection is given up.
    connect_retry: Mutex<Duration>,
    /// Set when the proxy is dropped.
    shutdown: AtomicBool,
    /// The open connections and counters.
    registry: Mutex<Registry>,
    /// Notified when a connection is accepted or closes.
    registry_changed: Condvar,
}

impl Shared {
    /// Fresh state for a proxy in front of `target`: passing, not refusing.
    pub(super) fn new(target: SocketAddr) -> Shared {
        Shared {
            target,
            policy: Mutex::new(Policy::Pass),
            policy_changed: Condvar::new(),
            refuse: AtomicBool::new(false),
            connect_retry: Mutex::new(Duration::ZERO),
            shutdown: AtomicBool::new(false),
            registry: Mutex::new(Registry::default()),
            registry_changed: Condvar::new(),
        }
    }

    /// The current policy.
    pub(super) fn policy(&self) -> Policy {
        *lock(&self.policy)
    }

    /// Switches the policy and wakes the forwarding threads.
    pub(super) fn set_policy(&self, policy: Policy) {
        *lock(&self.policy) = policy;
        self.policy_changed.notify_all();
    }

    /// Whether new connections are closed at once.
    pub(super) fn refusing(&self) -> bool {
        self.refuse.load(Ordering::SeqCst)
    }

    /// Sets whether new connections are closed at once.
    pub(super) fn set_refuse(&self, on: bool) {
        self.refuse.store(on, Ordering::SeqCst);
    }

    /// How long connecting to the target is retried.
    pub(super) fn connect_retry(&self) -> Duration {
        *lock(&self.connect_retry)
    }

    /// Sets how long connecting to the target is retried.
    pub(super) fn set_connect_retry(&self, within: Duration) {
        *lock(&self.connect_retry) = within;
    }

    /// Whether the proxy is shutting down.
    pub(super) fn is_shutdown(&self) -> bool {
        self.shutdown.load(Ordering::SeqCst)
    }

    /// Flags the shutdown and wakes every waiting thread.
    pub(super) fn begin_shutdown(&self) {
        self.shutdown.store(true, Ordering::SeqCst);
        self.wake();
    }

    /// Whether `conn`'s threads should stop.
    pub(super) fn stopped(&self, conn: &Conn) -> bool {
        conn.is_closed() || self.is_shutdown()
    }

    /// Wakes the threads waiting on the policy. Taking the lock first makes sure a thread that
    /// has just looked at the flags is already waiting, so it cannot miss this.
    fn wake(&self) {
        drop(lock(&self.policy));
        self.policy_changed.notify_all();
    }

    /// Waits while the policy is [`Policy::Stall`]. Returns `false` when `conn` should stop.
    pub(super) fn wait_flowing(&self, conn: &Conn) -> bool {
        let mut policy = lock(&self.policy);
        loop {
            if self.stopped(conn) {
                return false;
            }
            if *policy != Policy::Stall {
                return true;
            }
            policy = self.wait_policy(policy, POLL);
        }
    }

    /// Waits until a chunk read at `read_at` may be forwarded: at once when passing, `d` after
    /// `read_at` when delaying by `d`, and not while stalled. Returns `false` when `conn`
    /// should stop.
    pub(super) fn wait_release(&self, conn: &Conn, read_at: Instant) -> bool {
        let mut policy = lock(&self.policy);
        loop {
            if self.stopped(conn) {
                return false;
            }
            let wait = match *policy {
                Policy::Pass => return true,
                Policy::Stall => POLL,
                Policy::Delay(d) => {
                    let due = read_at.checked_add(d).unwrap_or_else(Instant::now);
                    let left = due.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return true;
                    }
                    left.min(POLL)
                }
            };
            policy = self.wait_policy(policy, wait);
        }
    }

    /// Waits on the policy condvar for at most `timeout`.
    fn wait_policy<'a>(
        &self,
        guard: MutexGuard<'a, Policy>,
        timeout: Duration,
    ) -> MutexGuard<'a, Policy> {
        self.policy_changed
            .wait_timeout(guard, timeout)
            .unwrap_or_else(PoisonError::into_inner)
            .0
    }

    /// Counts a connection that was accepted and closed at once.
    pub(super) fn note_refused(&self) {
        lock(&self.registry).accepted += 1;
        self.registry_changed.notify_all();
    }

    /// Registers a newly accepted connection whose client side is `client` (a handle used to
    /// shut it down), and returns its id and shared state.
    pub(super) fn register(&self, client: TcpStream) -> (u64, Arc<Conn>) {
        let conn = Arc::new(Conn {
            closed: AtomicBool::new(false),
            sockets: Mutex::new(Sockets {
                client,
                server: None,
            }),
        });
        let id = {
            let mut registry = lock(&self.registry);
            let id = registry.next_id;
            registry.next_id += 1;
            registry.accepted += 1;
            registry.open.insert(id, Arc::clone(&conn));
            id
        };
        self.registry_changed.notify_all();
        if self.is_shutdown() || self.refusing() {
            // Accepted while the proxy was being dropped, or while `refuse` was being turned
            // on and `cut` may have missed it (`admit` saw the flag off): close it like the
            // others.
            self.close(&conn);
        }
        (id, conn)
    }

    /// Forgets the connection `id`, whose threads are done.
    pub(super) fn unregister(&self, id: u64) {
        lock(&self.registry).open.remove(&id);
        self.registry_changed.notify_all();
    }

    /// Keeps `thread` to join on drop, joining the connection threads that have finished.
    pub(super) fn add_thread(&self, thread: JoinHandle<()>) {
        let finished = {
            let mut registry = lock(&self.registry);
            let (finished, running) = std::mem::take(&mut registry.threads)
                .into_iter()
                .partition::<Vec<_>, _>(JoinHandle::is_finished);
            registry.threads = running;
            registry.threads.push(thread);
            finished
        };
        for thread in finished {
            let _ = thread.join();
        }
    }

    /// Takes every connection thread not yet joined.
    pub(super) fn take_threads(&self) -> Vec<JoinHandle<()>> {
        std::mem::take(&mut lock(&self.registry).threads)
    }

    /// Closes `conn` and wakes its threads.
    pub(super) fn close(&self, conn: &Conn) {
        conn.shut();
        self.wake();
    }

    /// Closes every open connection and wakes their threads.
    pub(super) fn close_all(&self) {
        let open: Vec<Arc<Conn>> = lock(&self.registry).open.values().cloned().collect();
        for conn in &open {
            conn.shut();
        }
        self.wake();
    }

    /// The number of open connections.
    pub(super) fn connections(&self) -> usize {
        lock(&self.registry).open.len()
    }

    /// The number of connections accepted so far.
    pub(super) fn accepted(&self) -> usize {
        lock(&self.registry).accepted
    }

    /// Waits for at most `timeout` until `done(open, accepted)` holds; returns whether it did.
    pub(super) fn wait_counts(
        &self,
        timeout: Duration,
        done: impl Fn(usize, usize) -> bool,
    ) -> bool {
        let deadline = Instant::now().checked_add(timeout);
        let mut registry = lock(&self.registry);
        loop {
            if done(registry.open.len(), registry.accepted) {
                return true;
            }
            let left = match deadline {
                Some(deadline) => deadline.saturating_duration_since(Instant::now()),
                None => POLL,
            };
            if left.is_zero() {
                return false;
            }
            registry = self
                .registry_changed
                .wait_timeout(registry, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}

/// Locks `mutex`, ignoring poisoning: the state stays consistent if a holder panicked.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
