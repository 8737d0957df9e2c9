//! A loopback TCP proxy that injects network faults between a client and one server without
//! touching the server: delays, stalls (a partition or a frozen server), cut connections and
//! refused connections.
//!
//! [`FaultProxy::start`] listens on `127.0.0.1:0`; the client connects to [`FaultProxy::addr`]
//! instead of the server. Each accepted connection gets its own connection to the target and
//! two threads, one per direction, that forward chunks according to the current mode. A mode
//! change applies at once to existing and new connections. Everything is std threads and
//! blocking sockets with short timeouts; dropping the proxy stops every thread and closes every
//! socket within tens of milliseconds.
//!
//! - [`FaultProxy::pass`], [`FaultProxy::delay`], [`FaultProxy::stall`]: the forwarding mode.
//! - [`FaultProxy::cut`]: close every current connection (one-shot, the mode is unchanged).
//! - [`FaultProxy::refuse`]: close new connections as soon as they are accepted.
//! - [`FaultProxy::retry_connect`]: keep trying a target that is down before giving up.

mod forward;
mod state;

use std::fmt;
use std::io;
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::Duration;

use state::{Policy, Shared};

/// How long the accept loop waits before accepting again after an error such as running out
/// of file descriptors, so that a lasting error does not spin.
const ACCEPT_RETRY: Duration = Duration::from_millis(20);

/// How long [`Drop`] waits to connect to its own listener, which wakes the accept thread.
const WAKE_TIMEOUT: Duration = Duration::from_secs(1);

/// A TCP proxy on 127.0.0.1 in front of one server, whose faults the test switches at any time.
///
/// Connections are forwarded in both directions; the forwarding mode is [`pass`](Self::pass)
/// (the default), [`delay`](Self::delay) or [`stall`](Self::stall), and applies to existing and
/// new connections alike. [`cut`](Self::cut) and [`refuse`](Self::refuse) close connections.
/// Half-closes are forwarded: when one side shuts down its sending half, the proxy shuts down
/// the same half towards the other side and keeps forwarding the other direction.
///
/// Dropping the proxy closes its listener and every connection, and joins all its threads.
pub struct FaultProxy {
    /// The listening address, `127.0.0.1:<port>`.
    addr: SocketAddr,
    /// State shared with the accept and connection threads.
    shared: Arc<Shared>,
    /// The accept thread, joined on drop.
    accept: Option<JoinHandle<()>>,
}

impl FaultProxy {
    /// Starts a proxy in front of the server at `target`, listening on `127.0.0.1:0`.
    ///
    /// Each accepted connection is connected to `target` from its own thread, so a slow target
    /// never holds up accepting; when `target` refuses (it is down), the client's connection is
    /// closed, as if the server had closed it.
    ///
    /// # Errors
    /// Binding the listener or spawning the accept thread fails.
    pub fn start(target: SocketAddr) -> io::Result<FaultProxy> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared::new(target));
        let accept = thread::Builder::new()
            .name(format!("fault-proxy-{}", addr.port()))
            .spawn({
                let shared = Arc::clone(&shared);
                move || accept_loop(&listener, &shared)
            })?;
        Ok(FaultProxy {
            addr,
            shared,
            accept: Some(accept),
        })
    }

    /// The proxy's listening address, to put in the client's connect string.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The server's address that connections are forwarded to.
    pub fn target(&self) -> SocketAddr {
        self.shared.target
    }

    /// Forwards bytes as they come (the default mode). Ends a stall: whatever was held back is
    /// forwarded, in order.
    pub fn pass(&self) {
        self.shared.set_policy(Policy::Pass);
    }

    /// Forwards each chunk `d` after the proxy read it, in order and in both directions (so a
    /// request and its answer are delayed by about `2 * d` together). Chunks already waiting
    /// keep the time they were read at: switching from a longer delay releases them sooner.
    pub fn delay(&self, d: Duration) {
        self.shared.set_policy(Policy::Delay(d));
    }

    /// Stops forwarding in both directions but keeps every socket open: bytes wait in the proxy
    /// and the kernel, and each side sees silence, like a network partition or a frozen server.
    /// End-of-stream is held back too. New connections are still accepted (and connected to the
    /// target) but nothing flows until [`pass`](Self::pass) or [`delay`](Self::delay).
    pub fn stall(&self) {
        self.shared.set_policy(Policy::Stall);
    }

    /// Closes every current connection at once: both of its sockets are shut down, so the
    /// client reads end-of-stream (or gets an error) right away and the server sees the
    /// connection close. A one-shot action: the mode does not change, and connections accepted
    /// afterwards are forwarded as usual. [`connections`](Self::connections) drops to zero
    /// shortly after, once the connection threads have noticed.
    pub fn cut(&self) {
        self.shared.close_all();
    }

    /// While `on`, every newly accepted connection is closed at once, before anything is
    /// forwarded (the client sees a connection that dies before its handshake). Existing
    /// connections are not affected.
    pub fn refuse(&self, on: bool) {
        self.shared.set_refuse(on);
    }

    /// When connecting to the target fails (it is down, or not listening yet), keeps trying
    /// for up to `within` before closing the client's connection; what the client sends
    /// meanwhile waits in the proxy. The default is zero: closed at once. Applies to
    /// connections accepted from now on.
    ///
    /// A client connecting directly would see its connect refused and might retry it; through
    /// the proxy its connect succeeds and the connection then closes, which some clients treat
    /// as a failure of the server rather than of the connect. A ZooKeeper learner, for one,
    /// retries a leader's quorum port that refuses it, but gives the leader up when the port
    /// closes the connection.
    pub fn retry_connect(&self, within: Duration) {
        self.shared.set_connect_retry(within);
    }

    /// How many proxied connections are open now: accepted and not refused, and not yet closed
    /// on both sides.
    pub fn connections(&self) -> usize {
        self.shared.connections()
    }

    /// How many connections the proxy has accepted in total, refused ones included.
    pub fn accepted(&self) -> usize {
        self.shared.accepted()
    }

    /// Waits until exactly `n` proxied connections are open, for at most `timeout`; returns
    /// whether that happened. Wakes on every accept and close, without polling.
    pub fn wait_connections(&self, n: usize, timeout: Duration) -> bool {
        self.shared.wait_counts(timeout, |open, _| open == n)
    }

    /// Waits until at least `n` connections have been accepted in total (see
    /// [`accepted`](Self::accepted)), for at most `timeout`; returns whether that happened. Use
    /// it to wait for a client's reconnect.
    pub fn wait_accepted(&self, n: usize, timeout: Duration) -> bool {
        self.shared
            .wait_counts(timeout, |_, accepted| accepted >= n)
    }
}

impl fmt::Debug for FaultProxy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FaultProxy")
            .field("addr", &self.addr)
            .field("target", &self.shared.target)
            .field("policy", &self.shared.policy())
            .field("refusing", &self.shared.refusing())
            .field("retry_connect", &self.shared.connect_retry())
            .field("connections", &self.connections())
            .field("accepted", &self.accepted())
            .finish()
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.shared.begin_shutdown();
        if let Some(accept) = self.accept.take() {
            // The accept thread blocks in `accept()`: a connection of our own wakes it up to
            // see the shutdown flag. Should that connection fail, the thread is left to exit on
            // its next accept rather than joined forever.
            if TcpStream::connect_timeout(&self.addr, WAKE_TIMEOUT).is_ok() {
                let _ = accept.join();
            }
        }
        self.shared.close_all();
        for thread in self.shared.take_threads() {
            let _ = thread.join();
        }
    }
}

/// Accepts connections until the proxy shuts down, handing each to [`admit`].
fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    loop {
        let accepted = listener.accept();
        if shared.is_shutdown() {
            return;
        }
        match accepted {
            Ok((client, _)) => admit(shared, client),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => thread::sleep(ACCEPT_RETRY),
        }
    }
}

/// Refuses `client`, or registers it and starts its connection thread.
fn admit(shared: &Arc<Shared>, client: TcpStream) {
    if shared.refusing() {
        shared.note_refused();
        let _ = client.shutdown(Shutdown::Both);
        return;
    }
    let Ok(handle) = client.try_clone() else {
        shared.note_refused();
        let _ = client.shutdown(Shutdown::Both);
        return;
    };
    let (id, conn) = shared.register(handle);
    let spawned = thread::Builder::new()
        .name(format!("fault-proxy-conn-{id}"))
        .spawn({
            let shared = Arc::clone(shared);
            let conn = Arc::clone(&conn);
            move || forward::serve(&shared, id, &conn, client)
        });
    match spawned {
        Ok(thread) => shared.add_thread(thread),
        Err(_) => {
            shared.close(&conn);
            shared.unregister(id);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::io::{Read, Write};

    use super::*;

    /// A target that starts listening after the client connected is reached with
    /// `retry_connect`, and the client's early bytes arrive; without it the client's
    /// connection closes.
    #[test]
    fn retry_connect_waits_for_a_late_target() {
        let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let target = SocketAddr::from((Ipv4Addr::LOCALHOST, port));

        let impatient = FaultProxy::start(target).unwrap();
        let mut client = TcpStream::connect(impatient.addr()).unwrap();
        client
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let closed = matches!(client.read(&mut [0u8; 1]), Ok(0) | Err(_));
        assert!(closed, "a connection to a dead target stayed open");

        let patient = FaultProxy::start(target).unwrap();
        patient.retry_connect(Duration::from_secs(5));
        let mut client = TcpStream::connect(patient.addr()).unwrap();
        client.write_all(b"early").unwrap();
        let listener = TcpListener::bind(target).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        server
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut got = [0u8; 5];
        server.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"early");
    }
}
