// The Curator side of `cargo xtask bench queue` (xtask/src/bench/queue/), the `queue` mode of
// CuratorWorker: <waiters> threads on one CuratorFramework (one session), each with its own
// InterProcessMutex on <lock path>, each calling acquire() once and releasing as soon as it
// holds. Ours is `zk-worker queue` (xtask/src/bench/queue/ours.rs), with the same arguments
// and lines (xtask/src/bench/queue/lines.rs).
//
//   java -cp <classes>:<curator and zookeeper jars> CuratorWorker queue \
//       <connect> <lock path> <waiters> <budget ms>
//
// 1. Connected (CuratorWorker.sessions: 10 s session timeout), it reads its resident set
//    (VmRSS), then starts the threads. A thread the JVM cannot start (OutOfMemoryError:
//    "unable to create native thread") stops the starting: it prints
//    "NOTE threads stopped at <k>: <error>" and goes on with the k it has.
// 2. It asks the server for this session's ephemeral nodes under the lock path
//    (ZooKeeper.getEphemerals) until there is one per thread started, then prints
//      QUEUED waiters=<started> nodes=<count> rss_before_kib=<KiB> rss_kib=<KiB>
// 3. The bench, which holds the lock, releases and sends "GO <release ns>". Each thread notes
//    when acquire() returned and when it called release() (CLOCK_REALTIME ns, Instant.now()).
// 4. Once every thread has released: "HOLDS <acquired>:<released> ..." lines, then
//      RESULT drained=<n> drain_ns=<ns> p50_ns=<ns> p99_ns=<ns> rss_before_kib=<KiB> rss_queued_kib=<KiB>
//    (hand-offs from inside this process: each hold's acquire after the release before it
//    here, the first after the bench's).
//
// It fails ("ERROR <message>", exit 1) when the drain is not over within <budget ms>, and
// halts when its stdin ends.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.ZooKeeper;

public final class CuratorQueue {
    /** Holds per HOLDS line, as lines.rs's HOLDS_PER_LINE. */
    private static final int HOLDS_PER_LINE = 200;

    private static volatile String failure;

    static void main(String[] args) {
        BenchSupport.main(args, CuratorQueue::run);
    }

    private static void run(String[] args) throws Exception {
        if (args.length != 4) {
            throw new IllegalArgumentException(
                    "usage: <connect> <lock path> <waiters> <budget ms>");
        }
        String connect = args[0];
        String path = args[1];
        int waiters = Integer.parseInt(args[2]);
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(Long.parseLong(args[3]));
        CompletableFuture<Long> go = readGoFromStdin();

        CuratorFramework client = CuratorWorker.sessions(connect, 1).get(0);
        long rssBefore = rssKib();
        long[] acquired = new long[waiters];
        long[] released = new long[waiters];
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < waiters; i++) {
            final int slot = i;
            InterProcessMutex mutex = new InterProcessMutex(client, path);
            Thread t = new Thread(() -> {
                try {
                    mutex.acquire();
                    acquired[slot] = nowNs();
                    released[slot] = nowNs();
                    mutex.release();
                } catch (Exception e) {
                    failure = Thread.currentThread().getName() + ": " + e;
                }
            }, "waiter-" + i);
            try {
                t.start();
            } catch (OutOfMemoryError e) {
                System.out.println("NOTE threads stopped at " + i + ": " + e.getMessage());
                System.out.flush();
                break;
            }
            threads.add(t);
        }
        int started = threads.size();

        ZooKeeper zk = client.getZookeeperClient().getZooKeeper();
        int seen = 0;
        long pauseMs = 1;
        int nodes;
        while (true) {
            try {
                nodes = zk.getEphemerals(path).size();
            } catch (KeeperException.ConnectionLossException e) {
                // A server busy sending N listings of N names can miss the client's pings:
                // the question is asked again (as ours does).
                if (System.nanoTime() > deadline) {
                    throw e;
                }
                Thread.sleep(pauseMs);
                continue;
            }
            if (nodes >= started) {
                break;
            }
            if (System.nanoTime() > deadline) {
                throw new TimeoutException("only " + nodes + " of " + started
                        + " waiters queued within the budget");
            }
            if (nodes == seen) {
                Thread.sleep(pauseMs);
                pauseMs = Math.min(pauseMs * 2, 50);
            } else {
                pauseMs = 1;
            }
            seen = nodes;
        }
        long rssQueued = rssKib();
        System.out.println("QUEUED waiters=" + started + " nodes=" + nodes
                + " rss_before_kib=" + rssBefore + " rss_kib=" + rssQueued);
        System.out.flush();

        int left = 0;
        for (Thread t : threads) {
            long ms = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
            t.join(Math.max(ms, 1));
            if (t.isAlive()) {
                left++;
            }
        }
        if (left > 0) {
            throw new TimeoutException(left + " of " + started
                    + " waiters still waiting when the budget ran out");
        }
        if (failure != null) {
            throw new IllegalStateException(failure);
        }
        long releasedBench = go.get(
                Math.max(deadline - System.nanoTime(), 1), TimeUnit.NANOSECONDS);

        long[][] holds = new long[started][];
        for (int i = 0; i < started; i++) {
            holds[i] = new long[] {acquired[i], released[i]};
        }
        Arrays.sort(holds, (a, b) -> a[0] != b[0] ? Long.compare(a[0], b[0])
                : Long.compare(a[1], b[1]));
        BenchSupport.Histogram h = new BenchSupport.Histogram();
        long previous = releasedBench;
        StringBuilder line = new StringBuilder("HOLDS");
        for (int i = 0; i < started; i++) {
            h.record(Math.max(holds[i][0] - previous, 0));
            previous = holds[i][1];
            line.append(' ').append(holds[i][0]).append(':').append(holds[i][1]);
            if ((i + 1) % HOLDS_PER_LINE == 0 || i + 1 == started) {
                System.out.println(line);
                line = new StringBuilder("HOLDS");
            }
        }
        client.close();
        System.out.println("RESULT drained=" + h.total
                + " drain_ns=" + Math.max(previous - releasedBench, 0)
                + " p50_ns=" + h.percentile(50)
                + " p99_ns=" + h.percentile(99)
                + " rss_before_kib=" + rssBefore
                + " rss_queued_kib=" + rssQueued);
    }

    /** The time in the first "GO <ns>" line on stdin; halts the JVM when stdin ends. */
    private static CompletableFuture<Long> readGoFromStdin() {
        CompletableFuture<Long> go = new CompletableFuture<>();
        Thread t = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(
                    new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null) {
                    if (line.startsWith("GO ")) {
                        try {
                            go.complete(Long.parseLong(line.substring(3).trim()));
                        } catch (NumberFormatException e) {
                            // not a GO line: ignored, as ours does
                        }
                    }
                }
            } catch (Exception e) {
                // same as end of file
            }
            Runtime.getRuntime().halt(3);
        }, "stdin");
        t.setDaemon(true);
        t.start();
        return go;
    }

    /** CLOCK_REALTIME in ns since the epoch (Instant.now(): microseconds on Linux). */
    private static long nowNs() {
        Instant now = Instant.now();
        return now.getEpochSecond() * 1_000_000_000L + now.getNano();
    }

    /** The resident set now (VmRSS) in KiB, from /proc/self/status. */
    private static long rssKib() throws Exception {
        for (String line : Files.readAllLines(Paths.get("/proc/self/status"))) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.substring(6).trim().split("\\s+")[0]);
            }
        }
        return 0;
    }
}
