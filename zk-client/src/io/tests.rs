//! The session task over real sockets and, on tokio's paused clock, over in-memory streams.

use std::io;

use super::*;
use crate::Client;

/// Defect 6: names are resolved on every attempt, not once at `connect()`: a name that
/// does not resolve yet is kept, and a server that moves to a new address is found there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_are_resolved_on_every_attempt() {
    let zk = zk_testkit::ZkServer::start().unwrap();
    let a = zk_testkit::FaultProxy::start(zk.addr()).unwrap();
    let b = zk_testkit::FaultProxy::start(zk.addr()).unwrap();
    let target: Arc<Mutex<Option<SocketAddr>>> = Arc::new(Mutex::new(None));
    let answers = target.clone();
    let resolve: Resolver = Arc::new(move |host: String, _port: u16| {
        let answers = answers.clone();
        Box::pin(async move {
            assert_eq!(host, "zk.test");
            let addr = *answers.lock().unwrap();
            addr.map(|a| vec![a])
                .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "unknown name"))
        })
    });
    let builder = Client::builder()
        .hosts("zk.test:2181")
        .session_timeout(Duration::from_secs(10));
    let err = builder
        .clone()
        .connect_with(resolve.clone())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::Unreachable { server, .. } if server == "zk.test:2181"),
        "{err:?}"
    );
    *target.lock().unwrap() = Some(a.addr());
    let c = builder.connect_with(resolve).await.unwrap();
    let session = c.session_id();
    assert_eq!(c.server_addr(), Some(a.addr()));
    // The server moves: the name now points to `b`, and `a` is gone.
    *target.lock().unwrap() = Some(b.addr());
    a.refuse(true);
    a.cut();
    let mut states = c.state_watch();
    tokio::time::timeout(
        Duration::from_secs(30),
        states.wait_for(|s| *s == SessionState::Disconnected),
    )
    .await
    .unwrap()
    .unwrap();
    tokio::time::timeout(
        Duration::from_secs(30),
        states.wait_for(|s| *s == SessionState::Connected),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(c.server_addr(), Some(b.addr()));
    assert_eq!(c.session_id(), session);
    c.close().await.unwrap();
}

/// Issue 24, item 3: a name with several addresses (`localhost`: `::1` and `127.0.0.1`, the
/// server on one of them only) is reached on whichever serves: every address is tried, in a
/// shuffled order, within the connect timeout; 20 first connects all succeed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_address_of_a_name_is_tried_on_the_first_connect() {
    let zk = zk_testkit::ZkServer::start().unwrap();
    let refusing = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let serving = zk.addr();
    let resolve: Resolver = Arc::new(move |_host: String, _port: u16| {
        Box::pin(async move { Ok(vec![refusing, serving]) })
    });
    let mut sessions = std::collections::HashSet::new();
    for _ in 0..20 {
        let c = Client::builder()
            .hosts("zk.test:2181")
            .session_timeout(Duration::from_secs(10))
            .connect_timeout(Duration::from_secs(5))
            .connect_with(resolve.clone())
            .await
            .expect("a connect on the serving address");
        assert_eq!(c.server_addr(), Some(serving));
        sessions.insert(c.session_id());
        c.close().await.unwrap();
    }
    assert_eq!(sessions.len(), 20, "a new session each time");
}

// ---- The whole task over in-memory streams, on tokio's paused clock ---------------------
//
// Time only moves when every task waits, and then straight to the next deadline: the ping,
// read, handshake, lost and back-off deadlines are checked to the millisecond, without a
// real-time hedge and in no wall time.

use bytes::BytesMut;
use tokio::io::DuplexStream;
use zk_proto::records::{ConnectRequest, ConnectResponse};
use zk_proto::{
    Decode, Encode, ErrorCode, ReplyHeader, RequestHeader, encode_frame, split_frame, xid,
};

use crate::{
    ClientBuilder,
    dial::{RECONNECT_SPREAD, SHORT_LIVED},
};

/// A connection the client opened: the server's end.
struct Conn {
    stream: DuplexStream,
    buf: BytesMut,
}

impl Conn {
    /// The next frame, or `None` at end of stream.
    async fn frame(&mut self) -> Option<BytesMut> {
        loop {
            if let Some(frame) = split_frame(&mut self.buf, 1 << 20).unwrap() {
                return Some(frame);
            }
            if self.stream.read_buf(&mut self.buf).await.unwrap_or(0) == 0 {
                return None;
            }
        }
    }

    async fn read_connect(&mut self) -> ConnectRequest {
        let frame = self.frame().await.expect("a handshake");
        ConnectRequest::decode_exact(&frame, "ConnectRequest").unwrap()
    }

    async fn grant(&mut self, timeout_ms: i32, session_id: i64) {
        let resp = ConnectResponse {
            protocol_version: 0,
            time_out: timeout_ms,
            session_id,
            passwd: Some(bytes::Bytes::from_static(b"0123456789abcdef")),
            read_only: Some(false),
        };
        let mut out = BytesMut::new();
        encode_frame(&resp, &mut out, usize::MAX).unwrap();
        self.stream.write_all(&out).await.unwrap();
    }

    async fn read_request(&mut self) -> Option<(RequestHeader, Request)> {
        let frame = self.frame().await?;
        Some(Request::decode_frame(&frame).unwrap())
    }

    async fn reply_empty(&mut self, xid: i32) {
        let mut body = BytesMut::new();
        ReplyHeader {
            xid,
            zxid: 1,
            err: ErrorCode::Ok,
        }
        .encode(&mut body)
        .unwrap();
        let mut out = BytesMut::new();
        out.extend_from_slice(&(body.len() as i32).to_be_bytes());
        out.extend_from_slice(&body);
        self.stream.write_all(&out).await.unwrap();
    }
}

/// A transport whose connections the test receives; `refuse` makes every connect fail.
struct Mem {
    conns: mpsc::UnboundedSender<Conn>,
    refuse: Arc<std::sync::atomic::AtomicBool>,
    attempts: Arc<Mutex<Vec<Instant>>>,
    /// The in-memory connection's capacity, and how much the client's end buffers on its own
    /// beyond it, as a TLS stream does (0: nothing).
    capacity: usize,
    own_buffer: usize,
}

impl Connect for Mem {
    type Stream = Buffered;

    fn connect(
        &self,
        _host: Option<&str>,
        addr: SocketAddr,
    ) -> connect::BoxFuture<Result<Buffered, Error>> {
        let conns = self.conns.clone();
        let refuse = self.refuse.load(std::sync::atomic::Ordering::SeqCst);
        self.attempts.lock().unwrap().push(Instant::now());
        let (capacity, limit) = (self.capacity, self.own_buffer);
        Box::pin(async move {
            let refused =
                || unreachable(&addr.to_string(), io::ErrorKind::ConnectionRefused.into());
            if refuse {
                return Err(refused());
            }
            let (client, server) = tokio::io::duplex(capacity);
            let conn = Conn {
                stream: server,
                buf: BytesMut::new(),
            };
            conns.send(conn).map_err(|_| refused())?;
            Ok(Buffered {
                inner: client,
                held: BytesMut::new(),
                limit,
            })
        })
    }
}

/// The client's end of an in-memory connection. With a `limit`, it behaves as a TLS stream
/// does: a write is taken into a buffer of its own (up to `limit`) even when the connection is
/// full, and what it holds goes out on a later write or a flush only.
struct Buffered {
    inner: DuplexStream,
    held: BytesMut,
    limit: usize,
}

impl Buffered {
    /// Passes on what is held, as far as the connection takes it.
    fn push(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while !self.held.is_empty() {
            match Pin::new(&mut self.inner).poll_write(cx, &self.held) {
                Poll::Ready(Ok(n)) => bytes::Buf::advance(&mut self.held, n),
                other => return other.map(|r| r.map(|_| ())),
            }
        }
        Poll::Ready(Ok(()))
    }
}

impl tokio::io::AsyncRead for Buffered {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for Buffered {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if self.limit == 0 {
            return Pin::new(&mut self.inner).poll_write(cx, buf);
        }
        if let Poll::Ready(Err(e)) = self.push(cx) {
            return Poll::Ready(Err(e));
        }
        let room = self.limit.saturating_sub(self.held.len());
        if room == 0 {
            return Poll::Pending; // push registered the waker
        }
        let n = buf.len().min(room);
        self.held.extend_from_slice(&buf[..n]);
        if let Poll::Ready(Err(e)) = self.push(cx) {
            return Poll::Ready(Err(e));
        }
        Poll::Ready(Ok(n))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        std::task::ready!(self.push(cx))?;
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        std::task::ready!(self.push(cx))?;
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Resolves `sN:port` to `127.0.0.N:port`.
fn numbered_hosts() -> Resolver {
    Arc::new(|host: String, port: u16| {
        Box::pin(async move {
            let n: u8 = host
                .trim_start_matches('s')
                .parse()
                .map_err(|_| io::Error::new(io::ErrorKind::NotFound, "unknown name"))?;
            Ok(vec![SocketAddr::from(([127, 0, 0, n], port))])
        })
    })
}

struct Harness {
    conns: mpsc::UnboundedReceiver<Conn>,
    refuse: Arc<std::sync::atomic::AtomicBool>,
    /// When each connection attempt was made.
    attempts: Arc<Mutex<Vec<Instant>>>,
}

fn harness() -> (Mem, Harness) {
    let (tx, rx) = mpsc::unbounded_channel();
    let refuse = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let attempts = Arc::new(Mutex::new(Vec::new()));
    (
        Mem {
            conns: tx,
            refuse: refuse.clone(),
            attempts: attempts.clone(),
            capacity: 1 << 16,
            own_buffer: 0,
        },
        Harness {
            conns: rx,
            refuse,
            attempts,
        },
    )
}

impl Harness {
    async fn next(&mut self) -> Conn {
        self.conns.recv().await.expect("a connection")
    }

    fn refuse(&self, on: bool) {
        self.refuse.store(on, std::sync::atomic::Ordering::SeqCst);
    }
}

fn mem_builder(hosts: &str) -> ClientBuilder {
    Client::builder()
        .hosts(hosts)
        .session_timeout(Duration::from_secs(6))
        .connect_timeout(Duration::from_secs(3))
}

/// Connects a client over `mem` to the first connection the harness sees, granting 6 s.
async fn mem_connected(hosts: &str, mem: Mem, h: &mut Harness) -> (Client, Conn) {
    let connecting = tokio::spawn(mem_builder(hosts).connect_via(numbered_hosts(), mem, 7));
    let mut conn = h.next().await;
    conn.read_connect().await;
    conn.grant(6000, 0x51).await;
    (connecting.await.unwrap().unwrap(), conn)
}

async fn state(c: &Client, want: SessionState) {
    let mut states = c.state_watch();
    states.wait_for(|s| *s == want).await.unwrap();
}

/// An idle client pings after a third of the session timeout; a server that stops answering
/// is given up after two thirds of it without a byte; the session is reported lost a whole
/// session timeout after the last byte heard. Exactly, on the paused clock.
#[tokio::test(start_paused = true)]
async fn heartbeat_read_timeout_and_session_loss_to_the_millisecond() {
    let (mem, mut h) = harness();
    let t0 = Instant::now();
    let (c, mut conn) = mem_connected("s1:2181", mem, &mut h).await;
    let (header, request) = conn.read_request().await.unwrap();
    assert_eq!((header.xid, request), (xid::PING, Request::Ping));
    assert_eq!(t0.elapsed(), Duration::from_secs(2), "ping at a third");
    conn.reply_empty(xid::PING).await;
    let last_heard = Instant::now();
    // Silence from now on: pings go on, and the connection is closed after 4 s.
    while let Some((header, _)) = conn.read_request().await {
        assert_eq!(header.xid, xid::PING);
    }
    assert_eq!(
        last_heard.elapsed(),
        Duration::from_secs(4),
        "dead at two thirds"
    );
    state(&c, SessionState::Disconnected).await;
    // Reconnects find nobody answering: lost 6 s after the last byte heard.
    h.refuse(true);
    state(&c, SessionState::Lost).await;
    assert_eq!(
        last_heard.elapsed(),
        Duration::from_secs(6),
        "lost at the timeout"
    );
    drop(conn);
}

/// A stream that keeps bytes of its own beyond the connection (TLS: records rustls holds while
/// the socket is full) is flushed once the connection takes bytes again: a request whose last
/// bytes it held reaches the server then, not with the next write (the ping, 2 s later).
#[tokio::test(start_paused = true)]
async fn bytes_a_stream_holds_go_out_when_the_connection_drains_not_with_the_next_ping() {
    let (mut mem, mut h) = harness();
    mem.capacity = 1024;
    mem.own_buffer = 64 * 1024;
    let (c, mut conn) = mem_connected("s1:2181", mem, &mut h).await;
    let t0 = Instant::now();
    let data = vec![7u8; 8 * 1024];
    let create = tokio::spawn(async move {
        c.create(
            "/big",
            &data,
            &crate::CreateOptions::new(crate::CreateMode::Persistent),
        )
        .await
    });
    // The server reads only now: the client's end holds most of the frame.
    tokio::task::yield_now().await;
    let (_, request) = conn.read_request().await.unwrap();
    assert!(matches!(request, Request::Create(_)), "{request:?}");
    assert_eq!(
        t0.elapsed(),
        Duration::ZERO,
        "the whole frame without waiting for a ping"
    );
    drop(create);
}

/// A handshake nobody answers ends at the connect timeout, and the first connect reports it
/// after one attempt per server.
#[tokio::test(start_paused = true)]
async fn an_unanswered_handshake_ends_at_the_connect_timeout() {
    let (mem, mut h) = harness();
    let t0 = Instant::now();
    let connecting = tokio::spawn(mem_builder("s1:2181").connect_via(numbered_hosts(), mem, 7));
    let mut conn = h.next().await;
    conn.read_connect().await;
    let err = connecting.await.unwrap().unwrap_err();
    assert!(
        matches!(&err, Error::Unreachable { error, .. } if error.0.kind() == io::ErrorKind::TimedOut),
        "{err:?}"
    );
    // The message names the server and what it did.
    let text = err.to_string();
    assert!(text.starts_with("could not connect to 127.0.0."), "{text}");
    assert!(
        text.contains("the connection was accepted but the handshake had no answer within 3 s"),
        "{text}"
    );
    assert_eq!(t0.elapsed(), Duration::from_secs(3));
    assert!(conn.frame().await.is_none(), "hung up, nothing more sent");
    assert!(h.conns.try_recv().is_err(), "no second attempt");
}

/// Issue 51, item 5: a restarted single server accepts a connection and never answers it
/// (ZooKeeper 3.8 refusing a connect while it loads its database, and failing to close the
/// socket). The attempt is given up after a third of the 6 s session, and the next one finds
/// the session alive; before, the attempt took the whole session timeout and the session
/// was reported lost, then expired by the server.
#[tokio::test(start_paused = true)]
async fn an_attempt_a_server_never_answers_leaves_room_for_the_next() {
    let (mem, mut h) = harness();
    let (c, conn) = mem_connected("s1:2181", mem, &mut h).await;
    let session = c.session_id();
    tokio::time::advance(SHORT_LIVED).await;
    let lost_at = Instant::now();
    drop(conn);
    let mut hung = h.next().await;
    hung.read_connect().await;
    let mut again = h.next().await;
    assert_eq!(
        lost_at.elapsed().as_secs(),
        2,
        "the unanswered attempt given up after 2 s (and a pause of at most 100 ms)"
    );
    assert!(hung.frame().await.is_none(), "the hung connection closed");
    let request = again.read_connect().await;
    assert_eq!(request.session_id, session);
    again.grant(6000, session).await;
    state(&c, SessionState::Connected).await;
    assert_eq!(c.session_id(), session);
    assert!(lost_at.elapsed() < Duration::from_secs(6), "never lost");
}

/// After losing an established connection that held, the client tries the next server at
/// once; a failed round of servers backs off, doubling, each pause at random between its
/// half and its whole.
#[tokio::test(start_paused = true)]
async fn reconnects_within_the_spread_then_back_off_by_rounds() {
    let (mem, mut h) = harness();
    let (c, conn) = mem_connected("s1:2181,s2:2181", mem, &mut h).await;
    let heard = Instant::now();
    tokio::time::advance(SHORT_LIVED).await;
    let lost_at = Instant::now();
    drop(conn);
    state(&c, SessionState::Disconnected).await;
    let again = h.next().await;
    assert!(
        lost_at.elapsed() <= RECONNECT_SPREAD,
        "the next server within the spread: {:?}",
        lost_at.elapsed()
    );
    // This one hangs up, and both servers refuse from then on: each round of two failed
    // attempts is followed by a pause of 50-100 ms, 100-200 ms, 200-400 ms, 400-800 ms,
    // then 0.5-1 s.
    h.refuse(true);
    let first = *h.attempts.lock().unwrap().last().unwrap();
    drop(again.stream);
    state(&c, SessionState::Lost).await;
    assert_eq!(
        heard.elapsed(),
        Duration::from_secs(6),
        "lost at the timeout from the last frame heard"
    );
    let attempts = h.attempts.lock().unwrap().clone();
    let since: Vec<u128> = attempts
        .iter()
        .skip_while(|t| **t < first)
        .map(|t| t.duration_since(first).as_millis())
        .collect();
    let rounds: Vec<&[u128]> = since.chunks(2).take(5).collect();
    assert_eq!(rounds.len(), 5, "{since:?}");
    let mut before = 0;
    for (round, whole) in rounds.iter().zip([0, 100, 200, 400, 800]) {
        let [a, b] = round else { panic!("{since:?}") };
        assert_eq!(a, b, "a round's two attempts go together: {since:?}");
        assert!(
            (before + whole / 2..=before + whole).contains(a),
            "{since:?}"
        );
        before = *a;
    }
}

/// The servers of the first connect are each tried once, with no pause, before every
/// server's error is reported.
#[tokio::test(start_paused = true)]
async fn the_first_connect_tries_every_server_once_without_pausing() {
    let (mem, h) = harness();
    h.refuse(true);
    let t0 = Instant::now();
    let err = mem_builder("s1:2181,s2:2182,s3:2183")
        .connect_via(numbered_hosts(), mem, 7)
        .await
        .unwrap_err();
    assert_eq!(t0.elapsed(), Duration::ZERO);
    assert_eq!(
        h.attempts.lock().unwrap().len(),
        3,
        "one attempt per server"
    );
    let Error::NoServerReached { failures } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(failures.len(), 3, "{err:?}");
    assert!(
        failures.iter().all(
            |f| matches!(f, Error::Unreachable { server, .. } if server.starts_with("127.0.0."))
        ),
        "{err:?}"
    );
}

/// Issue 24, item 2: a close that cannot reach the server (it stopped reading) gives up at
/// its close timeout, and then a request the server read fails as uncertain
/// (`ConnectionLoss`: it may still be applied), one partly written too, and one still in the
/// client's buffer as `Closed` (surely not sent). The same when the last handle is dropped.
#[tokio::test(start_paused = true)]
async fn a_close_that_times_out_fails_written_requests_as_uncertain() {
    for drop_instead in [false, true] {
        let (mem, mut h) = harness();
        let connecting = tokio::spawn(
            mem_builder("s1:2181")
                .close_timeout(Duration::from_secs(2))
                .connect_via(numbered_hosts(), mem, 7),
        );
        let mut conn = h.next().await;
        conn.read_connect().await;
        conn.grant(6000, 0x51).await;
        let c = connecting.await.unwrap().unwrap();
        let read = tokio::spawn(c.delete("/read", None));
        let (header, _) = conn.read_request().await.unwrap();
        assert_eq!(header.xid, 1, "the server read the first request");
        // The server reads no more: long deletes fill the 64 KiB pipe, the last stays in the
        // client's buffer.
        let long = format!("/{}", "n".repeat(20_000));
        let partly = tokio::spawn(c.delete(&long, None));
        let stuck: Vec<_> = (0..5)
            .map(|_| tokio::spawn(c.delete(&long, None)))
            .collect();
        let unsent = tokio::spawn(c.delete("/unsent", None));
        tokio::task::yield_now().await;
        let t0 = Instant::now();
        if drop_instead {
            drop(c);
        } else {
            c.close().await.unwrap();
            assert_eq!(t0.elapsed(), Duration::from_secs(2), "the close timeout");
        }
        let read = read.await.unwrap().unwrap_err();
        assert_eq!(t0.elapsed(), Duration::from_secs(2), "the close timeout");
        assert_eq!(read, Error::ConnectionLoss);
        assert!(read.is_uncertain());
        assert_eq!(partly.await.unwrap(), Err(Error::ConnectionLoss));
        for s in stuck {
            assert!(s.await.unwrap().is_err());
        }
        let unsent = unsent.await.unwrap().unwrap_err();
        assert_eq!(unsent, Error::Closed, "drop: {drop_instead}");
        assert!(!unsent.is_uncertain());
        drop(conn);
    }
}

/// Issue 26: a first connect that fails on every server names each server and what it did:
/// two refused ports and a port that accepts and never answers (as an HTTP server does).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_first_connect_names_each_server_and_what_it_did() {
    let refused: Vec<SocketAddr> = (0..2)
        .map(|_| {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap()
        })
        .collect();
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let silent_addr = silent.local_addr().unwrap();
    let holder = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((conn, _)) = silent.accept().await {
            held.push(conn);
        }
    });
    let hosts = format!("{},{},{silent_addr}", refused[0], refused[1]);
    let err = Client::builder()
        .hosts(&hosts)
        .connect_timeout(Duration::from_millis(600))
        .connect()
        .await
        .unwrap_err();
    let Error::NoServerReached { failures } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(failures.len(), 3, "{err}");
    let text = err.to_string();
    assert!(
        text.starts_with("could not connect to any of the 3 servers: "),
        "{text}"
    );
    for addr in &refused {
        assert!(
            text.contains(&format!("could not connect to {addr}: ")),
            "{text}"
        );
    }
    assert!(
        text.contains(&format!(
            "could not connect to {silent_addr}: the connection was accepted but the handshake had no answer"
        )),
        "{text}"
    );
    holder.abort();
}

#[test]
fn durations_read_as_a_message_says_them() {
    assert_eq!(super::millis(Duration::from_millis(250)), "250 ms");
    assert_eq!(super::millis(Duration::from_secs(3)), "3 s");
    assert_eq!(super::millis(Duration::from_millis(2500)), "2.5 s");
    assert_eq!(super::millis(Duration::from_millis(2449)), "2.4 s");
    assert_eq!(super::millis(Duration::from_millis(2960)), "3.0 s");
    assert_eq!(super::millis(Duration::from_millis(61_030)), "61.0 s");
}
