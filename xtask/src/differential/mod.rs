//! `cargo xtask differential`: zk-mem-server against a real ZooKeeper 3.8, step by step.
//!
//! Each seed's [`script`] (creates in every mode, deletes, reads with and without watches,
//! `setData`, `getChildren`/`getChildren2`, `getACL`/`setACL`, `sync`, `multi`,
//! `getEphemerals`, `getAllChildrenNumber`, sessions closed and reopened) runs over three
//! sessions on each server: a test-kit ZooKeeper started for the run (each seed under a root
//! of its own) and a fresh in-memory server per seed, both through zk-client over loopback
//! TCP. One step at a time: the step on each side, then a round trip on every session (so
//! the events the step fired have arrived: a server sends a session its notifications before
//! its later replies), then every watch polled. Compared ([`outcome`]): each reply field by
//! field, zxids and session ids mapped one-to-one with their order kept, times checked on each
//! side against its own zxids, and each session's events (sorted within a step). A seed stops
//! at its first difference, which is printed with the steps before it.
//!
//! The real server runs with `znode.container.checkIntervalMs` at an hour and the in-memory
//! one keeps empty containers (`container_manager: None`): the container manager's
//! timer is the one difference listed rather than compared. `--negative-control sequence`
//! starts the in-memory server's sequence numbers one off (`first_cversion: 1`), and
//! `--negative-control skip-acl` checks no ACL (`skip_acl`, as ZooKeeper's
//! `zookeeper.skipACL`): the run must find a difference, and fails if it does not.

pub mod outcome;
pub mod script;

use std::time::{Duration, Instant};

use zk_client::{
    Acl, Client, CreateMode, CreateOptions, Error, Id, OneshotWatcher, OpResult, Perms,
};
use zk_mem_server::{MemServer, ServerConfig};
use zk_testkit::{ZkOptions, ZkServer};

use outcome::{Comparer, Events, MultiReply, Outcome, Reply};
use script::{AclChoice, MultiStep, Op, SESSIONS, Script, Step};

/// What to run.
#[derive(Debug, Clone)]
pub struct Options {
    /// The first seed.
    pub seed: u64,
    /// Seeds to run (`seed`, `seed + 1`, ...).
    pub seeds: u64,
    /// Steps per seed.
    pub steps: usize,
    /// Run a negative control instead (the in-memory server misconfigured).
    pub negative_control: Option<Plant>,
}

/// How a negative control misconfigures the in-memory server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plant {
    /// Sequence numbers start one off (every node's first `cversion` 1).
    Sequence,
    /// No ACL is checked ([`ServerConfig::skip_acl`]).
    SkipAcl,
}

/// What a run found.
#[derive(Debug, Default)]
pub struct Summary {
    /// Seeds run.
    pub seeds: u64,
    /// Steps compared (a seed's steps up to its first difference).
    pub steps: u64,
    /// Seeds that found a difference, with it.
    pub differences: Vec<(u64, String)>,
    /// Wall time.
    pub seconds: f64,
}

/// Every request bounded: a server that stops answering fails the run instead of hanging it.
const BOUND: Duration = Duration::from_secs(30);

/// Runs the differential against a test-kit server it starts (and stops).
pub fn run(opts: &Options) -> Result<Summary, Box<dyn std::error::Error>> {
    let started = Instant::now();
    let zk = ZkServer::start_with(
        ZkOptions::default().system_property("znode.container.checkIntervalMs", "3600000"),
    )?;
    let real = zk.connect_string();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut summary = runtime.block_on(async {
        let mut summary = Summary::default();
        for seed in opts.seed..opts.seed.saturating_add(opts.seeds) {
            let (steps, difference) = run_seed(&real, seed, opts).await?;
            summary.seeds += 1;
            summary.steps += steps;
            if let Some(d) = difference {
                println!("differential seed {seed}: DIFFERENCE after {steps} steps\n{d}");
                summary.differences.push((seed, d));
            }
        }
        Ok::<_, Box<dyn std::error::Error>>(summary)
    })?;
    summary.seconds = started.elapsed().as_secs_f64();
    Ok(summary)
}

/// One server's sessions, and the watches each has left.
struct Side {
    connect: String,
    clients: Vec<Client>,
    watches: Vec<Vec<OneshotWatcher>>,
}

impl Side {
    async fn open(connect: String) -> Result<Self, Error> {
        let mut side = Side {
            connect,
            clients: Vec::new(),
            watches: Vec::new(),
        };
        for _ in 0..SESSIONS {
            let client = side.connect().await?;
            side.clients.push(client);
            side.watches.push(Vec::new());
        }
        Ok(side)
    }

    async fn connect(&self) -> Result<Client, Error> {
        bounded(
            Client::builder()
                .hosts(self.connect.clone())
                .session_timeout(Duration::from_secs(30))
                .connect(),
        )
        .await
    }

    /// Closes session `i` and opens another in its place; gives the new one.
    async fn reopen(&mut self, i: usize) -> Result<&Client, Error> {
        if let Some(w) = self.watches.get_mut(i) {
            w.clear();
        }
        let fresh = self.connect().await?;
        let Some(slot) = self.clients.get_mut(i) else {
            return Err(Error::InvalidArgument("no such session"));
        };
        let old = std::mem::replace(slot, fresh);
        bounded(old.close()).await?;
        Ok(slot)
    }

    async fn close(self) {
        for c in self.clients {
            let _ = bounded(c.close()).await;
        }
    }

    /// A round trip on every session, then every watch polled: the events each session has
    /// received, sorted.
    async fn events(&mut self) -> Result<Events, Error> {
        let mut all = Vec::new();
        for (client, watches) in self.clients.iter().zip(&mut self.watches) {
            bounded(client.exists("/")).await?;
            let mut fired = Vec::new();
            let mut pending = Vec::new();
            for mut w in watches.drain(..) {
                match tokio::time::timeout(Duration::ZERO, &mut w).await {
                    Ok(event) => fired.push(format!("{:?} {}", event.event_type, event.path)),
                    Err(_) => pending.push(w),
                }
            }
            *watches = pending;
            fired.sort();
            all.push(fired);
        }
        Ok(all)
    }

    /// Runs `step`; watches it leaves are kept with its session.
    async fn step(&mut self, step: &Step) -> Result<Outcome, Error> {
        if step.op == Op::Reopen {
            self.reopen(step.session).await?;
            return Ok(Ok(Reply::Done));
        }
        let (Some(client), Some(watches)) = (
            self.clients.get(step.session),
            self.watches.get_mut(step.session),
        ) else {
            return Err(Error::InvalidArgument("no such session"));
        };
        let outcome = bounded_outcome(run_op(client, &step.op, watches)).await?;
        Ok(outcome)
    }
}

/// Runs one op on `client`: the reply, or the error as the client reports it.
async fn run_op(
    client: &Client,
    op: &Op,
    watches: &mut Vec<OneshotWatcher>,
) -> Result<Reply, Error> {
    Ok(match op {
        Op::Create(path, data, mode) => {
            Reply::Created(client.create(path.as_str(), data, &options(*mode)).await?)
        }
        Op::Delete(path, version) => {
            client.delete(path.as_str(), *version).await?;
            Reply::Done
        }
        Op::Exists(path, false) => Reply::Exists(client.exists(path.as_str()).await?),
        Op::Exists(path, true) => {
            let (stat, w) = client.exists_and_watch(path.as_str()).await?;
            watches.push(w);
            Reply::Exists(stat)
        }
        Op::GetData(path, false) => {
            let (data, stat) = client.get_data(path.as_str()).await?;
            Reply::Data(data.to_vec(), stat)
        }
        Op::GetData(path, true) => {
            let (data, stat, w) = client.get_data_and_watch(path.as_str()).await?;
            watches.push(w);
            Reply::Data(data.to_vec(), stat)
        }
        Op::SetData(path, data, version) => {
            Reply::Stat(client.set_data(path.as_str(), data, *version).await?)
        }
        Op::GetChildren {
            path,
            watch,
            with_stat,
        } => {
            let (mut children, stat) = match (watch, with_stat) {
                (true, _) => {
                    let (children, w) = client.get_children_and_watch(path.as_str()).await?;
                    watches.push(w);
                    (children, None)
                }
                (false, true) => {
                    let (children, stat) = client.get_children_with_stat(path.as_str()).await?;
                    (children, Some(stat))
                }
                (false, false) => (client.get_children(path.as_str()).await?, None),
            };
            children.sort();
            Reply::Children(children, stat)
        }
        Op::GetAcl(path) => {
            let (acl, stat) = client.get_acl(path).await?;
            let acl = acl
                .iter()
                .map(|a| format!("{:?} {}:{}", a.perms, a.id.scheme, a.id.id))
                .collect();
            Reply::Acl(acl, stat)
        }
        Op::SetAcl(path, choice, version) => {
            Reply::Stat(client.set_acl(path, acl_of(*choice), *version).await?)
        }
        Op::AddAuth(user) => {
            client
                .add_auth("digest", format!("user{user}:pw").into_bytes())
                .await?;
            Reply::Done
        }
        Op::Sync(path) => {
            client.sync(path.as_str()).await?;
            Reply::Done
        }
        Op::Multi(steps) => {
            let ops: Vec<zk_client::Op> = steps.iter().map(multi_op).collect();
            let results = client.multi(&ops).await?;
            Reply::Multi(
                results
                    .into_iter()
                    .map(|r| match r {
                        OpResult::Created(path, stat) => MultiReply::Created(path, stat),
                        OpResult::Deleted => MultiReply::Deleted,
                        OpResult::DataSet(stat) => MultiReply::DataSet(stat),
                        OpResult::Checked => MultiReply::Checked,
                    })
                    .collect(),
            )
        }
        Op::GetEphemerals(prefix) => {
            let mut names = client.get_ephemerals(prefix).await?;
            names.sort();
            Reply::Names(names)
        }
        Op::AllChildrenNumber(path) => Reply::Count(client.get_all_children_number(path).await?),
        Op::Reopen => Reply::Done,
    })
}

/// The digest ids of `user0:pw` and `user1:pw` (`user:base64(sha1(user:password))`, worked
/// out apart from either server).
const DIGEST_IDS: [&str; 2] = [
    "user0:j3MYF0WublnN7y8kL1YzJ8D4+Jk=",
    "user1:UwFvtt99nn7zVDmU1KK5F5q3Zg4=",
];

fn acl_of(choice: AclChoice) -> Vec<Acl> {
    let all = |scheme: &'static str, id: &'static str| {
        vec![Acl {
            perms: Perms::ALL,
            id: Id {
                scheme: scheme.into(),
                id: id.into(),
            },
        }]
    };
    match choice {
        AclChoice::Open => Acl::open_unsafe(),
        AclChoice::ReadOnly => Acl::read_unsafe(),
        AclChoice::CreatorAll => Acl::creator_all(),
        AclChoice::Digest(user) => all(
            "digest",
            DIGEST_IDS
                .get(usize::from(user))
                .copied()
                .unwrap_or_default(),
        ),
        AclChoice::Ip => all("ip", "127.0.0.1"),
        AclChoice::Invalid => all("world", "someone"),
    }
}

fn options(mode: CreateMode) -> CreateOptions {
    let options = CreateOptions::new(mode);
    if mode.is_ttl() {
        options.ttl(Duration::from_secs(60))
    } else {
        options
    }
}

fn multi_op(step: &MultiStep) -> zk_client::Op {
    match step {
        MultiStep::Create(path, data, mode) => {
            zk_client::Op::create(path.clone(), data.clone(), options(*mode))
        }
        MultiStep::Delete(path, version) => zk_client::Op::delete(path.clone(), *version),
        MultiStep::SetData(path, data, version) => {
            zk_client::Op::set_data(path.clone(), data.clone(), *version)
        }
        MultiStep::Check(path, version) => zk_client::Op::check(path.clone(), *version),
    }
}

async fn bounded<T>(f: impl Future<Output = Result<T, Error>>) -> Result<T, Error> {
    tokio::time::timeout(BOUND, f)
        .await
        .unwrap_or(Err(Error::RequestTimeout))
}

/// Runs an op, bounded: its error becomes the outcome, but a connection that failed (which
/// no step here provokes) ends the run.
async fn bounded_outcome(f: impl Future<Output = Result<Reply, Error>>) -> Result<Outcome, Error> {
    match tokio::time::timeout(BOUND, f).await {
        Err(_) => Err(Error::RequestTimeout),
        Ok(Err(
            e @ (Error::ConnectionLoss
            | Error::NotConnected
            | Error::SessionExpired
            | Error::Closed),
        )) => Err(e),
        Ok(Err(e)) => Ok(Err(format!("{e:?}"))),
        Ok(Ok(reply)) => Ok(Ok(reply)),
    }
}

/// One seed: its steps compared until the first difference. Gives the steps compared and
/// the difference, if any.
async fn run_seed(
    real_connect: &str,
    seed: u64,
    opts: &Options,
) -> Result<(u64, Option<String>), Box<dyn std::error::Error>> {
    let mem_server = MemServer::new(ServerConfig {
        container_manager: None,
        first_cversion: i32::from(opts.negative_control == Some(Plant::Sequence)),
        skip_acl: opts.negative_control == Some(Plant::SkipAcl),
        ..ServerConfig::new(seed)
    });
    let mem_addr = mem_server.listen()?;
    let mut real = Side::open(real_connect.to_owned()).await?;
    let mut mem = Side::open(mem_addr.to_string()).await?;
    let mut comparer = Comparer::new();
    let root = format!("/diff-{seed}");
    let mut script = Script::new(seed, &root);
    let mut history: Vec<String> = Vec::new();
    let mut compared = 0;
    let mut difference = None;

    // The root first (a step like the others), then the script.
    let first = Step {
        session: 0,
        op: Op::Create(root.clone(), Vec::new(), CreateMode::Persistent),
    };
    for i in 0..=opts.steps {
        let step = if i == 0 {
            first.clone()
        } else {
            script.next_step()
        };
        let r = real.step(&step).await?;
        let m = mem.step(&step).await?;
        let (re, me) = (real.events().await?, mem.events().await?);
        compared += 1;
        history.push(format!("{:>4} s{} {:?}", i, step.session, step.op));
        let mut verdict = comparer.outcome(&r, &m);
        if verdict.is_ok() && re != me {
            verdict = Err(format!(
                "events differ\n    real {re:?}\n    in memory {me:?}"
            ));
        }
        for (rc, mc) in real.clients.iter().zip(&mem.clients) {
            if verdict.is_ok() {
                verdict = comparer.session(rc.session_id(), mc.session_id());
            }
        }
        if let Err(d) = verdict {
            let tail: Vec<&String> = history.iter().rev().take(12).rev().collect();
            let mut text = String::new();
            for line in tail {
                text.push_str("  ");
                text.push_str(line);
                text.push('\n');
            }
            text.push_str("  -> ");
            text.push_str(&d);
            difference = Some(text);
            break;
        }
        learn(&mut script, &r);
    }
    real.close().await;
    mem.close().await;
    Ok((compared, difference))
}

/// Teaches the script the names sequential creates got.
fn learn(script: &mut Script, outcome: &Outcome) {
    let created: Vec<&String> = match outcome {
        Ok(Reply::Created(path)) => vec![path],
        Ok(Reply::Multi(results)) => results
            .iter()
            .filter_map(|r| match r {
                MultiReply::Created(path, _) => Some(path),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    for name in created.into_iter().filter(|n| n.contains("/s-")) {
        script.learn(name);
    }
}
