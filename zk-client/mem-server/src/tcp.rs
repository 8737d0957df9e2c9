//! Loopback TCP ([`crate::MemServer::listen`]): each connection accepted is served as an
//! in-memory one is, so other processes, and code that takes a connect string, reach the
//! same server.

use std::sync::Weak;

use tokio::net::TcpListener;

use crate::conn::open;
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
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let _ = stream.set_nodelay(true);
        // Refused: the stream is dropped here, which closes it.
        let _ = open(&shared, None, stream);
    }
}
