//! Loopback TCP ([`crate::MemServer::listen`]): each connection accepted is served as an
//! in-memory one is, so other processes, and code that takes a connect string, reach the
//! same server; one whose first four bytes are a four-letter word is answered as ZooKeeper
//! answers it ([`crate::four_letter`]).

use std::sync::Weak;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::conn::open;
use crate::four_letter;
use crate::shared::Shared;

/// Accepts connections on `listener` until the server is gone (its last handle and
/// connection dropped: the port closes then). While the server refuses or is down, a
/// connection is closed as soon as it is accepted (the client sees its connection end before
/// any reply, as it would a refusal).
pub(crate) async fn accept_loop(shared: Weak<Shared>, listener: TcpListener) {
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _peer)) => stream,
            // Out of descriptors or a connection reset before it was accepted: try again
            // (after a pause, so that a lasting failure does not spin).
            Err(_) => {
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                continue;
            }
        };
        if shared.strong_count() == 0 {
            return;
        }
        let _ = stream.set_nodelay(true);
        tokio::spawn(first_bytes(shared.clone(), stream));
    }
}

/// Reads a connection's first four bytes: a four-letter word is answered and the connection
/// closed; anything else is a frame length, and the connection is served with those bytes
/// put back in front. While the server refuses or is down, the connection is closed (the
/// client sees its connection end before any reply, as it would a refusal).
async fn first_bytes(shared: Weak<Shared>, mut stream: TcpStream) {
    let mut head = [0u8; 4];
    if stream.read_exact(&mut head).await.is_err() {
        return;
    }
    let Some(shared) = shared.upgrade() else {
        return;
    };
    let answer = shared.with(|s| {
        if s.refuse || s.down {
            Err(())
        } else {
            Ok(four_letter::answer(&s.machine, &head))
        }
    });
    match answer {
        Err(()) => {}
        Ok(Some(text)) => {
            let _ = stream.write_all(text.as_bytes()).await;
            let _ = stream.shutdown().await;
        }
        Ok(None) => {
            let (rd, wr) = stream.into_split();
            let rd = std::io::Cursor::new(head).chain(rd);
            // Refused meanwhile: the stream is dropped here, which closes it.
            let _ = open(&shared, None, tokio::io::join(rd, wr));
        }
    }
}
