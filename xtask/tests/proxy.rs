//! The loopback fault proxy, in front of a plain std echo server: pass, delay, stall, cut,
//! refuse, a dead target, and drop with connections open.
//!
//! Every wait is bounded: reads have timeouts and the proxy's waits take a deadline. Upper
//! bounds on durations are in seconds, never tighter.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

use xtask::FaultProxy;

/// How long a test waits for something that should happen promptly.
const PATIENCE: Duration = Duration::from_secs(5);

/// How long a test listens for silence (bytes that must not arrive).
const QUIET: Duration = Duration::from_millis(300);

/// Starts an echo server on 127.0.0.1 that serves each connection on its own thread, and
/// returns its address. Its threads end with the test process.
fn echo_server() -> SocketAddr {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let addr = listener.local_addr().unwrap();
    thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            thread::spawn(move || {
                let mut buf = [0u8; 4096];
                loop {
                    match stream.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => {
                            if stream.write_all(&buf[..n]).is_err() {
                                return;
                            }
                        }
                    }
                }
            });
        }
    });
    addr
}

/// Connects to `addr`, with reads timing out after [`PATIENCE`].
fn connect(addr: SocketAddr) -> TcpStream {
    let stream = TcpStream::connect_timeout(&addr, PATIENCE).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    stream.set_nodelay(true).unwrap();
    stream
}

/// Sends `msg` and reads its echo.
fn roundtrip(stream: &mut TcpStream, msg: &[u8]) {
    stream.write_all(msg).unwrap();
    let mut echo = vec![0u8; msg.len()];
    stream.read_exact(&mut echo).unwrap();
    assert_eq!(echo, msg);
}

/// Reads once with a read timeout of `timeout`, and restores the [`PATIENCE`] timeout.
fn read_within(stream: &mut TcpStream, timeout: Duration) -> io::Result<Vec<u8>> {
    stream.set_read_timeout(Some(timeout)).unwrap();
    let mut buf = [0u8; 1024];
    let read = stream.read(&mut buf);
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    read.map(|n| buf[..n].to_vec())
}

/// Whether `e` is a read timeout.
fn timed_out(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

/// Asserts that the connection is dead: the next read returns end-of-stream or an error other
/// than a timeout, within [`PATIENCE`].
fn assert_closed(stream: &mut TcpStream, what: &str) {
    let start = Instant::now();
    match read_within(stream, PATIENCE) {
        Ok(bytes) => assert!(bytes.is_empty(), "{what}: read {bytes:?} instead of EOF"),
        Err(e) => assert!(!timed_out(&e), "{what}: no EOF within {PATIENCE:?}"),
    }
    assert!(
        start.elapsed() < PATIENCE,
        "{what}: EOF took {:?}",
        start.elapsed()
    );
}

#[test]
fn pass_forwards_both_ways_in_order() {
    let proxy = FaultProxy::start(echo_server()).unwrap();
    assert_eq!(proxy.addr().ip(), Ipv4Addr::LOCALHOST);
    let mut client = connect(proxy.addr());
    roundtrip(&mut client, b"hello");
    assert!(proxy.wait_connections(1, PATIENCE));
    assert_eq!(proxy.accepted(), 1);

    // Much more than one chunk each way, written while the echo is read.
    let data: Vec<u8> = (0..1_000_000u32).map(|i| (i % 251) as u8).collect();
    let mut writer = client.try_clone().unwrap();
    let sent = data.clone();
    let write = thread::spawn(move || writer.write_all(&sent).unwrap());
    let mut echo = vec![0u8; data.len()];
    client.read_exact(&mut echo).unwrap();
    write.join().unwrap();
    assert!(echo == data, "the echo differs from what was sent");

    drop(client);
    assert!(proxy.wait_connections(0, PATIENCE), "{proxy:?}");
}

#[test]
fn delay_delays_each_direction() {
    let delay = Duration::from_millis(150);
    let proxy = FaultProxy::start(echo_server()).unwrap();
    let mut client = connect(proxy.addr());
    roundtrip(&mut client, b"before");

    // Applies to the existing connection: the request and the answer are each delayed.
    proxy.delay(delay);
    let start = Instant::now();
    roundtrip(&mut client, b"x");
    assert!(start.elapsed() >= 2 * delay, "took {:?}", start.elapsed());

    // And to new ones, keeping the order of several writes.
    let mut second = connect(proxy.addr());
    let start = Instant::now();
    for part in [&b"one "[..], b"two ", b"three"] {
        second.write_all(part).unwrap();
    }
    let mut echo = [0u8; 13];
    second.read_exact(&mut echo).unwrap();
    assert_eq!(&echo, b"one two three");
    assert!(start.elapsed() >= 2 * delay, "took {:?}", start.elapsed());

    proxy.pass();
    roundtrip(&mut client, b"after");
}

#[test]
fn stall_holds_bytes_until_pass() {
    let proxy = FaultProxy::start(echo_server()).unwrap();
    let mut client = connect(proxy.addr());
    roundtrip(&mut client, b"before");

    proxy.stall();
    client.write_all(b"held").unwrap();
    let silent = read_within(&mut client, QUIET);
    assert!(
        silent.as_ref().is_err_and(timed_out),
        "stalled, yet read {silent:?}"
    );

    // A new connection is accepted but nothing flows either.
    let mut late = connect(proxy.addr());
    assert!(proxy.wait_accepted(2, PATIENCE));
    late.write_all(b"late").unwrap();
    let silent = read_within(&mut late, QUIET);
    assert!(
        silent.as_ref().is_err_and(timed_out),
        "stalled, yet read {silent:?}"
    );

    proxy.pass();
    let mut echo = [0u8; 4];
    client.read_exact(&mut echo).unwrap();
    assert_eq!(&echo, b"held");
    late.read_exact(&mut echo).unwrap();
    assert_eq!(&echo, b"late");
    roundtrip(&mut client, b"after");
    assert_eq!(proxy.connections(), 2);
}

#[test]
fn cut_closes_current_connections_only() {
    let proxy = FaultProxy::start(echo_server()).unwrap();
    let mut first = connect(proxy.addr());
    let mut second = connect(proxy.addr());
    roundtrip(&mut first, b"one");
    roundtrip(&mut second, b"two");

    proxy.cut();
    assert_closed(&mut first, "first after cut");
    assert_closed(&mut second, "second after cut");
    assert!(proxy.wait_connections(0, PATIENCE), "{proxy:?}");

    let mut again = connect(proxy.addr());
    roundtrip(&mut again, b"again");
    assert!(proxy.wait_connections(1, PATIENCE), "{proxy:?}");
    assert_eq!(proxy.accepted(), 3);
}

#[test]
fn cut_while_stalled_keeps_the_stall() {
    let proxy = FaultProxy::start(echo_server()).unwrap();
    let mut client = connect(proxy.addr());
    roundtrip(&mut client, b"before");

    proxy.stall();
    client.write_all(b"lost").unwrap();
    proxy.cut();
    assert_closed(&mut client, "stalled client after cut");

    let mut again = connect(proxy.addr());
    again.write_all(b"new").unwrap();
    let silent = read_within(&mut again, QUIET);
    assert!(
        silent.as_ref().is_err_and(timed_out),
        "still stalled, yet read {silent:?}"
    );
    proxy.pass();
    let mut echo = [0u8; 3];
    again.read_exact(&mut echo).unwrap();
    assert_eq!(&echo, b"new");
}

#[test]
fn refuse_closes_new_connections_only() {
    let proxy = FaultProxy::start(echo_server()).unwrap();
    let mut old = connect(proxy.addr());
    roundtrip(&mut old, b"old");

    proxy.refuse(true);
    let mut refused = connect(proxy.addr());
    // The write may race with the close; what matters is that nothing comes back.
    let _ = refused.write_all(b"hello");
    assert_closed(&mut refused, "refused connection");
    assert!(proxy.wait_accepted(2, PATIENCE));
    assert_eq!(proxy.connections(), 1);
    roundtrip(&mut old, b"still");

    proxy.refuse(false);
    let mut accepted = connect(proxy.addr());
    roundtrip(&mut accepted, b"welcome");
    assert_eq!(proxy.accepted(), 3);
    assert!(proxy.wait_connections(2, PATIENCE), "{proxy:?}");
}

#[test]
fn dead_target_closes_the_client() {
    let dead = {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        listener.local_addr().unwrap()
    };
    let proxy = FaultProxy::start(dead).unwrap();
    assert_eq!(proxy.target(), dead);
    let mut client = connect(proxy.addr());
    assert_closed(&mut client, "client of a dead target");
    assert!(proxy.wait_connections(0, PATIENCE), "{proxy:?}");
    assert_eq!(proxy.accepted(), 1);
}

#[test]
fn drop_with_open_connections_is_prompt() {
    let proxy = FaultProxy::start(echo_server()).unwrap();
    let addr = proxy.addr();
    let mut idle = connect(addr);
    roundtrip(&mut idle, b"idle");
    let mut stalled = connect(addr);
    roundtrip(&mut stalled, b"stalled");
    proxy.stall();
    stalled.write_all(b"pending").unwrap();
    let mut delayed = connect(addr);
    proxy.delay(Duration::from_secs(60));
    delayed.write_all(b"slow").unwrap();
    assert!(proxy.wait_connections(3, PATIENCE), "{proxy:?}");

    let start = Instant::now();
    drop(proxy);
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "drop took {:?}",
        start.elapsed()
    );
    assert_closed(&mut idle, "idle client after drop");
    assert_closed(&mut stalled, "stalled client after drop");
    assert_closed(&mut delayed, "delayed client after drop");
    // The listener is gone with the accept thread.
    assert!(TcpStream::connect_timeout(&addr, PATIENCE).is_err());
}
