//! Every recipe under cancellation: `cargo xtask stress <recipe>`'s cancelling tasks, for a
//! few seconds each, on a test server. Lives here because it shares xtask's stress loop.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use xtask::interop::check::{Rule, check};
use xtask::interop::holds::Clock;
use xtask::recipe::{LEASES, Recipe};
use xtask::stress::{Target, cancelling_tasks, count_nodes, directories, nodes_per_attempt};
use zk_client::Client;

async fn client(hosts: &str) -> Client {
    Client::builder()
        .hosts(hosts)
        .session_timeout(Duration::from_secs(10))
        .connect()
        .await
        .unwrap()
}

/// Tasks that cancel their acquires at random points, in several sessions: never two holders
/// (the recipe's rule, checked on every hold as the interop runs check them), the lock still
/// taken by every session once the storm is over, the lock
/// directories stay bounded by the number of tasks (each cancel costs O(1) requests, never a
/// listing of the queue; the first mutex driver listed the whole directory per cancel and
/// grew it past 7,000 nodes) and nothing is left at the end, while every session is still
/// open (so no ephemeral node goes away by itself).
async fn cancellation_stays_bounded_and_leaves_nothing(recipe: Recipe) {
    const SESSIONS: usize = 4;
    const TASKS: usize = 8;
    let zk = zk_testkit::ZkServer::start().unwrap();
    let hosts = zk.connect_string();
    let run_for = Duration::from_secs(3);
    let path = format!("/t/stress-{}", recipe.name());
    let dirs = directories(recipe, &path);
    let observer = client(&hosts).await;
    let clock = Clock::start();
    let end = tokio::time::Instant::now() + run_for;
    let mut sessions = Vec::new();
    let mut targets = Vec::new();
    for s in 0..SESSIONS {
        let target = Target::new(recipe, client(&hosts).await, &path).unwrap();
        targets.push(target.clone());
        // The same cancelling tasks as `cargo xtask stress`.
        sessions.push(tokio::spawn(async move {
            let who = format!("rust-{s}");
            cancelling_tasks(&target, TASKS, run_for, s as u64, (&who, clock)).await
        }));
    }
    let mut peak = 0;
    while tokio::time::Instant::now() < end {
        peak = peak.max(count_nodes(&observer, &dirs).await.unwrap());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let bound = Duration::from_secs(60);
    let (mut granted, mut cancelled, mut holds) = (0, 0, Vec::new());
    for s in sessions {
        let outcome = tokio::time::timeout(bound, s).await.unwrap().unwrap();
        granted += outcome.granted;
        cancelled += outcome.cancelled;
        holds.extend(outcome.holds);
    }
    // After the storm the lock still works: every session takes it once more, untimed and
    // all at once (how many of the storm's own short acquires got through depends on the
    // machine's speed; these do not), and these holds are checked with the others.
    let mut after = Vec::new();
    for (s, target) in targets.iter().enumerate() {
        let target = target.clone();
        after.push(tokio::spawn(async move {
            let taken = target.take(s as u64).await.unwrap();
            let from = clock.now();
            tokio::time::sleep(Duration::from_millis(1)).await;
            let to = clock.now();
            let held: Vec<_> = taken
                .things
                .iter()
                .map(|(on, mode)| xtask::interop::holds::Hold {
                    who: format!("rust-{s}.after"),
                    n: 1,
                    on: on.clone(),
                    mode: *mode,
                    from,
                    to,
                    node: None,
                    token: None,
                })
                .collect();
            taken.held.release().await;
            held
        }));
    }
    for a in after {
        holds.extend(tokio::time::timeout(bound, a).await.unwrap().unwrap());
    }
    let rule = Rule::of(recipe, LEASES);
    let verdict = check(rule, &holds).unwrap();
    assert_eq!(
        verdict.violations, 0,
        "{rule:?} broken: {:#?}",
        verdict.conflicts
    );
    // Drained: every directory empty, each waited for with a child watch.
    tokio::time::timeout(bound, async {
        for dir in &dirs {
            loop {
                let (kids, watcher) = match observer.get_children_and_watch(dir).await {
                    Ok(r) => r,
                    Err(zk_client::Error::NoNode) => break,
                    Err(e) => panic!("{e}"),
                };
                if kids.is_empty() {
                    break;
                }
                watcher.await;
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{} nodes left", recipe.name()));
    assert_eq!(count_nodes(&observer, &dirs).await.unwrap(), 0);
    let most = 2 * SESSIONS * TASKS * nodes_per_attempt(recipe);
    eprintln!(
        "FIGURE stress {}: {granted} granted, {cancelled} cancelled, peak {peak} nodes (bound {most}), \
         {} holds checked (the untimed ones after the storm included), at most {} held at once",
        recipe.name(),
        verdict.holds,
        verdict.peak
    );
    assert!(
        cancelled > 0,
        "nothing was cancelled: the test tests nothing"
    );
    assert!(
        peak <= most,
        "the directories grew to {peak} with {} tasks",
        SESSIONS * TASKS
    );
    drop(targets);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutex() {
    cancellation_stays_bounded_and_leaves_nothing(Recipe::Mutex).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rwlock() {
    cancellation_stays_bounded_and_leaves_nothing(Recipe::Rwlock).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multilock() {
    cancellation_stays_bounded_and_leaves_nothing(Recipe::Multilock).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn semaphore() {
    cancellation_stays_bounded_and_leaves_nothing(Recipe::Semaphore).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn semaphore_mutex() {
    cancellation_stays_bounded_and_leaves_nothing(Recipe::SemaphoreMutex).await;
}
