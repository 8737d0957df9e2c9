//! The read-write search: while connected to a read-only server, the session task asks the
//! other servers in the background whether one is read-write, as the Java client does.
//!
//! - Only while read-only, with two hosts or more, and one search at a time.
//! - The interval doubles from 100 ms up to 60 s.
//! - Each server is probed with `isro` through the session's own connector, one second each.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::{Connect, Resolver};
use crate::Error;
use crate::session::SessionState;

/// While connected to a read-only server, looks for a read-write one in the background with
/// the `isro` four-letter word (as the Java client does), at growing intervals.
pub(super) struct RwSearch {
    next_at: Instant,
    every: Duration,
    pending: Option<oneshot::Receiver<Option<SocketAddr>>>,
}

impl RwSearch {
    const FIRST: Duration = Duration::from_millis(100);
    const MAX: Duration = Duration::from_secs(60);

    pub(super) fn new() -> Self {
        Self {
            next_at: Instant::now() + Self::FIRST,
            every: Self::FIRST,
            pending: None,
        }
    }

    pub(super) fn start_if_due<C: Connect>(
        &mut self,
        state: SessionState,
        hosts: &[(String, u16)],
        resolve: &Resolver,
        connector: &Arc<C>,
        current: Option<SocketAddr>,
    ) {
        if state != SessionState::ConnectedReadOnly || self.pending.is_some() || hosts.len() < 2 {
            return;
        }
        if Instant::now() < self.next_at {
            return;
        }
        let (hosts, resolve, connector) = (hosts.to_vec(), resolve.clone(), connector.clone());
        let (tx, rx) = oneshot::channel();
        tokio::spawn(async move {
            let mut others = Vec::new();
            for (host, port) in hosts {
                if let Ok(addrs) = resolve(host.clone(), port).await {
                    others.extend(
                        addrs
                            .into_iter()
                            .filter(|a| Some(*a) != current)
                            .map(|a| (host.clone(), a)),
                    );
                }
            }
            let _ = tx.send(find_rw_server(&*connector, others).await);
        });
        self.pending = Some(rx);
        self.every = (self.every * 2).min(Self::MAX);
        self.next_at = Instant::now() + self.every;
    }

    /// When the next search is due: only while read-only and no search is under way (else
    /// the pump would wake for nothing).
    pub(super) fn deadline(&self, state: SessionState) -> Option<Instant> {
        (state == SessionState::ConnectedReadOnly && self.pending.is_none()).then_some(self.next_at)
    }

    /// The outcome of the search under way, once it has one (`None` while none is under way
    /// or it goes on).
    pub(super) fn poll_result(&mut self, cx: &mut Context<'_>) -> Option<Option<SocketAddr>> {
        let rx = self.pending.as_mut()?;
        let Poll::Ready(found) = Pin::new(rx).poll(cx) else {
            return None;
        };
        self.pending = None;
        Some(found.unwrap_or(None))
    }
}

/// The first of `hosts` that says it is read-write (`isro` answers `rw`), asked through the
/// session's own connector (over TLS too, where the servers answer four-letter words on the
/// secure port).
async fn find_rw_server<C: Connect>(
    connector: &C,
    hosts: Vec<(String, SocketAddr)>,
) -> Option<SocketAddr> {
    const PROBE_TIMEOUT: Duration = Duration::from_secs(1);
    for (host, addr) in hosts {
        let probe = async {
            let mut stream = connector.connect(Some(&host), addr).await?;
            stream.write_all(b"isro").await?;
            let mut answer = Vec::new();
            stream.read_to_end(&mut answer).await?;
            Ok::<_, Error>(answer)
        };
        if let Ok(Ok(answer)) = tokio::time::timeout(PROBE_TIMEOUT, probe).await {
            if answer.starts_with(b"rw") {
                return Some(addr);
            }
        }
    }
    None
}
