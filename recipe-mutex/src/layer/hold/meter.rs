//! [`HoldMeter`]: one hold's metrics (feature `metrics`): its hold time, and at its end
//! whether it was lost and how; zero-sized without the feature.

use std::sync::Arc;

use super::NodeLife;
use crate::layer::node::Acquired;

/// One hold, measured: its kind and grant time, and what it needs to tell at its end whether
/// it was lost. Ended by [`HoldMeter::end`] when the hold ends, before its own delete (which
/// would otherwise read as `deleted`); zero-sized without the feature.
/// The hold layer keeps one in every hold; a recipe whose hold is not a [`Hold`](crate::Hold)
/// (recipe-semaphore's leases) keeps its own.
#[derive(Debug)]
pub struct HoldMeter {
    #[cfg(feature = "metrics")]
    inner: Option<held::Inner>,
}

impl HoldMeter {
    /// Starts measuring the hold of `node` on `client`, whose node's life is `life`.
    #[inline]
    pub fn start(client: &zk_client::Client, life: &Arc<NodeLife>, node: &Acquired) -> Self {
        #[cfg(feature = "metrics")]
        {
            Self {
                inner: Some(held::Inner::start(client, life, node)),
            }
        }
        #[cfg(not(feature = "metrics"))]
        {
            let _ = (client, life, node);
            Self {}
        }
    }

    /// The hold ends now: its hold time, and its loss if it ends lost (what its `lost()`
    /// would say now). Only the first call counts.
    #[inline]
    pub fn end(&mut self) {
        #[cfg(feature = "metrics")]
        if let Some(inner) = self.inner.take() {
            inner.end();
        }
    }
}

#[cfg(feature = "metrics")]
mod held {
    use std::sync::Arc;

    use zk_client::{Client, SessionState};

    use super::super::{Loss, NodeLife};
    use crate::layer::node::{Acquired, RecipeKind};
    use crate::metrics::{Since, hold_ended, lost};

    #[derive(Debug)]
    pub(super) struct Inner {
        recipe: RecipeKind,
        since: Since,
        client: Client,
        session_id: i64,
        life: Arc<NodeLife>,
    }

    impl Inner {
        pub(super) fn start(client: &Client, life: &Arc<NodeLife>, node: &Acquired) -> Self {
            Self {
                recipe: RecipeKind::of_node(&node.path),
                since: Since::now(),
                client: client.clone(),
                session_id: node.session_id,
                life: life.clone(),
            }
        }

        pub(super) fn end(self) {
            hold_ended(self.recipe, self.since);
            // What the hold's `lost()` says now, if it would resolve.
            let state = self.client.state();
            let loss = if self.life.is_gone() {
                Some(Loss::Deleted)
            } else if self.client.session_id() != self.session_id {
                Some(Loss::Lost)
            } else {
                match state {
                    SessionState::Connected => None,
                    SessionState::Disconnected
                    | SessionState::Connecting
                    | SessionState::ConnectedReadOnly => Some(Loss::Unsure),
                    _ => Some(Loss::Lost),
                }
            };
            if let Some(loss) = loss {
                let kind = match loss {
                    Loss::Unsure => "unsure",
                    Loss::Lost => "lost",
                    Loss::Deleted => "deleted",
                };
                lost(self.recipe, kind);
            }
        }
    }
}
