//! The defects planted in our workers for the chaos suite's negative controls.

#[cfg(feature = "plant")]
use std::sync::atomic::AtomicBool;
#[cfg(feature = "plant")]
use std::sync::atomic::Ordering::SeqCst;

#[cfg(feature = "plant")]
use crate::chaos::layout;

use super::{Contender, Result};

/// A defect planted in our workers, for the chaos suite's negative controls: most make a
/// second holder that the servers' log shows; `no-node-watch` leaves holders of ours untold
/// when another session deletes their node (with the nemesis `delete-held`);
/// `deletes-others` makes ours that other session (the log judge's foreign deletes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ChaosPlant {
    /// A waiter holds on its predecessor's deletion without listing again.
    Shortcut,
    /// A waiter holds when its connection drops, whatever is ahead of it (the history the
    /// client-side checker's old rules excused).
    GrantOnDisconnect,
    /// A cohort grants its node to two local waiters at once (with `--cohort`).
    CohortDoubleGrant,
    /// A hold keeps no watch on its own node: a holder whose node another session deleted is
    /// never told (with the nemesis `delete-held`: the lost signal's table fails).
    NoNodeWatch,
    /// A semaphore's waiter lets the inner lock go while it waits, and takes its lease as
    /// soon as `leases/` changes, without counting again: the lease wait's hand-off shortcut.
    LeaseWaitShortcut,
    /// Before each acquire of the mutex, our client deletes the node that sorts first in the
    /// lock's directory (another client's, the holder's when one holds), by name: a cleanup
    /// deleting what is not its own (the log judge's foreign deletes).
    DeletesOthers,
}

impl ChaosPlant {
    /// Every plant.
    pub const ALL: [ChaosPlant; 6] = [
        ChaosPlant::Shortcut,
        ChaosPlant::GrantOnDisconnect,
        ChaosPlant::CohortDoubleGrant,
        ChaosPlant::NoNodeWatch,
        ChaosPlant::LeaseWaitShortcut,
        ChaosPlant::DeletesOthers,
    ];

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            ChaosPlant::Shortcut => "shortcut",
            ChaosPlant::GrantOnDisconnect => "grant-on-disconnect",
            ChaosPlant::CohortDoubleGrant => "cohort-double-grant",
            ChaosPlant::NoNodeWatch => "no-node-watch",
            ChaosPlant::LeaseWaitShortcut => "lease-wait-shortcut",
            ChaosPlant::DeletesOthers => "deletes-others",
        }
    }

    /// The plant of that name.
    pub fn parse(name: &str) -> Option<ChaosPlant> {
        ChaosPlant::ALL.into_iter().find(|p| p.name() == name)
    }

    /// Switches it on in this process.
    #[cfg(feature = "plant")]
    pub(crate) fn switch_on(self) -> Result<()> {
        use recipe_mutex::plant::Plant;
        // Each in the crate that has it: recipes-core's machines, recipe-mutex's layer.
        recipes_core::plant::set_hand_off_shortcut(self == ChaosPlant::Shortcut);
        recipes_core::plant::set_grant_on_disconnect(self == ChaosPlant::GrantOnDisconnect);
        recipes_core::plant::set_lease_wait_shortcut(self == ChaosPlant::LeaseWaitShortcut);
        recipe_mutex::plant::set(match self {
            ChaosPlant::CohortDoubleGrant => Some(Plant::CohortDoubleGrant),
            ChaosPlant::NoNodeWatch => Some(Plant::NoNodeWatch),
            // recipes-core's, above, or the worker's own (`deletes-others`).
            _ => None,
        });
        DELETES_OTHERS.store(self == ChaosPlant::DeletesOthers, SeqCst);
        Ok(())
    }

    /// Without the feature there is nothing to switch on.
    #[cfg(not(feature = "plant"))]
    pub(crate) fn switch_on(self) -> Result<()> {
        Err(format!(
            "this zk-worker was built without the feature `plant`: `{}` cannot be planted",
            self.name()
        )
        .into())
    }
}

/// Whether the plant `deletes-others` is on in this process.
#[cfg(feature = "plant")]
pub(super) static DELETES_OTHERS: AtomicBool = AtomicBool::new(false);

impl Contender {
    /// The plant `deletes-others`: deletes, by name, the node that sorts first (by its
    /// sequence suffix) in the lock's directory, whoever's it is; nothing if none.
    #[cfg(feature = "plant")]
    pub(super) async fn delete_first(&self) {
        let dir = layout::lock_path(self.who.recipe);
        let Ok(children) = self.client.get_children(&dir).await else {
            return;
        };
        let suffix = |c: &String| c.get(c.len().saturating_sub(10)..).map(str::to_owned);
        if let Some(first) = children.iter().min_by_key(|c| suffix(c)) {
            let _ = self.client.delete(&format!("{dir}/{first}"), None).await;
        }
    }
}
