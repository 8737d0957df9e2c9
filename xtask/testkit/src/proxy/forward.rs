//! The connection threads: connect to the target, then forward each direction under the
//! current policy.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use super::state::{Conn, POLL, Shared};

/// The most a forwarding thread reads at once.
const CHUNK: usize = 16 * 1024;

/// How long connecting to the target may take. The target is meant to be on loopback, where a
/// connect succeeds or is refused at once.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// The pause between two attempts to connect to the target, with
/// [`FaultProxy::retry_connect`](super::FaultProxy::retry_connect).
const CONNECT_RETRY_INTERVAL: Duration = Duration::from_millis(20);

/// Serves the registered connection `id`: connects to the target, forwards client to server
/// on this thread and server to client on a second one, and unregisters once both are done.
pub(super) fn serve(shared: &Arc<Shared>, id: u64, conn: &Arc<Conn>, client: TcpStream) {
    let _registered = Registered { shared, id };
    let Some(server) = connect(shared, conn, &client) else {
        shared.close(conn);
        return;
    };
    let back = server.try_clone().and_then(|server| {
        let client = client.try_clone()?;
        let shared = Arc::clone(shared);
        let conn = Arc::clone(conn);
        thread::Builder::new()
            .name(format!("fault-proxy-back-{id}"))
            .spawn(move || pump(&shared, &conn, &server, &client))
    });
    match back {
        Ok(back) => {
            pump(shared, conn, &client, &server);
            let _ = back.join();
        }
        Err(_) => shared.close(conn),
    }
}

/// Unregisters its connection when dropped, so that [`Shared::connections`] counts it until
/// both of its directions are done.
struct Registered<'a> {
    /// The proxy's state.
    shared: &'a Shared,
    /// The connection's id.
    id: u64,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        self.shared.unregister(self.id);
    }
}

/// Connects to the target (trying again for the proxy's retry time), sets up both sockets and
/// attaches the server side to `conn`. Returns the server socket, or `None` when the target
/// cannot be reached or the connection was closed meanwhile.
fn connect(shared: &Shared, conn: &Conn, client: &TcpStream) -> Option<TcpStream> {
    let give_up = Instant::now().checked_add(shared.connect_retry());
    let server = loop {
        match TcpStream::connect_timeout(&shared.target, CONNECT_TIMEOUT) {
            Ok(server) => break server,
            Err(_) if give_up.is_some_and(|t| Instant::now() < t) && !shared.stopped(conn) => {
                thread::sleep(CONNECT_RETRY_INTERVAL);
            }
            Err(_) => return None,
        }
    };
    let handle = configure(client)
        .and_then(|()| configure(&server))
        .and_then(|()| server.try_clone());
    let Ok(handle) = handle else {
        let _ = server.shutdown(Shutdown::Both);
        return None;
    };
    if !conn.attach_server(handle) || shared.is_shutdown() {
        return None;
    }
    Some(server)
}

/// Sets the short timeouts that let the forwarding threads notice changes, and turns off
/// Nagle's algorithm so that the proxy adds no latency of its own.
fn configure(stream: &TcpStream) -> io::Result<()> {
    stream.set_nodelay(true)?;
    stream.set_read_timeout(Some(POLL))?;
    stream.set_write_timeout(Some(POLL))
}

/// Forwards `from` to `to` until end-of-stream, an error, or the connection closes.
///
/// Nothing is read while stalled. A chunk read is written once [`Shared::wait_release`] lets
/// it go. End-of-stream is forwarded as a shutdown of `to`'s sending half (when not stalled);
/// an error closes the whole connection.
fn pump(shared: &Shared, conn: &Conn, from: &TcpStream, to: &TcpStream) {
    let mut from = from;
    let mut buf = vec![0u8; CHUNK];
    loop {
        if !shared.wait_flowing(conn) {
            return;
        }
        let n = match from.read(&mut buf) {
            Ok(0) => {
                if shared.wait_flowing(conn) {
                    let _ = to.shutdown(Shutdown::Write);
                }
                return;
            }
            Ok(n) => n,
            Err(e) if retry(&e) => continue,
            Err(_) => {
                shared.close(conn);
                return;
            }
        };
        let read_at = Instant::now();
        if !shared.wait_release(conn, read_at) {
            return;
        }
        let chunk = buf.get(..n).unwrap_or_default();
        if write_chunk(shared, conn, to, chunk).is_err() {
            shared.close(conn);
            return;
        }
    }
}

/// Writes all of `data` to `to`, a write timeout at a time, pausing while stalled.
///
/// # Errors
/// The write fails, or the connection is closed (`ConnectionAborted`).
fn write_chunk(
    shared: &Shared,
    conn: &Conn,
    mut to: &TcpStream,
    mut data: &[u8],
) -> io::Result<()> {
    while !data.is_empty() {
        if !shared.wait_flowing(conn) {
            return Err(io::Error::new(
                io::ErrorKind::ConnectionAborted,
                "fault proxy: connection closed",
            ));
        }
        match to.write(data) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => data = data.get(n..).unwrap_or_default(),
            Err(e) if retry(&e) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Whether `e` is a timeout or an interruption, after which the read or write is retried.
fn retry(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}
