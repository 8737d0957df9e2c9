//! Taking leases: the semaphore's machine, run by the shared driver, with Curator's retry of
//! an attempt whose node vanished.

use std::sync::Arc;

use bytes::Bytes;
use recipe_mutex::Error;
use recipe_mutex::layer::driver::{self, Acquired, DriveOptions, Ended, Turn};
use recipes_core::{Failure, MaxLeases, SemaphoreMachine};
use tokio::sync::Notify;
use tokio::time::Instant;
use zk_client::Client;

/// How many times an attempt whose lease (or inner lock node) vanished is retried, within the
/// same deadline.
const VANISHED_RETRIES: u32 = 3;

/// One acquisition's parameters.
pub(crate) struct Ask<'a> {
    pub client: &'a Client,
    pub base: &'a str,
    pub qty: u32,
    pub max: &'a MaxLeases,
    pub data: Bytes,
    pub deadline: Option<Instant>,
    pub turn: Option<Turn>,
    pub wake: Option<Arc<Notify>>,
}

/// Takes `qty` leases: `Ok(Some)` when held, `Ok(None)` when the deadline passed first (what
/// was created is deleted, awaited for a short grace). Cancel-safe as the driver.
pub(crate) async fn take_leases(ask: Ask<'_>) -> Result<Option<Vec<Acquired>>, Error> {
    let client = ask.client;
    let deadline = ask.deadline.map(Instant::into_std);
    let mut vanished = 0;
    loop {
        // Made once the attempt is admitted (see the driver).
        let make = || {
            let uuid = recipe_mutex::layer::random_uuid();
            // Planted (feature `plant`, the simulator's only): the count rule off by one.
            let max = match crate::plant::active(crate::plant::Plant::SemaphoreOneTooMany) {
                true => MaxLeases::new(ask.max.get().saturating_add(1)),
                false => ask.max.clone(),
            };
            SemaphoreMachine::new(ask.base, ask.qty, max, &uuid, ask.data.clone(), deadline)
        };
        let options = DriveOptions {
            turn: ask.turn.clone(),
            wake: ask.wake.clone(),
            deadline: ask.deadline,
            recipe: driver::RecipeKind::Semaphore,
        };
        let (outcome, error) = driver::drive(client, make, options).await;
        match outcome {
            Ok(held) => {
                let session_id = client.session_id();
                let leases = held
                    .into_iter()
                    .map(|h| Acquired {
                        path: h.path.into(),
                        czxid: h.czxid,
                        session_id,
                    })
                    .collect();
                return Ok(Some(leases));
            }
            Err(Ended::TimedOut) => return Ok(None),
            Err(Ended::Failed(Failure::NodeVanished)) if vanished < VANISHED_RETRIES => {
                vanished += 1;
            }
            Err(ended) => return Err(driver::error_of(client, ended, error)),
        }
    }
}
