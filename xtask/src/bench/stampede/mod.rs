//! `cargo xtask bench stampede`: S sessions hit at once, by a member cut or a leader kill, and
//! how they come back (issue 51, item 1): the connects each member takes per second, and the
//! time until every session is connected again.
//!
//! Our reconnect rule (zk-client's dialer): after a live connection is lost, the next member
//! in the client's own random order, after a pause taken at random up to 200 ms; a longer
//! pause (doubling, jittered) only after a whole round of members failed. The Java client
//! pauses up to 1 s at random before every reconnect. Both spread the clients of a dead
//! member, ours over a fifth of the time; this bench shows what each costs the members that
//! take them, and how soon every session is back.
//!
//! Three faults, each with one case per `--sessions` value (default 1,000) and library, ours
//! (`zk-worker stampede`, [`ours`]) and the Java client's (`java/JavaStampede.java`: the plain
//! ZooKeeper 3.8 client, whose reconnect Curator's clients ride on), each case on a fresh
//! 3-member ensemble; but for the member killed, with a proxy in front of each member
//! ([`crate::FaultProxy`], counting the connections it accepts; the worker's clients get the
//! three proxies as their connect string):
//!
//! - **member cut**: every session placed on one follower (the other two proxies refuse while
//!   the worker connects, so each client's first round ends there; then they accept again);
//!   the worker notes the moment (`ARMED`), then the follower's proxy closes every connection
//!   and refuses new ones, as a dead member would (without an election: the member stays up);
//! - **member killed, no proxy**: every session started on one follower (the worker's
//!   `<first>`: each client's own random order, beginning there), which is killed (SIGKILL;
//!   no election); the clients reach the members directly, so the harness's proxy (two
//!   threads per connection) is out of the way, and the connects are the members' own count
//!   (`mntr`'s `zk_connection_request_count`, read every 25 ms; the killed member's refused
//!   connects are not counted);
//! - **leader kill**: the sessions spread by their own orders; the worker notes the moment,
//!   then the leader is killed (SIGKILL): every session loses its connection (the followers
//!   drop their clients until they have a new leader), and comes back once the other two
//!   have elected one.
//!
//! After the fault, every few milliseconds, each proxy's accepted connections, until the
//! worker says every session it follows is back (`BACK`).
//!
//! Why it cannot cost exclusion: a reconnect resumes the same session (its id and password)
//! or is refused as expired; whether a session lives, and so whether its ephemeral lock nodes
//! do, is the ensemble's decision, which no client's timing changes. The report
//! (`target/bench/stampede.md`) gives per case the time from the fault until the first,
//! median, 99th and last session was back, the sessions that ended, and per member the
//! connects taken and their peak rate (the most in any 100 ms, per second). Nothing is
//! asserted.

use std::error::Error;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::bench::report::{self, Table};
use crate::bench::worker::build_worker;
use crate::deps::{self, Need};
use crate::java;
use crate::worker_process::WorkerProcess;
use crate::zk::ZkOptions;
use crate::{Ensemble, FaultProxy};

pub mod lines;
pub mod ours;

use lines::{Back, Ready};

type Result<T> = std::result::Result<T, Box<dyn Error>>;

/// The session counts when `--sessions` is not given.
pub const DEFAULT_SESSIONS: [usize; 1] = [1_000];
/// The ensemble's size.
const MEMBERS: usize = 3;
/// How often each proxy's count is read after the fault (the members' own, five times less
/// often).
const SAMPLE_EVERY: Duration = Duration::from_millis(5);
/// The window of the peak connect rate.
const PEAK_WINDOW: Duration = Duration::from_millis(100);
/// What the bench waits for a worker's line beyond the worker's own budget.
const SLACK: Duration = Duration::from_secs(15);

/// The command line of `bench stampede`.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Session counts (`--sessions 1000`).
    pub sessions: Vec<usize>,
    /// The servers' `forceSync`.
    pub force_sync: bool,
}

/// The Java worker's main class (`java/JavaStampede.java`), compiled with `BenchSupport.java`.
const JAVA_MAIN: &str = "JavaStampede";
/// The jars the Java worker runs on: the plain client, no Curator.
const JAVA_JARS: [&str; 4] = ["zookeeper", "zookeeper-jute", "slf4j-api", "slf4j-nop"];

/// The faults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    /// Every session on one follower, which is cut (connections closed, new ones refused).
    MemberCut,
    /// Every session on one follower, which is killed (SIGKILL; no election), with no proxy
    /// in the way: the clients reach the members directly, and the members' own counters
    /// (`mntr`'s `zk_connection_request_count`) count the connects.
    MemberKill,
    /// The sessions spread over the members by their own orders; the leader is killed
    /// (SIGKILL), and the other two elect one of them.
    LeaderKill,
}

impl Fault {
    const ALL: [Fault; 3] = [Fault::MemberCut, Fault::MemberKill, Fault::LeaderKill];

    fn name(self) -> &'static str {
        match self {
            Fault::MemberCut => "member cut",
            Fault::MemberKill => "member killed, no proxy",
            Fault::LeaderKill => "leader kill",
        }
    }

    /// How the member hit is marked in the page.
    fn mark(self) -> &'static str {
        match self {
            Fault::MemberCut => " (cut)",
            Fault::MemberKill | Fault::LeaderKill => " (killed)",
        }
    }

    /// Whether the clients reach the members through the counting proxies.
    fn proxied(self) -> bool {
        self != Fault::MemberKill
    }
}

/// The libraries compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lib {
    /// zk-client.
    Ours,
    /// The ZooKeeper 3.8 Java client.
    Java,
}

impl Lib {
    const ALL: [Lib; 2] = [Lib::Ours, Lib::Java];

    fn name(self) -> &'static str {
        match self {
            Lib::Ours => "ours",
            Lib::Java => "Java client",
        }
    }
}

/// The workers' programs.
struct Workers {
    /// `zk-worker`, release build.
    rust: PathBuf,
    /// The Java worker's classpath.
    java_classpath: String,
}

impl Workers {
    /// `first`: where every session starts (none: where its own order takes it).
    fn command(
        &self,
        lib: Lib,
        connect: &str,
        n: usize,
        budget: Duration,
        first: Option<SocketAddr>,
    ) -> Command {
        let mut args = vec![
            connect.to_owned(),
            n.to_string(),
            budget.as_millis().to_string(),
        ];
        args.extend(first.map(|a| a.to_string()));
        match lib {
            Lib::Ours => {
                let mut cmd = Command::new(&self.rust);
                cmd.arg("stampede").args(args);
                cmd
            }
            Lib::Java => {
                let mut cmd = Command::new("java");
                cmd.arg("-cp")
                    .arg(&self.java_classpath)
                    .arg(JAVA_MAIN)
                    .args(args);
                cmd
            }
        }
    }
}

/// Compiles the Java worker against the client's jars and returns its classpath.
fn java_classpath() -> Result<String> {
    let jars = java::jars(&JAVA_JARS);
    let sources =
        [JAVA_MAIN, "BenchSupport"].map(|name| java::java_dir().join(format!("{name}.java")));
    let classes = java::compile(JAVA_MAIN, &sources, &jars)?;
    Ok(format!("{}:{jars}", classes.display()))
}

/// One member's connects after the fault.
#[derive(Debug, Clone, PartialEq)]
struct Member {
    /// The ensemble's index.
    index: usize,
    /// The member cut or killed.
    hit: bool,
    /// Connects after the fault: as its proxy accepted them (refused ones included), or as
    /// the member counted them.
    connects: u64,
    /// The most in any [`PEAK_WINDOW`], per second.
    peak_per_s: f64,
    /// The sessions on it at the end.
    sessions: u64,
}

/// One case's figures.
#[derive(Debug, Clone, PartialEq)]
struct Case {
    fault: Fault,
    sessions: usize,
    lib: Lib,
    back: Back,
    members: Vec<Member>,
}

/// Each sample: the time since the cut, and each member's count of connects then.
type Samples = Vec<(Duration, Vec<u64>)>;

/// Where the connects are counted.
enum Counter {
    /// The proxies' accepted connections (refused ones included).
    Proxies(Vec<FaultProxy>),
    /// The members' own `zk_connection_request_count` (a member that cannot answer reads
    /// 0: a killed member's refused connects are not counted).
    Members(Vec<SocketAddr>),
}

impl Counter {
    /// What the clients connect to, member by member.
    fn addrs(&self) -> Vec<SocketAddr> {
        match self {
            Counter::Proxies(proxies) => proxies.iter().map(FaultProxy::addr).collect(),
            Counter::Members(addrs) => addrs.clone(),
        }
    }

    fn counts(&self) -> Vec<u64> {
        match self {
            Counter::Proxies(proxies) => proxies.iter().map(|p| p.accepted() as u64).collect(),
            Counter::Members(addrs) => addrs
                .iter()
                .map(|&addr| {
                    crate::four_letter(addr, "mntr", Duration::from_secs(1))
                        .ok()
                        .and_then(|mntr| {
                            crate::zk::parse_mntr(&mntr)
                                .get("zk_connection_request_count")
                                .and_then(|n| n.parse().ok())
                        })
                        .unwrap_or(0)
                })
                .collect(),
        }
    }

    /// How often the counts are read after the fault (a `mntr` is a connection of its own).
    fn every(&self) -> Duration {
        match self {
            Counter::Proxies(_) => SAMPLE_EVERY,
            Counter::Members(_) => SAMPLE_EVERY * 5,
        }
    }
}

/// Member `i`'s connects after `before` and their peak rate over [`PEAK_WINDOW`].
fn connects(samples: &Samples, before: &[u64], i: usize) -> (u64, f64) {
    let count = |s: &(Duration, Vec<u64>)| s.1.get(i).copied().unwrap_or(0);
    let base = before.get(i).copied().unwrap_or(0);
    let total = samples.last().map_or(0, |s| count(s).saturating_sub(base));
    let mut peak = 0;
    for (k, now) in samples.iter().enumerate() {
        // The latest count at or before the window's start (the baseline before the first).
        let from = samples
            .iter()
            .take(k)
            .rev()
            .find(|s| s.0 + PEAK_WINDOW <= now.0)
            .map_or(base, count);
        peak = peak.max(count(now).saturating_sub(from));
    }
    (total, peak as f64 / PEAK_WINDOW.as_secs_f64())
}

/// Runs one case on a fresh ensemble.
fn case(workers: &Workers, fault: Fault, lib: Lib, n: usize, force_sync: bool) -> Result<Case> {
    let mut zk = Ensemble::start(MEMBERS, ZkOptions::default().force_sync(force_sync))?;
    let leader = zk.wait_leader(Duration::from_secs(30))?;
    // The member cut or killed alone: a follower; the leader killed: the leader.
    let target = match fault {
        Fault::MemberCut | Fault::MemberKill => (0..MEMBERS).find(|&i| i != leader).unwrap_or(0),
        Fault::LeaderKill => leader,
    };
    let counter = if fault.proxied() {
        Counter::Proxies(
            (0..MEMBERS)
                .map(|i| FaultProxy::start(zk.client_addr(i)))
                .collect::<std::io::Result<Vec<_>>>()?,
        )
    } else {
        Counter::Members((0..MEMBERS).map(|i| zk.client_addr(i)).collect())
    };
    let addrs = counter.addrs();
    let hit = *addrs.get(target).ok_or("no address for the member hit")?;
    // Every session on the member to cut: the other proxies refuse while they connect; with
    // no proxy, each client starts there (the worker's <first>).
    let mut first = None;
    match &counter {
        Counter::Proxies(proxies) if fault == Fault::MemberCut => {
            for (i, p) in proxies.iter().enumerate() {
                p.refuse(i != target);
            }
        }
        Counter::Members(_) => first = Some(hit),
        Counter::Proxies(_) => {}
    }
    let connect = addrs
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let budget = Duration::from_secs(60)
        + Duration::from_millis(60).saturating_mul(u32::try_from(n).unwrap_or(u32::MAX));
    let cmd = workers.command(lib, &connect, n, budget, first);
    let mut worker = WorkerProcess::spawn(format!("stampede {n} {}", lib.name()), cmd)?;
    let by = || Instant::now() + budget + SLACK;
    let ready = Ready::parse(&worker.expect("READY ", by())?)?;
    let placed = lines::at(&ready.on, hit);
    if fault != Fault::LeaderKill && placed != n as u64 {
        return Err(format!(
            "{placed} of {n} sessions on member {target}: {}",
            ready.line()
        )
        .into());
    }
    if let Counter::Proxies(proxies) = &counter {
        for p in proxies {
            p.refuse(false);
        }
    }

    let before = counter.counts();
    // Every session loses its connection when the leader dies (the followers drop their
    // clients until a new leader is elected); only the hit member's otherwise.
    match fault {
        Fault::MemberCut | Fault::MemberKill => worker.send(&format!("CUT {hit}"))?,
        Fault::LeaderKill => worker.send("CUT all")?,
    }
    worker.expect("ARMED", by())?;
    let at = Instant::now();
    match (&counter, fault) {
        (Counter::Proxies(proxies), Fault::MemberCut) => {
            if let Some(p) = proxies.get(target) {
                p.refuse(true);
                p.cut();
            }
        }
        _ => zk.kill(target)?,
    }
    let done = AtomicBool::new(false);
    let (samples, back) = std::thread::scope(|s| {
        let sampler = s.spawn(|| {
            let mut samples: Samples = Vec::new();
            loop {
                let last = done.load(Ordering::Acquire);
                samples.push((at.elapsed(), counter.counts()));
                if last {
                    return samples;
                }
                std::thread::sleep(counter.every());
            }
        });
        let back = worker.expect("BACK ", by());
        done.store(true, Ordering::Release);
        (sampler.join(), back)
    });
    let samples = samples.map_err(|_| "the sampler panicked")?;
    let back = Back::parse(&back?)?;
    let members = (0..MEMBERS)
        .map(|i| {
            let (connects, peak_per_s) = connects(&samples, &before, i);
            let sessions = addrs.get(i).map_or(0, |&a| lines::at(&back.on, a));
            Member {
                index: i,
                hit: i == target,
                connects,
                peak_per_s,
                sessions,
            }
        })
        .collect();
    worker.send("CLOSE")?;
    worker.finish(by())?;
    drop(counter);
    drop(zk);
    Ok(Case {
        fault,
        sessions: n,
        lib,
        back,
        members,
    })
}

fn ms(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1e3)
}

fn page(cases: &[Case], opts: &Options) -> String {
    let mut times = Table::new(
        &[
            "fault",
            "sessions hit",
            "library",
            "back",
            "ended",
            "first back",
            "median",
            "p99",
            "all back",
        ],
        3,
    );
    let mut members = Table::new(
        &[
            "fault",
            "sessions",
            "library",
            "member",
            "connects taken",
            "peak connects/s",
            "sessions at the end",
        ],
        4,
    );
    for c in cases {
        times.push(vec![
            c.fault.name().to_owned(),
            c.back.tracked.to_string(),
            c.lib.name().to_owned(),
            c.back.back.to_string(),
            c.back.ended.to_string(),
            ms(c.back.first),
            ms(c.back.p50),
            ms(c.back.p99),
            if c.back.back == c.back.tracked {
                ms(c.back.last)
            } else {
                format!("not all ({} of {})", c.back.back, c.back.tracked)
            },
        ]);
        for m in &c.members {
            members.push(vec![
                c.fault.name().to_owned(),
                c.sessions.to_string(),
                c.lib.name().to_owned(),
                format!("{}{}", m.index, if m.hit { c.fault.mark() } else { "" }),
                m.connects.to_string(),
                format!("{:.0}", m.peak_per_s),
                m.sessions.to_string(),
            ]);
        }
    }
    let sessions: Vec<String> = opts.sessions.iter().map(ToString::to_string).collect();
    let mut out = String::new();
    let _ = writeln!(out, "# bench stampede\n");
    let _ = writeln!(
        out,
        "`cargo xtask bench stampede --sessions {}` (forceSync {}): a fresh 3-member ensemble per \
         case, the sessions of one process (ours, or the ZooKeeper 3.8 Java client's, on which \
         Curator's clients reconnect). Member cut: every session on one follower, then that \
         member cut (its connections closed, new ones refused, as a dead member's; no \
         election). Member killed, no proxy: every session started on one follower, which is \
         killed (SIGKILL; no election), the clients reaching the members directly. Leader \
         kill: the sessions spread by their own orders, then the leader killed (SIGKILL), \
         which drops every session's connection until the other two elect. Times from the \
         fault to each session's next connection (the same session resumed); connects as \
         each member's proxy accepted them after the fault (refused ones included), or with \
         no proxy as the member counted them (`zk_connection_request_count`, read every 25 \
         ms; a killed member's not counted), the peak the most in any {} ms, per second.\n",
        sessions.join(","),
        if opts.force_sync { "on" } else { "off" },
        PEAK_WINDOW.as_millis()
    );
    out.push_str(&times.markdown());
    out.push('\n');
    out.push_str(&members.markdown());
    out
}

/// Runs every case and writes the report.
///
/// # Errors
/// A setup that fails, or a worker's failure.
pub fn run(opts: &Options) -> Result<()> {
    deps::ensure(&[Need::Java, Need::ZooKeeper])?;
    let workers = Workers {
        rust: build_worker("bench stampede")?,
        java_classpath: java_classpath()?,
    };
    let mut cases = Vec::new();
    for fault in Fault::ALL {
        for &n in &opts.sessions {
            for lib in Lib::ALL {
                eprintln!(
                    "bench stampede: {}, {n} sessions of {}, on a fresh 3-member ensemble",
                    fault.name(),
                    lib.name()
                );
                cases.push(case(&workers, fault, lib, n, opts.force_sync)?);
            }
        }
    }
    let body = page(&cases, opts);
    let path = report::write_page(&report::dir(), "stampede", &body, &[])?;
    println!("{body}");
    eprintln!("bench stampede: report in {}", path.display());
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn connects_and_their_peak_rate_come_from_the_counts() {
        let ms = Duration::from_millis;
        // Member 1: 10 connects in the first 50 ms, 20 more by 150 ms; member 0 none.
        let samples: Samples = vec![
            (ms(0), vec![5, 100]),
            (ms(50), vec![5, 110]),
            (ms(100), vec![5, 110]),
            (ms(150), vec![5, 130]),
        ];
        let before = [5, 100];
        assert_eq!(connects(&samples, &before, 0), (0, 0.0));
        let (total, peak) = connects(&samples, &before, 1);
        assert_eq!(total, 30);
        // The most in any 100 ms: from 50 ms (110) to 150 ms (130), 20, so 200 per second.
        assert!((peak - 200.0).abs() < 1e-9, "{peak}");
    }

    #[test]
    fn the_page_gives_the_times_and_each_member() {
        let ms = Duration::from_millis;
        let back = Back::of(2, 0, vec![ms(12), ms(40)], Vec::new());
        let case = Case {
            fault: Fault::MemberCut,
            sessions: 2,
            lib: Lib::Java,
            back,
            members: vec![Member {
                index: 1,
                hit: true,
                connects: 0,
                peak_per_s: 0.0,
                sessions: 0,
            }],
        };
        let opts = Options {
            sessions: vec![2],
            force_sync: true,
        };
        let page = page(&[case], &opts);
        assert!(
            page.contains(
                "| member cut | 2 | Java client | 2 | 0 | 12 ms | 12 ms | 40 ms | 40 ms |"
            ),
            "{page}"
        );
        assert!(
            page.contains("| member cut | 2 | Java client | 1 (cut) | 0 | 0 | 0 |"),
            "{page}"
        );
    }
}
