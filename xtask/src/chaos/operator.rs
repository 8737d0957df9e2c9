//! The nemesis's operator (`delete-held`): a session of its own, not one of the workers',
//! that deletes lock nodes while they are held, as an operator's `deleteall` or another
//! client's bug would. Its sessions are recorded ([`Operator::sessions`]) so that the log
//! judge knows its deletes for the operator's ([`super::judge::Config::operators`]).
//!
//! Which nodes, from the servers' tree at fault time: the lock directories' children and the
//! live marks (one multi-read each), then the nodes a mark names that the recipe's rule
//! grants ([`choose`], pure, with the log judge's own rules), a few of each library's. Each
//! is deleted in one `multi` with a check of the mark that names it: the delete happens only
//! while that hold's mark lives, so every delete the fault makes ends a hold the servers'
//! log shows. The semaphores' inner locks are left alone (no mark names their nodes; an
//! acquirer holds them only to make its lease). Any member of a multi-lock may go.
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};

use zk_client::{Client, Op, ReadOp, ReadResult};

use super::judge::marks::{self, Mark};
use super::judge::{LockDir, rules};
use super::layout;
use crate::recipe::Recipe;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// How many held nodes of each library one fault deletes.
pub const PER_LIBRARY: usize = 2;

/// How long one fault keeps looking for held nodes to delete.
const BUDGET: Duration = Duration::from_millis(1_500);

/// A held node to delete, and the mark whose life guards the delete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The mark's path (the delete happens only while it lives).
    pub mark: String,
    /// The lock node's path.
    pub node: String,
    /// The holder's library, as its mark says.
    pub lib: String,
}

/// The held nodes to delete: nodes that a live mark names and that the recipe's rule
/// (`locks`' kinds) grants among `children` (each directory's live children's names), at most
/// `want[lib]` of each library, one per mark, spread over the directories first; which ones
/// the `pick` turns.
pub fn choose(
    locks: &[LockDir],
    children: &HashMap<String, Vec<String>>,
    live_marks: &[(String, Mark)],
    want: &BTreeMap<String, usize>,
    pick: usize,
) -> Vec<Target> {
    let mut candidates: Vec<Target> = Vec::new();
    for (mark, m) in live_marks {
        for held in &m.holds {
            let (dir, name) = super::judge::tree::split(&held.node);
            let Some(l) = locks.iter().find(|l| l.dir == dir) else {
                continue;
            };
            let Some(listed) = children.get(dir) else {
                continue;
            };
            let live = listed.iter().any(|c| c == name);
            if live && rules::granted(l.kind, listed.iter().map(String::as_str), name) {
                candidates.push(Target {
                    mark: mark.clone(),
                    node: held.node.clone(),
                    lib: m.lib.clone(),
                });
            }
        }
    }
    if candidates.is_empty() {
        return candidates;
    }
    let turn = pick % candidates.len();
    candidates.rotate_left(turn);
    let mut left = want.clone();
    let mut chosen: Vec<Target> = Vec::new();
    // First one per directory, then any.
    for spread in [true, false] {
        for c in &candidates {
            let room = left.get(&c.lib).copied().unwrap_or(0);
            let dir = super::judge::tree::split(&c.node).0;
            let taken = chosen.iter().any(|t| t.mark == c.mark || t.node == c.node);
            let dir_used = chosen
                .iter()
                .any(|t| super::judge::tree::split(&t.node).0 == dir);
            if room == 0 || taken || (spread && dir_used) {
                continue;
            }
            if let Some(n) = left.get_mut(&c.lib) {
                *n -= 1;
            }
            chosen.push(c.clone());
        }
    }
    chosen
}

/// The operator: its runtime, its session (opened on first use, again if it ends), every
/// session it has had.
pub struct Operator {
    rt: tokio::runtime::Runtime,
    connect: String,
    locks: Vec<LockDir>,
    client: Option<Client>,
    sessions: Vec<i64>,
}

impl Operator {
    /// An operator over `recipes`' lock directories, reaching the ensemble at `connect`
    /// directly (not through the clients' proxies).
    ///
    /// # Errors
    /// The runtime cannot be built.
    pub fn new(connect: &str, recipes: &[Recipe], leases: u32) -> Result<Operator> {
        let locks = super::judge::Config::chaos(recipes, leases).locks;
        let inner: BTreeSet<String> = locks.iter().filter_map(|l| l.inner.clone()).collect();
        Ok(Operator {
            rt: crate::worker_process::side_runtime()?,
            connect: connect.to_owned(),
            locks: locks
                .into_iter()
                .filter(|l| !inner.contains(&l.dir))
                .collect(),
            client: None,
            sessions: Vec::new(),
        })
    }

    /// Every session the operator has opened, in order.
    pub fn sessions(&self) -> &[i64] {
        &self.sessions
    }

    /// Deletes held nodes, up to [`PER_LIBRARY`] of each library seen holding, looking for
    /// them for up to `BUDGET` (1.5 s): what it deleted, as `lib node` items.
    ///
    /// # Errors
    /// No session can be opened, or nothing held was found to delete.
    pub fn delete_held(&mut self, pick: usize) -> Result<String> {
        let client = self.session()?;
        let locks = self.locks.clone();
        let deleted = self.rt.block_on(async move {
            let until = Instant::now() + BUDGET;
            let mut deleted: Vec<Target> = Vec::new();
            let mut seen: BTreeSet<String> = BTreeSet::new();
            let mut round = 0;
            while Instant::now() < until {
                let (children, live) = match look(&client, &locks).await {
                    Ok(tree) => tree,
                    Err(_) => {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                seen.extend(live.iter().map(|(_, m)| m.lib.clone()));
                let want: BTreeMap<String, usize> = seen
                    .iter()
                    .map(|lib| {
                        let done = deleted.iter().filter(|t| &t.lib == lib).count();
                        (lib.clone(), PER_LIBRARY.saturating_sub(done))
                    })
                    .collect();
                if !seen.is_empty() && want.values().all(|&n| n == 0) {
                    break;
                }
                let targets = choose(&locks, &children, &live, &want, pick + round);
                round += 1;
                let mut tasks = tokio::task::JoinSet::new();
                for t in targets {
                    let client = client.clone();
                    tasks.spawn(async move {
                        let ops = [
                            Op::check(t.mark.clone(), None),
                            Op::delete(t.node.clone(), None),
                        ];
                        client.multi(&ops).await.ok().map(|_| t)
                    });
                }
                while let Some(done) = tasks.join_next().await {
                    if let Ok(Some(t)) = done {
                        deleted.push(t);
                    }
                }
            }
            deleted
        });
        if deleted.is_empty() {
            return Err("no held node found to delete".into());
        }
        let items: Vec<String> = deleted
            .iter()
            .map(|t| {
                // `rust mutex 0000000042`: the library, the directory, the sequence.
                let (dir, name) = super::judge::tree::split(&t.node);
                let seq = name.get(name.len().saturating_sub(10)..).unwrap_or(name);
                format!("{} {} {seq}", t.lib, dir.trim_start_matches("/chaos/"))
            })
            .collect();
        Ok(format!("deleted {}", items.join(", ")))
    }

    /// The operator's session: the one it has, or a new one (recorded) if it has none or it
    /// ended.
    fn session(&mut self) -> Result<Client> {
        if let Some(c) = self.client.as_ref().filter(|c| !c.state().is_terminal()) {
            return Ok(c.clone());
        }
        let connect = self.connect.clone();
        let client = self.rt.block_on(async move {
            Client::builder()
                .hosts(&connect)
                .session_timeout(layout::STORE_SESSION_TIMEOUT)
                .connect()
                .await
        })?;
        self.sessions.push(client.session_id());
        self.client = Some(client.clone());
        Ok(client)
    }

    /// Closes the session.
    pub fn close(&mut self) {
        if let Some(c) = self.client.take() {
            let _ = self.rt.block_on(c.close());
        }
    }
}

/// The lock directories' children and the live marks, read from the server the session is
/// connected to.
async fn look(
    client: &Client,
    locks: &[LockDir],
) -> std::result::Result<(HashMap<String, Vec<String>>, Vec<(String, Mark)>), zk_client::Error> {
    let mut reads = vec![ReadOp::GetChildren(marks::MARKS.to_owned())];
    reads.extend(locks.iter().map(|l| ReadOp::GetChildren(l.dir.clone())));
    let results = client.multi_read(&reads).await?;
    let mut results = results.into_iter();
    let names = match results.next() {
        Some(Ok(ReadResult::Children(names))) => names,
        _ => Vec::new(),
    };
    let mut children = HashMap::new();
    for (l, r) in locks.iter().zip(results) {
        if let Ok(ReadResult::Children(c)) = r {
            children.insert(l.dir.clone(), c);
        }
    }
    let paths: Vec<String> = names
        .iter()
        .filter(|n| !n.starts_with("session-"))
        .map(|n| format!("{}/{n}", marks::MARKS))
        .collect();
    let reads: Vec<ReadOp> = paths.iter().cloned().map(ReadOp::GetData).collect();
    let data = client.multi_read(&reads).await?;
    let live = paths
        .into_iter()
        .zip(data)
        .filter_map(|(path, r)| match r {
            Ok(ReadResult::Data(d, _)) => marks::parse_mark(&d).map(|m| (path, m)),
            _ => None,
        })
        .collect();
    Ok((children, live))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::chaos::judge::marks::Held;

    fn mark(lib: &str, nodes: &[&str]) -> Mark {
        Mark {
            lib: lib.into(),
            lock: "/chaos".into(),
            mode: marks::Mode::Exclusive,
            holds: nodes
                .iter()
                .map(|n| Held {
                    node: (*n).into(),
                    token: 1,
                })
                .collect(),
        }
    }

    #[test]
    fn only_granted_marked_nodes_are_chosen_a_few_of_each_library() {
        let locks = super::super::judge::Config::chaos(&Recipe::ALL, 2).locks;
        let inner: BTreeSet<String> = locks.iter().filter_map(|l| l.inner.clone()).collect();
        let locks: Vec<LockDir> = locks
            .into_iter()
            .filter(|l| !inner.contains(&l.dir))
            .collect();
        let children: HashMap<String, Vec<String>> = [
            (
                "/chaos/mutex",
                vec!["_c_a-lock-0000000002", "_c_b-lock-0000000003"],
            ),
            (
                "/chaos/rwlock",
                vec![
                    "_c_c-__READ__0000000001",
                    "_c_d-__READ__0000000002",
                    "_c_e-__WRIT__0000000003",
                ],
            ),
            ("/chaos/semaphore/locks", vec!["_c_f-lock-0000000001"]),
            ("/chaos/multilock/0", vec!["_c_g-lock-0000000001"]),
        ]
        .into_iter()
        .map(|(d, c)| (d.to_owned(), c.into_iter().map(str::to_owned).collect()))
        .collect();
        let live = vec![
            (
                "/m/1".to_owned(),
                mark("rust", &["/chaos/mutex/_c_a-lock-0000000002"]),
            ),
            // Marked but not granted (a stale mark): never chosen.
            (
                "/m/2".to_owned(),
                mark("java", &["/chaos/mutex/_c_b-lock-0000000003"]),
            ),
            (
                "/m/3".to_owned(),
                mark("java", &["/chaos/rwlock/_c_c-__READ__0000000001"]),
            ),
            (
                "/m/4".to_owned(),
                mark("rust", &["/chaos/rwlock/_c_d-__READ__0000000002"]),
            ),
            // Granted, but the semaphore's inner lock: left alone.
            (
                "/m/5".to_owned(),
                mark("rust", &["/chaos/semaphore/locks/_c_f-lock-0000000001"]),
            ),
            // Named, but gone from the listing.
            (
                "/m/6".to_owned(),
                mark("java", &["/chaos/multilock/1/_c_h-lock-0000000001"]),
            ),
            (
                "/m/7".to_owned(),
                mark("rust", &["/chaos/multilock/0/_c_g-lock-0000000001"]),
            ),
        ];
        let want: BTreeMap<String, usize> = [("rust".to_owned(), 2), ("java".to_owned(), 2)]
            .into_iter()
            .collect();
        for pick in 0..8 {
            let chosen = choose(&locks, &children, &live, &want, pick);
            let marks: BTreeSet<&str> = chosen.iter().map(|t| t.mark.as_str()).collect();
            let ours = chosen.iter().filter(|t| t.lib == "rust").count();
            // Ours: two of /m/1, /m/4, /m/7; Curator's: /m/3 alone is held.
            assert_eq!((ours, chosen.len()), (2, 3), "pick {pick}: {chosen:?}");
            assert!(marks.contains("/m/3"), "{chosen:?}");
            assert!(
                marks
                    .iter()
                    .all(|m| ["/m/1", "/m/3", "/m/4", "/m/7"].contains(m))
            );
            // Spread: ours, with three directories to choose from, in two of them.
            let dirs: BTreeSet<&str> = chosen
                .iter()
                .filter(|t| t.lib == "rust")
                .map(|t| super::super::judge::tree::split(&t.node).0)
                .collect();
            assert_eq!(dirs.len(), 2, "{chosen:?}");
        }
        // The pick turns which of ours.
        let ours = |pick| -> BTreeSet<String> {
            choose(&locks, &children, &live, &want, pick)
                .into_iter()
                .filter(|t| t.lib == "rust")
                .map(|t| t.mark)
                .collect()
        };
        assert!((0..8).map(ours).collect::<BTreeSet<_>>().len() > 1);
        // Nothing wanted, nothing chosen.
        let none: BTreeMap<String, usize> = BTreeMap::new();
        assert!(choose(&locks, &children, &live, &none, 0).is_empty());
    }

    /// One node per hold: a multi-lock's mark names three members; one of them goes.
    #[test]
    fn a_multilock_hold_loses_one_member() {
        let locks = super::super::judge::Config::chaos(&[Recipe::Multilock], 2).locks;
        let children: HashMap<String, Vec<String>> = (0..3)
            .map(|k| {
                (
                    format!("/chaos/multilock/{k}"),
                    vec![format!("_c_x-lock-000000000{k}")],
                )
            })
            .collect();
        let nodes: Vec<String> = (0..3)
            .map(|k| format!("/chaos/multilock/{k}/_c_x-lock-000000000{k}"))
            .collect();
        let refs: Vec<&str> = nodes.iter().map(String::as_str).collect();
        let live = vec![("/m/1".to_owned(), mark("rust", &refs))];
        let want: BTreeMap<String, usize> = [("rust".to_owned(), 2)].into_iter().collect();
        assert_eq!(choose(&locks, &children, &live, &want, 1).len(), 1);
    }
}
