// The Curator side of the lock benchmarks, `cargo xtask bench <recipe>` (xtask/src/bench/
// locks/), the `bench` mode of CuratorWorker: Apache Curator 5.4's lock recipes, <sessions>
// contenders in this one JVM, each looping acquire -> release on one lock path, in a process
// of its own, printing one RESULT line. Ours is `zk-worker bench ... <workload>` (xtask/src/
// bin/zk-worker.rs), kazoo's is xtask/python/kazoo_lock_bench.py.
//
//   java -cp <classes>:<curator and zookeeper jars> CuratorWorker bench \
//       <connect> <lock path> <sessions> <warmup ms> <measure ms> [workload]
//
// <workload> (default mutex) is the lock each cycle takes: mutex (InterProcessMutex), read or
// write (InterProcessReadWriteLock's), rwmix:<P> (the read lock with probability P per cent,
// else the write lock), multi:<K> (InterProcessMultiLock over <lock path>/0 .. /K-1),
// semmutex (InterProcessSemaphoreMutex), sem:<N> (one lease of an InterProcessSemaphoreV2 of N).
//
// Each contender is a thread with its own CuratorFramework (its own session:
// 10 s session timeout, 5 s connection timeout, ExponentialBackoffRetry(100,
// 5): CuratorWorker.sessions, as for CuratorInterop) and its own lock on <lock path>.
// Once every client is connected, the contenders loop
//
//   acquire() -> release()
//
// one cycle's latency measured from before acquire() to after release()
// returns (release() awaits its delete). They run <warmup ms> unmeasured (JIT
// compilation), then <measure ms> measured: a cycle counts when it completes
// inside the window. At the window's start and end this prints WINDOW_START
// and WINDOW_END (the bench reads the server's counters then). After the
// window each contender finishes its cycle in progress and stops.
//
// Output (one line, space-separated key=value, as JavaClientBench):
//   RESULT ops=<cycles> measure_ms=<ms> p50_ns=<ns> p99_ns=<ns>
//          cpu_window_ticks=<utime+stime during the window, clock ticks>
//          cpu_total_ticks=<utime+stime at the end> hwm_kib=<VmHWM>
// p50/p99 are nearest-rank percentiles from a fixed-memory histogram with
// the same buckets as xtask's bench::histogram::Histogram (0.2% precision; in BenchSupport.java).
//
// It halts when its stdin reaches end of file (the bench went away), and
// prints "ERROR <message>" and exits 1 on any failure.

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMultiLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreMutex;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Supplier;

public final class CuratorBench {
    private static volatile String failure;

    static void main(String[] args) {
        BenchSupport.main(args, CuratorBench::run);
    }

    private static void run(String[] args) throws Exception {
        if (args.length != 5 && args.length != 6) {
            throw new IllegalArgumentException(
                    "usage: <connect> <lock path> <sessions> <warmup ms> <measure ms> [workload]");
        }
        String workload = args.length == 6 ? args[5] : "mutex";
        BenchSupport.haltAtEndOfStdin();
        String connect = args[0];
        String path = args[1];
        int sessions = Integer.parseInt(args[2]);
        long warmupNs = TimeUnit.MILLISECONDS.toNanos(Long.parseLong(args[3]));
        long measureMs = Long.parseLong(args[4]);

        List<CuratorFramework> clients = CuratorWorker.sessions(connect, sessions);

        long begin = System.nanoTime();
        long start = begin + warmupNs;
        long end = start + TimeUnit.MILLISECONDS.toNanos(measureMs);
        List<Thread> threads = new ArrayList<>();
        List<BenchSupport.Histogram> histograms = new ArrayList<>();
        for (int i = 0; i < sessions; i++) {
            Supplier<InterProcessLock> locks = locks(workload, clients.get(i), path);
            BenchSupport.Histogram rec = new BenchSupport.Histogram();
            histograms.add(rec);
            Thread t = new Thread(() -> cycles(locks, rec, start, end), "contender-" + i);
            t.start();
            threads.add(t);
        }

        BenchSupport.sleepUntil(start);
        long cpu0 = BenchSupport.cpuTicks();
        System.out.println("WINDOW_START");
        System.out.flush();
        BenchSupport.sleepUntil(end);
        long cpu1 = BenchSupport.cpuTicks();
        System.out.println("WINDOW_END");
        System.out.flush();
        for (Thread t : threads) {
            t.join(TimeUnit.SECONDS.toMillis(60));
            if (t.isAlive()) {
                throw new IllegalStateException(t.getName() + " still running 60 s after the window");
            }
        }
        if (failure != null) {
            throw new IllegalStateException(failure);
        }
        for (CuratorFramework client : clients) {
            client.close();
        }
        BenchSupport.Histogram all = new BenchSupport.Histogram();
        for (BenchSupport.Histogram h : histograms) {
            all.merge(h);
        }

        BenchSupport.printResult(all, measureMs, cpu1 - cpu0);
    }

    /** The lock each cycle of a contender takes, for <workload>. */
    private static Supplier<InterProcessLock> locks(String workload, CuratorFramework client,
            String path) {
        if (workload.equals("mutex")) {
            InterProcessMutex mutex = new InterProcessMutex(client, path);
            return () -> mutex;
        }
        if (workload.equals("read") || workload.equals("write") || workload.startsWith("rwmix:")) {
            InterProcessReadWriteLock rw = new InterProcessReadWriteLock(client, path);
            int readPct = workload.equals("read") ? 100
                : workload.equals("write") ? 0
                : Integer.parseInt(workload.substring("rwmix:".length()));
            return () -> ThreadLocalRandom.current().nextInt(100) < readPct
                ? rw.readLock() : rw.writeLock();
        }
        if (workload.equals("semmutex")) {
            InterProcessSemaphoreMutex mutex = new InterProcessSemaphoreMutex(client, path);
            return () -> mutex;
        }
        if (workload.startsWith("sem:")) {
            int n = Integer.parseInt(workload.substring("sem:".length()));
            InterProcessSemaphoreV2 semaphore = new InterProcessSemaphoreV2(client, path, n);
            InterProcessLock oneLease = new InterProcessLock() {
                private Lease lease;

                @Override
                public void acquire() throws Exception {
                    lease = semaphore.acquire();
                }

                @Override
                public boolean acquire(long time, TimeUnit unit) throws Exception {
                    lease = semaphore.acquire(time, unit);
                    return lease != null;
                }

                @Override
                public void release() throws Exception {
                    lease.close();
                    lease = null;
                }

                @Override
                public boolean isAcquiredInThisProcess() {
                    return lease != null;
                }
            };
            return () -> oneLease;
        }
        if (workload.startsWith("multi:")) {
            int k = Integer.parseInt(workload.substring("multi:".length()));
            List<String> members = new ArrayList<>();
            for (int m = 0; m < k; m++) {
                members.add(path + "/" + m);
            }
            InterProcessMultiLock multi = new InterProcessMultiLock(client, members);
            return () -> multi;
        }
        throw new IllegalArgumentException("unknown workload " + workload);
    }

    /** One contender: acquire -> release until the window ends. */
    private static void cycles(Supplier<InterProcessLock> locks, BenchSupport.Histogram rec,
            long start, long end) {
        try {
            long t0 = System.nanoTime();
            while (failure == null) {
                InterProcessLock lock = locks.get();
                lock.acquire();
                lock.release();
                long now = System.nanoTime();
                if (now >= start && now < end) {
                    rec.record(now - t0);
                }
                if (now >= end) {
                    return;
                }
                t0 = now;
            }
        } catch (Exception e) {
            failure = Thread.currentThread().getName() + ": " + e;
        }
    }
}
