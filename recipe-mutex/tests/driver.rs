//! The driver and the hold layer as the other recipes use them, against a real server: any
//! machine runs, a wake-up from outside reaches it, a stuck machine ends with an error instead
//! of hanging, several cleanups run at once.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::sync::Arc;
use std::time::Instant;

use recipe_mutex::layer::driver::{self, DriveOptions, Ended};
use recipes_core::{Cleanup, Input, Machine, Op, Outcome, Reply};
use tokio::sync::Notify;
use zk_client::{CreateMode, CreateOptions};

mod support;
use support::{bounded, client, wait_children};

/// Watches a node, and holds once woken from outside.
#[derive(Default)]
struct WaitForWake {
    ops: Vec<Op>,
    watching: bool,
    woken: bool,
    outcome: Option<Outcome<&'static str>>,
}

impl Machine for WaitForWake {
    type Output = &'static str;
    fn handle(&mut self, _: Instant, input: Input) {
        match input {
            Input::Start => self.ops.push(Op::Exists {
                path: "/t/driver-wake".into(),
                watch: true,
            }),
            Input::Reply(Reply::Exists(_)) => self.watching = true,
            Input::Wake => self.woken = true,
            _ => {}
        }
        if self.watching && self.woken {
            self.outcome = Some(Outcome::Held("woken"));
        }
    }
    fn poll_op(&mut self) -> Option<Op> {
        self.ops.pop()
    }
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    fn outcome(&self) -> Option<&Outcome<&'static str>> {
        self.outcome.as_ref()
    }
    fn cleanups(&self) -> Vec<Cleanup> {
        Vec::new()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wake_up_from_outside_reaches_the_machine() {
    let c = client().await;
    let wake = Arc::new(Notify::new());
    let options = DriveOptions {
        wake: Some(wake.clone()),
        ..Default::default()
    };
    let driven = tokio::spawn({
        let c = c.clone();
        async move { driver::drive(&c, WaitForWake::default, options).await.0 }
    });
    wake.notify_one();
    assert_eq!(bounded(driven).await.unwrap(), Ok("woken"));
}

/// Sends one op, then forgets to wait for anything.
#[derive(Default)]
struct Forgetful {
    ops: Vec<Op>,
}

impl Machine for Forgetful {
    type Output = ();
    fn handle(&mut self, _: Instant, input: Input) {
        if input == Input::Start {
            self.ops.push(Op::Exists {
                path: "/".into(),
                watch: false,
            });
        }
    }
    fn poll_op(&mut self) -> Option<Op> {
        self.ops.pop()
    }
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    fn outcome(&self) -> Option<&Outcome<()>> {
        None
    }
    fn cleanups(&self) -> Vec<Cleanup> {
        Vec::new()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stuck_machine_ends_with_an_error_instead_of_hanging() {
    let c = client().await;
    let (outcome, _) = bounded(driver::drive(
        &c,
        Forgetful::default,
        DriveOptions::default(),
    ))
    .await;
    assert!(matches!(outcome, Err(Ended::Stuck(_))), "{outcome:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_cleanups_run_at_once() {
    let c = client().await;
    let opts = CreateOptions::new(CreateMode::Ephemeral);
    driver::create_parents(&c, "/t/driver-cleanups")
        .await
        .unwrap();
    c.create("/t/driver-cleanups/a", b"", &opts).await.unwrap();
    c.create("/t/driver-cleanups/_c_x-b1", b"", &opts)
        .await
        .unwrap();
    c.create("/t/driver-cleanups/_c_x-b2", b"", &opts)
        .await
        .unwrap();
    let done = driver::spawn_cleanups(
        &c,
        vec![
            Cleanup::Delete("/t/driver-cleanups/a".into()),
            Cleanup::FindAndDelete {
                base: "/t/driver-cleanups".into(),
                prefix: "_c_x-".into(),
            },
        ],
    );
    assert_eq!(bounded(done).await.unwrap(), Ok(()));
    wait_children(&c, "/t/driver-cleanups", 0).await;
}

/// Nothing happens until a driven machine's future is first polled: dropped before that, it
/// has sent nothing, owes nothing and leaves no background task; dropped after, its end goes
/// on in the background.
#[tokio::test]
async fn a_drive_dropped_before_its_first_poll_leaves_nothing_behind() {
    let c = client().await;
    let metrics = tokio::runtime::Handle::current().metrics();
    let before = metrics.num_alive_tasks();
    let unpolled = driver::drive(&c, WaitForWake::default, DriveOptions::default());
    drop(unpolled);
    assert_eq!(
        metrics.num_alive_tasks(),
        before,
        "a background task started"
    );
    // Polled once, then dropped: it watched a node, so its end goes on in the background.
    let mut polled = Box::pin(driver::drive(
        &c,
        WaitForWake::default,
        DriveOptions::default(),
    ));
    assert!(poll_once(&mut polled).await.is_none());
    drop(polled);
    assert_eq!(
        metrics.num_alive_tasks(),
        before + 1,
        "abandoned after its start"
    );
}

/// `f`'s output if one poll ends it.
async fn poll_once<F: std::future::Future + Unpin>(f: &mut F) -> Option<F::Output> {
    std::future::poll_fn(|cx| {
        std::task::Poll::Ready(match std::pin::Pin::new(&mut *f).poll(cx) {
            std::task::Poll::Ready(v) => Some(v),
            std::task::Poll::Pending => None,
        })
    })
    .await
}
