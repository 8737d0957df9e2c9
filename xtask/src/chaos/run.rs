//! A chaos run, from the ensemble's start to the verdict: servers, proxies, registers, the
//! worker processes, the nemesis carried out on its schedule, the look for nodes left, the
//! histories read back and checked.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use zk_client::{Client, CreateMode, CreateOptions};

use super::check::{self, Pause, Report};
use super::history;
use super::judge::{self, Verdict};
use super::layout;
use super::nemesis::{self, Kind, Step};
use super::operator::Operator;
use super::ours::OursConfig;
use crate::interop::holds::Clock;
use crate::recipe::Recipe;
use crate::worker_process::WorkerProcess;
use crate::zk::{Ensemble, Mode, ZkOptions};

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// What a run is asked to do.
#[derive(Debug, Clone)]
pub struct ChaosOptions {
    /// How long the clients run, in seconds.
    pub seconds: u64,
    /// Ensemble members (3 or 5).
    pub members: usize,
    /// The nemesis's seed.
    pub seed: u64,
    /// The kinds of fault.
    pub nemesis: Vec<Kind>,
    /// Our worker processes.
    pub ours_processes: u32,
    /// Curator's worker processes.
    pub curator_processes: u32,
    /// Clients per recipe in each process.
    pub clients: u32,
    /// The semaphore's leases.
    pub leases: u32,
    /// The clients' session timeout.
    pub session_timeout: Duration,
    /// Whether our writes carry the fence (off: a negative control).
    pub fence: bool,
    /// The defect planted in our workers, if any (a negative control).
    pub plant: Option<super::ours::ChaosPlant>,
    /// Our mutex clients of each process share one session and one `CohortMutex`.
    pub cohort: bool,
    /// The recipes.
    pub recipes: Vec<Recipe>,
    /// Where the chart and the kept histories go.
    pub out_dir: PathBuf,
    /// `Some(gap)` with one kind in [`ChaosOptions::nemesis`]: that fault one at a time, with
    /// `gap` of health before and after each ([`nemesis::spaced`], for measuring recovery);
    /// otherwise the seeded schedule, faults in shuffled rounds, some in pairs.
    pub spacing: Option<Duration>,
    /// How long each hold of ours lasts; `None`: a random 0.2-3 ms (the negative control for
    /// the lost signal on deleted nodes holds longer than its bound).
    pub hold: Option<Duration>,
    /// Whether the run passes when the servers lost committed transactions and nothing
    /// judged up to there fails it ([`judge::Config::accept_server_loss`]); otherwise such a
    /// run is inconclusive and fails.
    pub accept_server_loss: bool,
    /// Whether the members' transaction logs are kept beside the histories (`member-N`) when
    /// the run passes too (a failed run keeps them anyway), for a test to judge them again.
    pub keep_logs: bool,
}

/// A fault as carried out: what, on what, from when to when (ns on the shared clock).
#[derive(Debug, Clone)]
pub struct Applied {
    /// The kind.
    pub kind: Kind,
    /// What it hit: `member 2 (leader)`, `rust-1`, `our connections`.
    pub target: String,
    /// When it began.
    pub from: u64,
    /// When it was healed.
    pub to: u64,
    /// A leader kill: when a member first answered `srvr` as the leader again (the ensemble
    /// able to commit: its own recovery, which no client can beat), probed every
    /// [`LEADER_PROBE_EVERY`]; `None` for other faults, or none within [`LEADER_PROBE_FOR`].
    pub leader_back: Option<u64>,
}

/// How often a leader kill's probe asks the members whether one leads again.
pub const LEADER_PROBE_EVERY: Duration = Duration::from_millis(10);

/// How long a leader kill's probe asks before it gives up.
pub const LEADER_PROBE_FOR: Duration = Duration::from_secs(60);

/// Asks every member at `addrs` (`srvr`, a 4-letter word over its own connection) until one
/// answers as the leader, and returns when on `clock`; `None` after [`LEADER_PROBE_FOR`].
/// Run right after the old leader is killed: a follower that has not yet noticed answers as
/// a follower, a member electing does not serve, so only a new leader's answer counts.
fn probe_leader(addrs: &[std::net::SocketAddr], clock: &Clock) -> Option<u64> {
    let give_up = Instant::now() + LEADER_PROBE_FOR;
    while Instant::now() < give_up {
        for addr in addrs {
            let answer = crate::four_letter(*addr, "srvr", Duration::from_millis(200));
            if answer.is_ok_and(|text| text.contains("Mode: leader")) {
                return Some(clock.now());
            }
        }
        std::thread::sleep(LEADER_PROBE_EVERY);
    }
    None
}

/// What a run came to.
#[derive(Debug)]
pub struct Outcome {
    /// The checker's report (from the clients' histories).
    pub report: Report,
    /// The log judge's verdict (from the servers' transaction logs).
    pub judge: Verdict,
    /// The lost signal's timeliness (the log's server-ended holds against the histories).
    pub signal: super::signal::Timeliness,
    /// The faults as carried out.
    pub timeline: Vec<Applied>,
    /// Faults that could not be carried out, with why.
    pub skipped: Vec<String>,
    /// The run's start and end on the shared clock.
    pub span: (u64, u64),
    /// Every history line, for the chart.
    pub events: Vec<history::Event>,
    /// The histories' directory (kept when the run fails).
    pub dir: PathBuf,
}

/// How long the workers may take to start and connect.
const READY_BUDGET: Duration = Duration::from_secs(120);

/// Runs the suite once.
///
/// # Errors
/// A setup that fails (servers, builds, workers), a worker that fails, or histories that
/// cannot be read. The verdict itself is the report's ([`Report::failure`]).
pub fn run(opts: &ChaosOptions, ours_bin: &std::path::Path, classpath: &str) -> Result<Outcome> {
    let clock = Clock::start();
    let dir = opts.out_dir.join(format!("histories-{}", opts.seed));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;

    eprintln!("chaos: starting a {}-member ensemble...", opts.members);
    let zk_opts = ZkOptions {
        tick_time_ms: 500,
        max_session_timeout_ms: Some(
            u32::try_from(layout::STORE_SESSION_TIMEOUT.as_millis()).unwrap_or(u32::MAX),
        ),
        ..ZkOptions::default()
    }
    .partitionable(opts.nemesis.contains(&Kind::Partition))
    // Every txn stays in the logs, which the judge reads from the first zxid (no snapshot
    // taken while running); log files grow by 4 MiB, not 64.
    .config("snapCount", "100000000")
    .system_property("zookeeper.preAllocSize", "4096")
    // A member rejoining is synced by difference (the leader keeps its last 100,000
    // proposals, about 3 minutes of the run, not 500), so its log holds every transaction it
    // learns; by snapshot, it would log none of those the snapshot holds and keep in its old
    // log file a tail the new leader truncated (the judge leaves out what a majority did
    // not log either way).
    .system_property("zookeeper.commitLogCount", "100000")
    .jvm_heap_mb(512);
    let mut zk = Ensemble::start(opts.members, zk_opts)?;
    zk.wait_leader(Duration::from_secs(60))?;
    // Our clients reach each member through a proxy of its own (stalls and cuts).
    // Each side's clients reach each member through a proxy of their own (stalls, cuts,
    // delays): ours the first `members`, Curator's the next.
    let proxies: Vec<crate::FaultProxy> = (0..opts.members * 2)
        .map(|i| crate::FaultProxy::start(zk.client_addr(i % opts.members)))
        .collect::<std::io::Result<_>>()?;
    let connect = |side: &[crate::FaultProxy]| {
        side.iter()
            .map(|p| p.addr().to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    let (ours_side, curators_side) = proxies.split_at(opts.members);
    let ours_connect = connect(ours_side);
    let curators_connect = connect(curators_side);
    let direct = zk.connect_string();
    setup_registers(&direct, &opts.recipes)?;

    let run_for = Duration::from_secs(opts.seconds);
    let mut workers: Vec<(String, WorkerProcess)> = Vec::new();
    // Each side through its client proxies; Curator's unplanted and fenced (the fence flags
    // mean nothing to Curator's side).
    let ours = OursConfig {
        connect: ours_connect,
        process: 0,
        clients: opts.clients,
        run_for,
        dir: dir.clone(),
        leases: opts.leases,
        session_timeout: opts.session_timeout,
        fence: opts.fence,
        plant: opts.plant,
        cohort: opts.cohort,
        hold: opts.hold,
        recipes: opts.recipes.clone(),
    };
    let curators = OursConfig {
        connect: curators_connect,
        fence: true,
        plant: None,
        cohort: false,
        hold: None,
        ..ours.clone()
    };
    for p in 0..opts.ours_processes {
        let cfg = OursConfig {
            process: p,
            ..ours.clone()
        };
        let mut cmd = std::process::Command::new(ours_bin);
        cmd.arg("chaos").args(cfg.args());
        let name = format!("rust-{p}");
        workers.push((name.clone(), WorkerProcess::spawn(name, cmd)?));
    }
    for p in 0..opts.curator_processes {
        let cfg = OursConfig {
            process: p,
            ..curators.clone()
        };
        let mut cmd = std::process::Command::new("java");
        cmd.arg("-cp")
            .arg(classpath)
            .arg(crate::curator::MAIN)
            .arg("chaos")
            .args(cfg.args());
        let name = format!("java-{p}");
        workers.push((name.clone(), WorkerProcess::spawn(name, cmd)?));
    }
    let ready_by = Instant::now() + READY_BUDGET;
    for (_, w) in &mut workers {
        w.expect("READY", ready_by)?;
    }
    let steps = match (opts.spacing, opts.nemesis.as_slice()) {
        (Some(gap), [kind]) => {
            nemesis::spaced(opts.seed, *kind, run_for, opts.session_timeout, gap)
        }
        _ => nemesis::schedule(opts.seed, &opts.nemesis, run_for, opts.session_timeout),
    };
    eprintln!(
        "chaos: {} of our processes and {} of Curator's, {} clients per recipe each, on {} \
         recipes for {} s; {} faults scheduled (seed {})",
        opts.ours_processes,
        opts.curator_processes,
        opts.clients,
        opts.recipes.len(),
        opts.seconds,
        steps.len(),
        opts.seed
    );
    let start = clock.now();
    let started = Instant::now();
    for (_, w) in &mut workers {
        w.go()?;
    }
    // The operator (`delete-held`): a session of its own, straight to the members.
    let mut operator = if opts.nemesis.contains(&Kind::DeleteHeld) {
        Some(Operator::new(&direct, &opts.recipes, opts.leases)?)
    } else {
        None
    };
    let (timeline, skipped) = carry_out(
        &steps,
        started,
        &clock,
        &mut zk,
        &proxies,
        &mut workers,
        &mut operator,
    );
    let end = clock.now();
    let operators = operator
        .as_ref()
        .map_or_else(Vec::new, |o| o.sessions().to_vec());
    if let Some(o) = operator.as_mut() {
        o.close();
    }

    let done_by = started + run_for + opts.session_timeout * 3 + Duration::from_secs(60);
    for (_, w) in &mut workers {
        w.expect("DONE", done_by)?;
    }
    let nodes_left = nodes_left(&direct, &opts.recipes, opts.session_timeout)?;
    for (_, w) in &mut workers {
        let _ = w.send("CLOSE");
    }
    let finish_by = Instant::now() + Duration::from_secs(30);
    for (_, w) in &mut workers {
        w.finish(finish_by)?;
    }
    drop(proxies);
    // The servers' own record, read before the ensemble (and its data dirs) goes.
    let data_dirs: Vec<PathBuf> = (0..opts.members).map(|i| zk.data_dir(i)).collect();
    // A waiter the server let in is held and marked at once but through a fault: the
    // longest stretch of faults (overlapping ones together) and two session timeouts.
    let idle_bound = longest_stretch(&timeline) + opts.session_timeout * 2;
    let judge_cfg = judge::Config {
        idle_bound_ms: Some(i64::try_from(idle_bound.as_millis()).unwrap_or(i64::MAX)),
        operators,
        accept_server_loss: opts.accept_server_loss,
        ..judge::Config::chaos(&opts.recipes, opts.leases)
    };
    let mut verdict = judge::judge_dirs(&data_dirs, &judge_cfg)?;
    // Every hold of ours, as its worker recorded it, accounted for on the record (its mark,
    // or a recorded failure to mark and the lost signal within a session timeout).
    let events = history::read_dir(&dir)?;
    let session_ms = u64::try_from(opts.session_timeout.as_millis()).unwrap_or(u64::MAX);
    verdict.account(&our_holds(&events), session_ms);
    // Every finding, beside the histories (kept when the run fails), and the members' logs
    // when the judge failed (`cargo xtask txnlog <dir>/member-N` reads them).
    std::fs::write(dir.join("judge.txt"), verdict.all_findings())?;
    if verdict.failure().is_some() || opts.keep_logs {
        for (i, data) in data_dirs.iter().enumerate() {
            let to = dir.join(format!("member-{i}"));
            std::fs::create_dir_all(to.join("version-2"))?;
            for file in crate::txnlog::log_files(data)? {
                if let Some(name) = file.file_name() {
                    std::fs::copy(&file, to.join("version-2").join(name))?;
                }
            }
        }
    }
    drop(zk);

    let pauses: Vec<Pause> = timeline
        .iter()
        .filter(|a| matches!(a.kind, Kind::OursPause | Kind::CuratorPause))
        .map(|a| Pause {
            // `rust-1`, or `rust-1 (at a hold)`.
            process: a.target.split(' ').next().unwrap_or_default().to_owned(),
            from: a.from,
            to: a.to,
        })
        .collect();
    let session_ns = u64::try_from(opts.session_timeout.as_nanos()).unwrap_or(u64::MAX);
    let operator_deletes = check::operator_deletes(&verdict.ended_by_delete);
    let ended_by_server: Vec<String> = verdict
        .ended_by_server
        .iter()
        .map(|e| e.name.clone())
        .collect();
    let report = check::check(&check::Input {
        events: &events,
        pauses: &pauses,
        session_timeout: opts.session_timeout,
        leases: opts.leases,
        acquire_deadline: end + 2 * session_ns + 10_000_000_000,
        nodes_left: &nodes_left,
        servers_lost: verdict.lost_stretch.as_ref(),
        operator_deletes: &operator_deletes,
        ended_by_server: &ended_by_server,
    });
    let signal = super::signal::measure(
        &verdict.ended_by_server,
        &verdict.ended_by_delete,
        &events,
        &pauses,
        u64::try_from(opts.session_timeout.as_millis()).unwrap_or(u64::MAX),
        super::signal::DELETED_BOUND_MS,
    );
    Ok(Outcome {
        report,
        signal,
        judge: verdict,
        timeline,
        skipped,
        span: (start, end),
        events,
        dir,
    })
}

/// Every hold of ours in the workers' histories, by the name its mark was to have
/// (`<who>-<n>`; a multi-lock's members are one hold).
fn our_holds(events: &[history::Event]) -> Vec<judge::OurHold> {
    events
        .iter()
        .filter_map(|e| match e {
            history::Event::Hold(h) if h.who.starts_with("rust-") => Some(judge::OurHold {
                name: format!("{}-{}", h.who, h.n),
                label: history::Who::parse(&h.who)
                    .map_or_else(|_| "?".to_owned(), |w| w.recipe.name().to_owned()),
            }),
            _ => None,
        })
        .collect()
}

/// The longest stretch of time some fault lasted, overlapping faults merged.
fn longest_stretch(timeline: &[Applied]) -> Duration {
    let mut spans: Vec<(u64, u64)> = timeline.iter().map(|a| (a.from, a.to)).collect();
    spans.sort_unstable();
    let mut longest = 0;
    let mut current: Option<(u64, u64)> = None;
    for (from, to) in spans {
        current = match current {
            Some((a, b)) if from <= b => Some((a, b.max(to))),
            _ => Some((from, to)),
        };
        if let Some((a, b)) = current {
            longest = longest.max(b.saturating_sub(a));
        }
    }
    Duration::from_nanos(longest)
}

/// Creates the registers, each holding `0`.
fn setup_registers(connect: &str, recipes: &[Recipe]) -> Result<()> {
    let rt = crate::worker_process::side_runtime()?;
    rt.block_on(async {
        let client = Client::builder().hosts(connect).connect().await?;
        let persistent = CreateOptions::new(CreateMode::Persistent);
        let roots = [
            layout::ROOT.to_owned(),
            layout::REGISTERS.to_owned(),
            judge::marks::MARKS.to_owned(),
        ];
        for path in roots {
            match client.create(&path, b"", &persistent).await {
                Ok(_) | Err(zk_client::Error::NodeExists) => {}
                Err(e) => return Err(e.into()),
            }
        }
        for reg in layout::registers(recipes) {
            client
                .create(&layout::register_path(&reg), b"0", &persistent)
                .await?;
        }
        client.close().await?;
        Ok::<_, Box<dyn std::error::Error>>(())
    })
}

/// The nodes under the lock paths, once they stop going away: the drops' deletes and the
/// expired sessions' nodes are given up to a session timeout and 5 s to go.
fn nodes_left(
    connect: &str,
    recipes: &[Recipe],
    session_timeout: Duration,
) -> Result<Vec<check::LeftNode>> {
    let rt = crate::worker_process::side_runtime()?;
    rt.block_on(async {
        let client = Client::builder().hosts(connect).connect().await?;
        let until = tokio::time::Instant::now() + session_timeout + Duration::from_secs(5);
        let left = loop {
            let mut left = Vec::new();
            for dir in layout::node_dirs(recipes) {
                match client.get_children(&dir).await {
                    Ok(children) => {
                        for child in children {
                            let path = format!("{dir}/{child}");
                            // Whose: the owner session and the data (Curator's lock nodes
                            // carry the client's address).
                            let (owner, czxid) = match client.exists(&path).await {
                                Ok(Some(stat)) => (stat.ephemeral_owner, stat.czxid),
                                _ => (0, 0),
                            };
                            left.push(check::LeftNode { path, owner, czxid });
                        }
                    }
                    Err(zk_client::Error::NoNode) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            if left.is_empty() || tokio::time::Instant::now() >= until {
                break left;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        client.close().await?;
        Ok::<_, Box<dyn std::error::Error>>(left)
    })
}

/// Carries out `steps` from `started` (in the order they begin; two may overlap), recording
/// each on the shared clock; every fault is healed before this returns (at the latest when
/// the run ends).
fn carry_out(
    steps: &[Step],
    started: Instant,
    clock: &Clock,
    zk: &mut Ensemble,
    proxies: &[crate::FaultProxy],
    workers: &mut [(String, WorkerProcess)],
    operator: &mut Option<Operator>,
) -> (Vec<Applied>, Vec<String>) {
    /// A fault under way: when to heal it, what it is so far, how.
    struct Active {
        heal_at: Instant,
        applied: Applied,
        heal: Heal,
    }
    // Leader kills' probes, by the fault's start: joined once every fault is healed (a heal
    // does not wait for an election).
    let mut probes: Vec<(u64, std::thread::JoinHandle<Option<u64>>)> = Vec::new();
    let mut timeline = Vec::new();
    let mut skipped = Vec::new();
    let mut active: Vec<Active> = Vec::new();
    // Heals, in their order, every fault due by `until`.
    let heal_due = |active: &mut Vec<Active>,
                    until: Option<Instant>,
                    zk: &mut Ensemble,
                    workers: &mut [(String, WorkerProcess)],
                    timeline: &mut Vec<Applied>| {
        active.sort_by_key(|a| a.heal_at);
        while active
            .first()
            .is_some_and(|a| until.is_none_or(|u| a.heal_at <= u))
        {
            let a = active.remove(0);
            std::thread::sleep(a.heal_at.saturating_duration_since(Instant::now()));
            if let Err(e) = (a.heal)(zk, proxies, workers) {
                eprintln!(
                    "chaos: healing {} on {} failed: {e}",
                    a.applied.kind, a.applied.target
                );
            }
            timeline.push(Applied {
                to: clock.now(),
                ..a.applied
            });
        }
    };
    for step in steps {
        let at = started + step.at;
        heal_due(&mut active, Some(at), zk, workers, &mut timeline);
        std::thread::sleep(at.saturating_duration_since(Instant::now()));
        let heal_at = Instant::now() + step.lasts;
        match apply(step, zk, proxies, workers, operator) {
            Ok((target, heal)) => {
                eprintln!(
                    "chaos: {:>6.1} s  {} on {target} for {:.1} s{}",
                    step.at.as_secs_f64(),
                    step.kind,
                    step.lasts.as_secs_f64(),
                    if active.is_empty() {
                        ""
                    } else {
                        " (with another)"
                    }
                );
                let from = clock.now();
                if step.kind == Kind::LeaderKill {
                    let addrs: Vec<_> = (0..zk.len()).map(|i| zk.client_addr(i)).collect();
                    let clock = *clock;
                    probes.push((
                        from,
                        std::thread::spawn(move || probe_leader(&addrs, &clock)),
                    ));
                }
                active.push(Active {
                    heal_at,
                    applied: Applied {
                        kind: step.kind,
                        target,
                        from,
                        to: 0,
                        leader_back: None,
                    },
                    heal,
                });
            }
            Err(why) => skipped.push(format!(
                "{} at {:.1} s: {why}",
                step.kind,
                step.at.as_secs_f64()
            )),
        }
    }
    heal_due(&mut active, None, zk, workers, &mut timeline);
    for (from, probe) in probes {
        let back = probe.join().ok().flatten();
        if let Some(a) = timeline.iter_mut().find(|a| a.from == from) {
            a.leader_back = back;
        }
    }
    timeline.sort_by_key(|a| a.from);
    (timeline, skipped)
}

/// How long an aimed pause waits for a hold to begin before stopping the process anyway.
const AIM_WITHIN: Duration = Duration::from_secs(3);

/// How a fault is healed.
type Heal = Box<
    dyn FnOnce(&mut Ensemble, &[crate::FaultProxy], &mut [(String, WorkerProcess)]) -> Result<()>,
>;

/// Starts `step`'s fault: what it hit, and how to heal it.
fn apply(
    step: &Step,
    zk: &mut Ensemble,
    proxies: &[crate::FaultProxy],
    workers: &mut [(String, WorkerProcess)],
    operator: &mut Option<Operator>,
) -> Result<(String, Heal)> {
    let pick = usize::try_from(step.pick).unwrap_or(0);
    match step.kind {
        Kind::LeaderKill | Kind::FollowerKill => {
            let candidates: Vec<usize> = (0..zk.len())
                .filter(|&i| {
                    let mode = zk.mode(i).ok().flatten();
                    match step.kind {
                        Kind::LeaderKill => mode.is_some_and(Mode::is_leading),
                        _ => mode == Some(Mode::Follower),
                    }
                })
                .collect();
            let i = *candidates
                .get(pick % candidates.len().max(1))
                .ok_or("no member in that role now")?;
            zk.kill(i)?;
            let heal: Heal = Box::new(move |zk, _, _| {
                zk.start_member(i)?;
                Ok(())
            });
            Ok((format!("member {i}"), heal))
        }
        Kind::MemberPause => {
            let i = pick % zk.len().max(1);
            if !zk.is_running(i) {
                return Err("the member is not running".into());
            }
            zk.pause(i)?;
            let heal: Heal = Box::new(move |zk, _, _| {
                zk.resume(i)?;
                Ok(())
            });
            Ok((format!("member {i}"), heal))
        }
        Kind::Partition => {
            // One member loses its links to the others (a minority of one: when it is a
            // follower, the leader and the other follower keep the quorum; when it is the
            // leader, the other two elect one).
            let i = pick % zk.len().max(1);
            let role = match zk.mode(i).ok().flatten() {
                Some(m) if m.is_leading() => "leader",
                Some(Mode::Follower) => "follower",
                _ => "member",
            };
            zk.isolate(i)?;
            let heal: Heal = Box::new(|zk, _, _| {
                zk.heal()?;
                Ok(())
            });
            Ok((format!("member {i} ({role}) cut off"), heal))
        }
        Kind::LinkCut => {
            // The leader and a follower, or two followers.
            let n = zk.len();
            let a = match (pick % 2, zk.leader()) {
                (0, Some(leader)) => leader,
                _ => pick % n.max(1),
            };
            let b = (a + 1 + (pick / 2) % (n - 1).max(1)) % n.max(1);
            zk.cut_link(a, b)?;
            let heal: Heal = Box::new(|zk, _, _| {
                zk.heal()?;
                Ok(())
            });
            Ok((format!("members {a} and {b} cut from each other"), heal))
        }
        Kind::Split => {
            // A minority: one of three, two of five, from the pick.
            let n = zk.len();
            let first = pick % n.max(1);
            let side: Vec<usize> = (0..(n.saturating_sub(1)) / 2)
                .map(|k| (first + k * (1 + pick / n.max(1) % 2)) % n.max(1))
                .collect();
            zk.split(&side)?;
            let heal: Heal = Box::new(|zk, _, _| {
                zk.heal()?;
                Ok(())
            });
            Ok((format!("members {side:?} split off"), heal))
        }
        Kind::ClientStall | Kind::ClientCut | Kind::ClientLatency => {
            let n = zk.len();
            let curators = workers.iter().any(|(name, _)| name.starts_with("java-"));
            let (range, who) = if pick % 2 == 0 || !curators {
                (0..n, "our connections")
            } else {
                (n..2 * n, "Curator's connections")
            };
            let side = proxies.get(range.clone()).unwrap_or_default();
            let delay = Duration::from_millis(50 + u64::try_from(pick % 751).unwrap_or(0));
            let target = match step.kind {
                Kind::ClientStall => {
                    side.iter().for_each(crate::FaultProxy::stall);
                    who.to_owned()
                }
                Kind::ClientCut => {
                    side.iter().for_each(crate::FaultProxy::cut);
                    who.to_owned()
                }
                _ => {
                    side.iter().for_each(|p| p.delay(delay));
                    format!("{who}, {} ms", delay.as_millis())
                }
            };
            // A cut is over at once (and must not end a stall or delay it overlaps).
            let instant = step.kind == Kind::ClientCut;
            let heal: Heal = Box::new(move |_, proxies, _| {
                for p in proxies.get(range).unwrap_or_default() {
                    if !instant {
                        p.pass();
                    }
                }
                Ok(())
            });
            Ok((target, heal))
        }
        Kind::ClientMemberCut => {
            let n = zk.len();
            let i = pick % n.max(1);
            for p in [proxies.get(i), proxies.get(n + i)].into_iter().flatten() {
                p.refuse(true);
                p.cut();
            }
            let heal: Heal = Box::new(move |_, proxies, _| {
                for p in [proxies.get(i), proxies.get(n + i)].into_iter().flatten() {
                    p.refuse(false);
                }
                Ok(())
            });
            Ok((format!("every client from member {i}"), heal))
        }
        Kind::OursPause | Kind::CuratorPause => {
            let lib = if step.kind == Kind::OursPause {
                "rust-"
            } else {
                "java-"
            };
            let candidates: Vec<usize> = workers
                .iter()
                .enumerate()
                .filter(|(_, (name, _))| name.starts_with(lib))
                .map(|(i, _)| i)
                .collect();
            let &w = candidates
                .get(pick % candidates.len().max(1))
                .ok_or("no such process")?;
            let (name, worker) = workers.get_mut(w).ok_or("no such process")?;
            // Aimed at a hold: the worker's next hold to make its mark says `STOPPING` and
            // waits, before its writes, for the stop and `RESUMED`. If no hold begins in
            // time, stopped where it is.
            worker.send("STOP-AT-HOLD")?;
            let aimed = worker
                .expect("STOPPING", Instant::now() + AIM_WITHIN)
                .is_ok();
            worker.signal("STOP")?;
            let name = if aimed {
                format!("{name} (at a hold)")
            } else {
                name.clone()
            };
            let heal: Heal = Box::new(move |_, _, workers| {
                if let Some((_, worker)) = workers.get_mut(w) {
                    worker.signal("CONT")?;
                    // Not aimed after all: no later hold waits. Then whoever waits goes on.
                    worker.send("STOP-CANCEL")?;
                    worker.send("RESUMED")?;
                }
                Ok(())
            });
            Ok((name, heal))
        }
        Kind::DeleteHeld => {
            let operator = operator
                .as_mut()
                .ok_or("no operator session (delete-held was not asked for)")?;
            let target = operator.delete_held(pick)?;
            let heal: Heal = Box::new(|_, _, _| Ok(()));
            Ok((target, heal))
        }
    }
}
