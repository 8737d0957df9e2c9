//! A client's loop: its sessions and cohorts, the acquire styles, one hold's cycle, and the
//! semaphore's leases.

#[cfg(feature = "plant")]
use std::sync::atomic::Ordering::SeqCst;
use std::time::Duration;

use recipe_multilock::InterProcessMultiLock;
use recipe_mutex::{CohortBound, InterProcessMutex, Lock};
use recipe_rwlock::InterProcessReadWriteLock;
use recipe_semaphore::{InterProcessSemaphoreMutex, InterProcessSemaphoreV2};
use tokio::time::Instant;
use zk_client::{Client, CreateMode, CreateOptions};

use crate::chaos::history::{Acquire, AcquireEnd, Event, Lost, Session, Style};
use crate::chaos::judge::marks;
use crate::chaos::layout;
use crate::interop::holds::{Hold, Mode};
use crate::recipe::Recipe;

use super::harness::stop_if_aimed;
#[cfg(feature = "plant")]
use super::plant::DELETES_OTHERS;
use super::{Cohorts, Contender, kind_of};

impl Contender {
    pub(super) fn now(&self) -> u64 {
        self.shared.clock.now()
    }

    fn roll(&mut self, n: u64) -> u64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng % n.max(1)
    }

    fn over(&self) -> bool {
        Instant::now() >= self.end
    }

    /// Runs the recipe's loop until the run's end; when the session ends (expired while the
    /// process was paused or its connections stalled), goes on with a new one, as a user
    /// would.
    pub(super) async fn run(&mut self) {
        self.session().await;
        while !self.over() {
            self.run_session().await;
            if self.over() {
                break;
            }
            if self.client.state().is_terminal() {
                let fresh = match self.in_cohort() {
                    true => self.cohort().await.map(|(client, _)| client),
                    false => {
                        Client::builder()
                            .hosts(&self.cfg.connect)
                            .session_timeout(self.cfg.session_timeout)
                            .connect()
                            .await
                    }
                };
                match fresh {
                    Ok(client) => {
                        self.client = client;
                        self.session().await;
                    }
                    Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
                }
            }
        }
    }

    /// Records the client's session (a node left is traced to its client by it) and
    /// registers it on the server before it touches a lock (the log judge knows ours by it:
    /// see `judge::marks`), retrying until the registration is made or the session ends.
    async fn session(&self) {
        let id = self.client.session_id();
        self.shared.push(Event::Session(Session {
            who: self.name.clone(),
            id,
            at: self.now(),
        }));
        self.record_reconnects();
        let path = format!("{}/session-{}-{id:x}", marks::MARKS, self.name);
        let data = marks::session_data("rust");
        let ephemeral = CreateOptions::new(CreateMode::Ephemeral);
        while !self.client.state().is_terminal() {
            match self.client.create(&path, data.as_bytes(), &ephemeral).await {
                Ok(_) | Err(zk_client::Error::NodeExists) => return,
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }

    /// Records each time this session connects again (a `SESSION` line with the same id), as
    /// Curator's worker does at `RECONNECTED`: a history then shows when every client was
    /// back after a fault, ours as well as Curator's. Ends with the session.
    fn record_reconnects(&self) {
        let mut states = self.client.state_stream();
        let shared = self.shared.clone();
        let who = self.name.clone();
        let id = self.client.session_id();
        tokio::spawn(async move {
            while let Some(state) = states.next().await {
                match state {
                    zk_client::SessionState::Connected
                    | zk_client::SessionState::ConnectedReadOnly => {
                        let at = shared.clock.now();
                        let who = who.clone();
                        shared.push(Event::Session(Session { who, id, at }));
                    }
                    s if s.is_terminal() => return,
                    _ => {}
                }
            }
        });
    }

    /// Whether this client is one of its process's cohorts (`cohort`).
    fn in_cohort(&self) -> bool {
        self.cfg.cohort && self.who.recipe.has_cohort()
    }

    /// The cohorts' session and cohorts: the one they have while that session lives, else a
    /// new session (made by the first client to ask) and cohorts on it.
    async fn cohort(&self) -> std::result::Result<(Client, Cohorts), zk_client::Error> {
        let mut slot = self.shared.cohort.lock().await;
        if let Some((client, cohort)) = slot.as_ref() {
            if !client.state().is_terminal() {
                return Ok((client.clone(), cohort.clone()));
            }
        }
        // The first session is the one the process started with, if it lives.
        let client = match self.client.state().is_terminal() {
            false => self.client.clone(),
            true => {
                Client::builder()
                    .hosts(&self.cfg.connect)
                    .session_timeout(self.cfg.session_timeout)
                    .connect()
                    .await?
            }
        };
        let path = layout::lock_path(Recipe::Mutex);
        let mutex = InterProcessMutex::new(client.clone(), &path)
            .map_err(|_| zk_client::Error::InvalidArgument("the mutex's path"))?
            .cohort(CohortBound::default());
        let path = layout::lock_path(Recipe::Rwlock);
        let rw = InterProcessReadWriteLock::new(client.clone(), &path)
            .map_err(|_| zk_client::Error::InvalidArgument("the read/write lock's path"))?
            .cohort(CohortBound::default());
        let cohorts = Cohorts { mutex, rw };
        *slot = Some((client.clone(), cohorts.clone()));
        Ok((client, cohorts))
    }

    /// Whether to stop the loop: the run is over or the session ended.
    fn stop(&self) -> bool {
        self.over() || self.client.state().is_terminal()
    }

    /// The recipe's loop on the current session.
    async fn run_session(&mut self) {
        let recipe = self.who.recipe;
        let path = layout::lock_path(recipe);
        let client = self.client.clone();
        match recipe {
            Recipe::Mutex | Recipe::Rwlock if self.in_cohort() => match self.cohort().await {
                // The cohort of this client's session (another client may have replaced
                // it: then this one goes round again with the new session).
                Ok((shared, cohorts)) if shared.session_id() == client.session_id() => {
                    let regs = [layout::register(recipe, 0)];
                    match recipe {
                        Recipe::Rwlock => {
                            let rw = &cohorts.rw;
                            self.rw_loop(rw.write_lock(), rw.read_lock(), &regs).await
                        }
                        _ => self.lock_loop(&cohorts.mutex, Mode::Exclusive, &regs).await,
                    }
                }
                Ok((shared, _)) => {
                    self.client = shared;
                    self.session().await;
                }
                Err(e) => {
                    eprintln!("{}: {e}", self.name);
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            },
            Recipe::Mutex => match InterProcessMutex::new(client, &path) {
                Ok(lock) => {
                    self.lock_loop(&lock, Mode::Exclusive, &[layout::register(recipe, 0)])
                        .await
                }
                Err(e) => eprintln!("{}: {e}", self.name),
            },
            Recipe::SemaphoreMutex => match InterProcessSemaphoreMutex::new(client, &path) {
                Ok(lock) => {
                    self.lock_loop(&lock, Mode::Lease, &[layout::register(recipe, 0)])
                        .await
                }
                Err(e) => eprintln!("{}: {e}", self.name),
            },
            Recipe::Rwlock => match InterProcessReadWriteLock::new(client, &path) {
                Ok(rw) => {
                    let regs = [layout::register(recipe, 0)];
                    self.rw_loop(rw.write_lock(), rw.read_lock(), &regs).await
                }
                Err(e) => eprintln!("{}: {e}", self.name),
            },
            Recipe::Multilock => {
                let members: Vec<String> = (0..layout::MEMBERS).map(layout::member_path).collect();
                let refs: Vec<&str> = members.iter().map(String::as_str).collect();
                match InterProcessMultiLock::new(client, &refs) {
                    Ok(lock) => {
                        let regs: Vec<String> = (0..layout::MEMBERS)
                            .map(|k| layout::register(recipe, k))
                            .collect();
                        self.lock_loop(&lock, Mode::Exclusive, &regs).await;
                    }
                    Err(e) => eprintln!("{}: {e}", self.name),
                }
            }
            Recipe::Semaphore => match InterProcessSemaphoreV2::new(client, &path, self.cfg.leases)
            {
                Ok(sem) => self.lease_loop(&sem).await,
                Err(e) => eprintln!("{}: {e}", self.name),
            },
        }
    }

    /// A read/write lock's loop: writes (3 in 10, to the registers) and reads.
    async fn rw_loop(&mut self, write: &dyn Lock, read: &dyn Lock, regs: &[String]) {
        while !self.stop() {
            if self.roll(10) < 3 {
                self.cycle(write, Mode::Write, regs).await;
            } else {
                self.cycle(read, Mode::Read, &[]).await;
            }
        }
    }

    async fn lock_loop(&mut self, lock: &dyn Lock, mode: Mode, regs: &[String]) {
        while !self.stop() {
            self.cycle(lock, mode, regs).await;
        }
    }

    /// Picks a style and the acquire's deadline; records the acquire's start.
    fn begin(&mut self) -> (u64, Style, Instant, Option<Duration>) {
        self.n += 1;
        let style = Style::ALL
            .get(usize::try_from(self.roll(4)).unwrap_or(0))
            .copied()
            .unwrap_or(Style::Release);
        let deadline = match style {
            Style::Timeout => {
                (Instant::now() + Duration::from_millis(20 + self.roll(400))).min(self.end)
            }
            _ => self.end,
        };
        let cancel_after =
            (style == Style::Cancel).then(|| Duration::from_millis(1 + self.roll(40)));
        let start = self.now();
        if let Ok(mut a) = self.shared.acquiring.lock() {
            a.insert(
                self.name.clone(),
                Acquire {
                    who: self.name.clone(),
                    n: self.n,
                    style,
                    start,
                    end: None,
                    outcome: AcquireEnd::Unfinished,
                },
            );
        }
        (start, style, deadline, cancel_after)
    }

    /// Records how the acquire begun by [`Contender::begin`] ended.
    fn ended(&mut self, start: u64, style: Style, outcome: AcquireEnd) {
        if let Ok(mut a) = self.shared.acquiring.lock() {
            a.remove(&self.name);
        }
        let end = self.now();
        self.shared.push(Event::Acquire(Acquire {
            who: self.name.clone(),
            n: self.n,
            style,
            start,
            end: Some(end),
            outcome,
        }));
    }

    /// One acquisition in a style drawn at random: `acquire` is given its deadline; the
    /// attempt is cancelled (dropped) if the style says so; how it ended is recorded. The
    /// guard and the style when it holds (after a failure, a short pause first).
    async fn acquire<G, E, F>(&mut self, acquire: impl FnOnce(Instant) -> F) -> Option<(G, Style)>
    where
        F: std::future::Future<Output = std::result::Result<Option<G>, E>>,
        E: std::fmt::Debug,
    {
        let (start, style, deadline, cancel_after) = self.begin();
        let taking = acquire(deadline);
        let result = match cancel_after {
            Some(after) => tokio::time::timeout(after, taking).await.ok(),
            None => Some(taking.await),
        };
        let outcome = match result {
            None => AcquireEnd::Cancelled,
            Some(Ok(Some(guard))) => {
                self.ended(start, style, AcquireEnd::Held);
                return Some((guard, style));
            }
            Some(Ok(None)) => AcquireEnd::TimedOut,
            Some(Err(e)) => AcquireEnd::Failed(kind_of(&e)),
        };
        let failed = matches!(outcome, AcquireEnd::Failed(_));
        self.ended(start, style, outcome);
        if failed {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        None
    }

    /// One cycle on a lock: acquire, update the registers under the hold, release.
    async fn cycle(&mut self, lock: &dyn Lock, mode: Mode, regs: &[String]) {
        #[cfg(feature = "plant")]
        if DELETES_OTHERS.load(SeqCst) && self.who.recipe == Recipe::Mutex {
            self.delete_first().await;
        }
        let Some((guard, style)) = self
            .acquire(|deadline| lock.lock_until(Some(deadline)))
            .await
        else {
            return;
        };
        let from = self.now();
        let held: Vec<(&str, i64)> = guard
            .holds()
            .into_iter()
            .map(|h| (h.node_path(), h.fencing_token()))
            .collect();
        let mark = self.mark(guard.check_ops(), mode, &held).await;
        if mark.is_err() {
            self.unmarked(mode, &held, guard.lost()).await;
        }
        // Unmarked (its create failed or its outcome is unknown), the hold writes nothing:
        // the servers' log would show a write no mark stands for.
        let regs = if mark.is_ok() { regs } else { &[] };
        if !regs.is_empty() {
            stop_if_aimed(&self.name);
        }
        let lost_at = self.work(guard.as_ref(), mode, regs).await;
        // The hold as the clients' checker sees it ends with the work (a mark's delete held
        // up by a stalled connection is not the hold going on).
        let to = self.now();
        self.unmark(mark).await;
        for h in guard.holds() {
            let node = h.node_path();
            let on = if self.who.recipe == Recipe::Multilock {
                let member = node.rsplit('/').nth(1).unwrap_or("?");
                format!("member-{member}")
            } else if mode == Mode::Lease {
                "leases".to_owned()
            } else {
                "lock".to_owned()
            };
            self.shared.push(Event::Hold(Hold {
                who: self.name.clone(),
                n: self.n,
                on,
                mode,
                from,
                to,
                node: node.rsplit('/').next().map(str::to_owned),
                token: Some(h.fencing_token()),
            }));
        }
        if let Some(at) = lost_at {
            self.lost(at);
        }
        match style {
            Style::Drop => drop(guard),
            _ => {
                let _ = guard.release().await;
            }
        }
    }

    /// How long the next hold lasts: the configured length, else a random 0.2-3 ms.
    pub(super) fn hold_for(&mut self) -> Duration {
        match self.cfg.hold {
            Some(hold) => hold,
            None => Duration::from_micros(200 + self.roll(2800)),
        }
    }

    fn lost(&self, at: u64) {
        self.shared.push(Event::Lost(Lost {
            who: self.name.clone(),
            n: self.n,
            at,
        }));
    }

    /// The semaphore: one lease per acquisition (no register: N holders at once share none).
    async fn lease_loop(&mut self, sem: &InterProcessSemaphoreV2) {
        while !self.stop() {
            let Some((lease, style)) = self
                .acquire(|deadline| {
                    sem.try_acquire_for(deadline.saturating_duration_since(Instant::now()))
                })
                .await
            else {
                continue;
            };
            let from = self.now();
            let held = [(lease.node_path(), lease.fencing_token())];
            let mark = self.mark(vec![lease.check_op()], Mode::Lease, &held).await;
            if mark.is_err() {
                self.unmarked(Mode::Lease, &held, lease.lost()).await;
            }
            let hold_for = self.hold_for();
            let mut lost_at = tokio::select! {
                _ = lease.lost() => Some(self.now()),
                () = tokio::time::sleep(hold_for) => None,
            };
            if lost_at.is_none() {
                lost_at = self.confirm(true, || lease.is_valid(), lease.lost()).await;
            }
            let to = self.now();
            self.unmark(mark).await;
            self.shared.push(Event::Hold(Hold {
                who: self.name.clone(),
                n: self.n,
                on: "leases".into(),
                mode: Mode::Lease,
                from,
                to,
                node: lease.node_path().rsplit('/').next().map(str::to_owned),
                token: Some(lease.fencing_token()),
            }));
            if let Some(at) = lost_at {
                self.lost(at);
            }
            match style {
                Style::Drop => drop(lease),
                _ => {
                    let _ = lease.release().await;
                }
            }
        }
    }
}
