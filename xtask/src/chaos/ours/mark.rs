//! A hold's mark on the server for the log judge, or its unmarked record when the mark
//! could not be made, and the mark's delete before the release.

use std::time::Duration;

use tokio::time::Instant;
use zk_client::{CreateMode, CreateOptions, Op};

use crate::chaos::judge::marks;
use crate::chaos::layout;
use crate::interop::holds::Mode;

use super::Contender;

impl Contender {
    /// Leaves the hold's mark on the server ([`marks`]): an ephemeral node of the lock's own
    /// session, created in one `multi` with the hold's checks, naming each node held with its
    /// token. A holder that believes it holds keeps trying while its connection is down (as a
    /// user's critical section would go on to touch the server), for up to a session timeout:
    /// a hold granted during a loss leaves its mark once the connection is back. Its path; an
    /// error (with the path) if it was not surely created.
    pub(super) async fn mark(
        &self,
        checks: Vec<Op>,
        mode: Mode,
        held: &[(&str, i64)],
    ) -> std::result::Result<String, String> {
        let path = format!("{}/{}-{}", marks::MARKS, self.name, self.n);
        let mut ops = checks;
        ops.push(Op::create(
            path.clone(),
            marks::mark_data("rust", &self.lock(), mark_mode(mode), held),
            CreateOptions::new(CreateMode::Ephemeral),
        ));
        let until = Instant::now() + self.cfg.session_timeout;
        loop {
            let err = match self.client.multi(&ops).await {
                Ok(_) => return Ok(path),
                Err(e) => e,
            };
            let unsent = matches!(err, zk_client::Error::NotConnected);
            if !(unsent || err.is_uncertain())
                || self.client.state().is_terminal()
                || Instant::now() >= until
            {
                return Err(path);
            }
            if err.is_uncertain() {
                // Made or not: the mark is there if it was made (its session lives on).
                match self.client.exists(&path).await {
                    Ok(Some(_)) => return Ok(path),
                    Ok(None) => {}
                    Err(_) => return Err(path),
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Accounts on the record for a hold whose mark could not be made ([`marks`]'s unmarked
    /// record, which the log judge reads): made through the store session (it outlives the
    /// lock's), and once the guard says the hold is lost, set to say how long after the
    /// failure that was. Waits for the signal (as a careful holder that cannot mark would
    /// before going on) up to a session timeout and a little, while the record is made; a
    /// holder never told stays recorded as untold, which the judge charges.
    pub(super) async fn unmarked(
        &self,
        mode: Mode,
        held: &[(&str, i64)],
        lost: impl std::future::Future<Output = recipe_mutex::Loss>,
    ) {
        let failed = Instant::now();
        let path = format!(
            "{}/{}{}-{}",
            marks::MARKS,
            marks::UNMARKED,
            self.name,
            self.n
        );
        let bound = self.cfg.session_timeout + Duration::from_secs(2);
        let told = async {
            tokio::time::timeout(bound, lost)
                .await
                .ok()
                .map(|_| failed.elapsed())
        };
        let made = async {
            let data = marks::unmarked_data("rust", &self.lock(), mark_mode(mode), held, None);
            let ephemeral = CreateOptions::new(CreateMode::Ephemeral);
            loop {
                match self.store.create(&path, data.as_bytes(), &ephemeral).await {
                    Ok(_) | Err(zk_client::Error::NodeExists) => return true,
                    Err(_) if self.store.state().is_terminal() => return false,
                    Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
                }
            }
        };
        let (told, made) = tokio::join!(told, made);
        let Some(after) = told.filter(|_| made) else {
            return;
        };
        let ms = u64::try_from(after.as_millis()).unwrap_or(u64::MAX);
        let data = marks::unmarked_data("rust", &self.lock(), mark_mode(mode), held, Some(ms));
        loop {
            match self.store.set_data(&path, data.as_bytes(), None).await {
                Ok(_) => return,
                Err(_) if self.store.state().is_terminal() => return,
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }

    /// Deletes the mark (also one whose create's outcome is unknown) before the hold is
    /// released: until it is gone or its session has ended, however long that takes (the
    /// release's delete does not give up either, and a mark outliving its lock node would
    /// stand beside the next holder's: a long run saw one outlive a hold released after two
    /// elections in a row).
    pub(super) async fn unmark(&self, mark: std::result::Result<String, String>) {
        let path = match mark {
            Ok(p) | Err(p) => p,
        };
        loop {
            match self.client.delete(&path, None).await {
                Ok(()) | Err(zk_client::Error::NoNode) => return,
                Err(_) if self.client.state().is_terminal() => return,
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }

    /// The lock this worker's holds are of (its recipe's path), as its marks name it.
    fn lock(&self) -> String {
        layout::lock_path(self.who.recipe)
    }
}

/// The mode a mark or a register write names for a hold in `mode`.
pub(super) fn mark_mode(mode: Mode) -> marks::Mode {
    match mode {
        Mode::Exclusive => marks::Mode::Exclusive,
        Mode::Read => marks::Mode::Read,
        Mode::Write => marks::Mode::Write,
        Mode::Lease => marks::Mode::Lease,
    }
}
