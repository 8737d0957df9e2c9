// The Java side of `cargo xtask bench client`: one workload with the plain
// Java ZooKeeper client's asynchronous API, in a process of its own, printing
// one RESULT line that xtask/src/bench/client.rs parses. The Rust side is
// xtask/src/bin/zk-bench-worker.rs, which does the same thing with zk-client.
//
//   java -cp <classes>:<zookeeper jars> JavaClientBench <connect> <workload> \
//       <warmup ms> <measure ms> <path>
//
// Workloads:
//   create  sequential round trips: create <path> (persistent, empty), wait,
//           delete it, wait; one op = one create+delete pair, its latency
//           measured from the create's submission to the delete's callback.
//   get     getData of <path> (1 KiB, created if missing) with 100 requests in
//           flight at all times: each callback submits the next request.
//
// Requests run for <warmup ms> unmeasured, then for <measure ms> measured: an
// op counts when it completes inside the measured window. Then no new request
// is submitted and the program waits for those in flight.
//
// Output (one line, space-separated key=value):
//   RESULT ops=<n> measure_ms=<ms> p50_ns=<ns> p99_ns=<ns>
//          cpu_window_ticks=<utime+stime during the window, clock ticks>
//          cpu_total_ticks=<utime+stime at exit> hwm_kib=<VmHWM>
// p50/p99 are nearest-rank percentiles from a fixed-memory histogram with
// the same buckets as xtask's bench::histogram::Histogram (0.2% precision).
//
// It halts when its stdin reaches end of file (the bench went away), and
// prints "ERROR <message>" and exits 1 on any failure.

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.zookeeper.AsyncCallback;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs.Ids;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.Stat;

public final class JavaClientBench {
    private static final int IN_FLIGHT = 100;
    private static final byte[] EMPTY = new byte[0];

    /**
     * Latencies in ns, in fixed memory: the same buckets as xtask's
     * bench::histogram::Histogram (values below 1024 exact, then 10
     * significant bits). Written only by the client's event thread.
     */
    private static final class Histogram {
        private final int[] counts = new int[56 << 9];
        private long total;

        void record(long v) {
            counts[bucket(Math.max(v, 0))]++;
            total++;
        }

        /** Nearest rank, reported as the lowest value of the bucket; 0 if empty. */
        long percentile(int p) {
            long rank = Math.max((total * p + 99) / 100, 1);
            long seen = 0;
            for (int i = 0; i < counts.length; i++) {
                seen += counts[i];
                if (seen >= rank) {
                    return lowest(i);
                }
            }
            return 0;
        }

        static int bucket(long v) {
            if (v < 1024) {
                return (int) v;
            }
            int shift = 63 - Long.numberOfLeadingZeros(v) - 9;
            return (shift << 9) + (int) (v >>> shift);
        }

        static long lowest(int index) {
            if (index < 1024) {
                return index;
            }
            int shift = (index >> 9) - 1;
            long mantissa = (index & 511) | 512;
            return mantissa << shift;
        }
    }

    private static volatile String failure;

    public static void main(String[] args) {
        try {
            run(args);
        } catch (Throwable e) {
            e.printStackTrace();
            System.out.println("ERROR " + e);
            System.out.flush();
            Runtime.getRuntime().halt(1);
        }
        System.out.flush();
        Runtime.getRuntime().halt(0);
    }

    private static void run(String[] args) throws Exception {
        if (args.length != 5) {
            throw new IllegalArgumentException(
                    "usage: <connect> <create|get> <warmup ms> <measure ms> <path>");
        }
        haltAtEndOfStdin();
        String connect = args[0];
        String workload = args[1];
        long warmupNs = TimeUnit.MILLISECONDS.toNanos(Long.parseLong(args[2]));
        long measureMs = Long.parseLong(args[3]);
        String path = args[4];

        CountDownLatch connected = new CountDownLatch(1);
        ZooKeeper zk = new ZooKeeper(connect, 30_000, event -> {
            if (event.getState() == Watcher.Event.KeeperState.SyncConnected) {
                connected.countDown();
            }
        });
        if (!connected.await(30, TimeUnit.SECONDS)) {
            throw new IllegalStateException("no connection to " + connect);
        }

        Histogram rec = new Histogram();
        CountDownLatch done = new CountDownLatch(1);
        long begin = System.nanoTime();
        long start = begin + warmupNs;
        long end = start + TimeUnit.MILLISECONDS.toNanos(measureMs);

        switch (workload) {
            case "create": {
                if (zk.exists(path, false) != null) {
                    zk.delete(path, -1);
                }
                AsyncCallback.VoidCallback[] deleted = new AsyncCallback.VoidCallback[1];
                AsyncCallback.StringCallback created = (rc, p, ctx, name) -> {
                    if (rc != 0) {
                        fail(done, "create: " + KeeperException.Code.get(rc));
                        return;
                    }
                    zk.delete(path, -1, deleted[0], ctx);
                };
                deleted[0] = (rc, p, ctx) -> {
                    long now = System.nanoTime();
                    if (rc != 0) {
                        fail(done, "delete: " + KeeperException.Code.get(rc));
                        return;
                    }
                    if (now >= start && now < end) {
                        rec.record(now - (Long) ctx);
                    }
                    if (now < end) {
                        zk.create(path, EMPTY, Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT,
                                created, now);
                    } else {
                        done.countDown();
                    }
                };
                zk.create(path, EMPTY, Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT, created,
                        System.nanoTime());
                break;
            }
            case "get": {
                if (zk.exists(path, false) == null) {
                    zk.create(path, new byte[1024], Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
                }
                AtomicInteger running = new AtomicInteger(IN_FLIGHT);
                AsyncCallback.DataCallback[] got = new AsyncCallback.DataCallback[1];
                got[0] = (rc, p, ctx, data, stat) -> {
                    long now = System.nanoTime();
                    if (rc != 0 || data == null || data.length != 1024) {
                        fail(done, "getData: " + KeeperException.Code.get(rc));
                        return;
                    }
                    if (now >= start && now < end) {
                        rec.record(now - (Long) ctx);
                    }
                    if (now < end) {
                        zk.getData(path, false, got[0], now);
                    } else if (running.decrementAndGet() == 0) {
                        done.countDown();
                    }
                };
                for (int i = 0; i < IN_FLIGHT; i++) {
                    zk.getData(path, false, got[0], System.nanoTime());
                }
                break;
            }
            default:
                throw new IllegalArgumentException("unknown workload " + workload);
        }

        sleepUntil(start);
        long cpu0 = cpuTicks();
        sleepUntil(end);
        long cpu1 = cpuTicks();
        if (!done.await(60, TimeUnit.SECONDS)) {
            throw new IllegalStateException("requests still in flight 60 s after the window");
        }
        if (failure != null) {
            throw new IllegalStateException(failure);
        }
        zk.close();

        System.out.println("RESULT ops=" + rec.total
                + " measure_ms=" + measureMs
                + " p50_ns=" + rec.percentile(50)
                + " p99_ns=" + rec.percentile(99)
                + " cpu_window_ticks=" + (cpu1 - cpu0)
                + " cpu_total_ticks=" + cpuTicks()
                + " hwm_kib=" + hwmKib());
    }

    private static void fail(CountDownLatch done, String why) {
        failure = why;
        done.countDown();
    }

    private static void sleepUntil(long deadline) throws InterruptedException {
        long left;
        while ((left = deadline - System.nanoTime()) > 0) {
            TimeUnit.NANOSECONDS.sleep(left);
        }
    }

    /** utime + stime of this process, in clock ticks, from /proc/self/stat. */
    private static long cpuTicks() throws Exception {
        String stat = new String(Files.readAllBytes(Paths.get("/proc/self/stat")),
                StandardCharsets.US_ASCII);
        String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        return Long.parseLong(f[11]) + Long.parseLong(f[12]);
    }

    /** Peak resident set size (VmHWM) in KiB, from /proc/self/status. */
    private static long hwmKib() throws Exception {
        for (String line : Files.readAllLines(Paths.get("/proc/self/status"))) {
            if (line.startsWith("VmHWM:")) {
                return Long.parseLong(line.substring(6).trim().split("\\s+")[0]);
            }
        }
        return 0;
    }

    /** A daemon thread that halts the JVM when stdin ends (the bench went away). */
    private static void haltAtEndOfStdin() {
        Thread t = new Thread(() -> {
            try {
                while (System.in.read() >= 0) {
                    // keep reading
                }
            } catch (Exception e) {
                // same as end of file
            }
            Runtime.getRuntime().halt(3);
        });
        t.setDaemon(true);
        t.start();
    }
}
