//! One connection's task: frames read go to the protocol machine, its outputs are written,
//! the switches stall or cut it.

use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use crate::machine::ConnId;
use crate::seeded::Seeded;
use crate::shared::{Link, Outgoing, Shared, Switches};
use crate::trace::describe_in;

/// Opens a connection over `stream` (the server's end), as the server accepting it: its task
/// is spawned, or `ConnectionRefused` while the server refuses or is down. `tag` names the
/// client that dialled (for partitions).
pub(crate) fn open<S: AsyncRead + AsyncWrite + Send + 'static>(
    shared: &Arc<Shared>,
    tag: Option<u64>,
    stream: S,
) -> std::io::Result<()> {
    let (frames_tx, frames_rx) = mpsc::unbounded_channel();
    let (switches_tx, switches_rx) = watch::channel(Switches::default());
    let conn = shared.with(|state| {
        if state.refuse || state.down {
            state.note(|| format!("t{} dial refused", tag.unwrap_or(0)));
            return None;
        }
        let conn = state.machine.handle_accept();
        // A partitioned client's connection is born stalled: no bytes either way.
        let cut_off = tag.is_some_and(|t| state.partitioned.contains(&t));
        if let (true, Some(t)) = (cut_off, tag) {
            switches_tx.send_modify(|sw| sw.stalled = true);
            state.silenced.insert(conn, (t, false));
        }
        state.note(|| {
            format!(
                "t{} dial: c{conn}{}",
                tag.unwrap_or(0),
                if cut_off { " (partitioned)" } else { "" }
            )
        });
        let link = Link {
            frames: frames_tx,
            switches: switches_tx,
            tag,
        };
        state.links.insert(conn, link);
        Some(conn)
    });
    let conn = conn.ok_or_else(|| std::io::Error::from(std::io::ErrorKind::ConnectionRefused))?;
    tokio::spawn(serve(shared.clone(), conn, stream, frames_rx, switches_rx));
    Ok(())
}

/// One connection: frames read go to the machine, its outputs are written, the switches
/// stall or cut it. When it ends, for whatever reason, the machine hears so.
async fn serve<S: AsyncRead + AsyncWrite + Send + 'static>(
    shared: Arc<Shared>,
    conn: ConnId,
    stream: S,
    mut frames: mpsc::UnboundedReceiver<Outgoing>,
    mut switches: watch::Receiver<Switches>,
) {
    let (max_frame_len, latency, seed) = shared.with(|s| {
        let config = s.machine.config();
        (config.max_frame_len, config.latency, config.seed)
    });
    let mut rng = Seeded::new(seed ^ conn.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let latency_ms = u64::try_from(latency.as_millis()).unwrap_or(u64::MAX);
    // Requests on their way to the server, with when each arrives (in order).
    let mut arriving: std::collections::VecDeque<(Instant, BytesMut)> = Default::default();
    let (mut rd, mut wr) = tokio::io::split(stream);
    let mut buf = BytesMut::new();
    'run: loop {
        let now_switches = *switches.borrow_and_update();
        if now_switches.cut {
            break;
        }
        if now_switches.stalled {
            if switches.changed().await.is_err() {
                break;
            }
            continue;
        }
        let next_arrival = arriving.front().map(|(at, _)| *at);
        tokio::select! {
            biased;
            changed = switches.changed() => {
                if changed.is_err() {
                    break;
                }
            }
            () = sleep_until(next_arrival) => {
                while arriving.front().is_some_and(|(at, _)| *at <= Instant::now()) {
                    if let Some((_, frame)) = arriving.pop_front() {
                        deliver(&shared, conn, &frame);
                    }
                }
            }
            out = frames.recv() => match out {
                Some(Outgoing::Frame(frame)) => {
                    if wr.write_all(&frame).await.is_err() {
                        break;
                    }
                }
                Some(Outgoing::Close) | None => {
                    let _ = wr.shutdown().await;
                    break;
                }
            },
            read = rd.read_buf(&mut buf) => {
                if !matches!(read, Ok(n) if n > 0) {
                    break;
                }
                loop {
                    match zk_proto::split_frame(&mut buf, max_frame_len) {
                        Ok(Some(frame)) if latency_ms == 0 && arriving.is_empty() => {
                            deliver(&shared, conn, &frame);
                        }
                        Ok(Some(frame)) => {
                            let delay = Duration::from_millis(rng.below(latency_ms + 1));
                            let after = arriving.back().map(|(at, _)| *at);
                            let at = (Instant::now() + delay).max(after.unwrap_or_else(Instant::now));
                            arriving.push_back((at, frame));
                        }
                        Ok(None) => break,
                        Err(_) => break 'run,
                    }
                }
            }
        }
    }
    shared.with(|s| {
        s.note(|| format!("c{conn} ended"));
        s.machine.handle_disconnect(conn);
        s.links.remove(&conn);
        s.silenced.remove(&conn);
    });
}

/// Hands a whole frame read from `conn` to the machine (noting it in the trace).
pub(crate) fn deliver(shared: &Shared, conn: ConnId, frame: &[u8]) {
    let now = Instant::now().into_std();
    shared.with(|s| {
        s.note(|| format!("c{conn} > {}", describe_in(frame)));
        s.machine.handle_frame(now, conn, frame);
    });
}

/// Sleeps until `at`, or forever without one.
async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
