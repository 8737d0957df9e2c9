// The Java side of `cargo xtask bench client`: one workload with the plain
// Java ZooKeeper client's asynchronous API, in a process of its own, printing
// one RESULT line that xtask/src/bench/client.rs parses. The Rust side is
// xtask/src/bin/zk-worker.rs (mode bench), which does the same thing with zk-client.
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
// the same buckets as xtask's bench::histogram::Histogram (0.2% precision; in BenchSupport.java).
//
// It halts when its stdin reaches end of file (the bench went away), and
// prints "ERROR <message>" and exits 1 on any failure.

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

    private static volatile String failure;

    public static void main(String[] args) {
        BenchSupport.main(args, JavaClientBench::run);
    }

    private static void run(String[] args) throws Exception {
        if (args.length != 5) {
            throw new IllegalArgumentException(
                    "usage: <connect> <create|get> <warmup ms> <measure ms> <path>");
        }
        BenchSupport.haltAtEndOfStdin();
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

        BenchSupport.Histogram rec = new BenchSupport.Histogram();
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

        BenchSupport.sleepUntil(start);
        long cpu0 = BenchSupport.cpuTicks();
        BenchSupport.sleepUntil(end);
        long cpu1 = BenchSupport.cpuTicks();
        if (!done.await(60, TimeUnit.SECONDS)) {
            throw new IllegalStateException("requests still in flight 60 s after the window");
        }
        if (failure != null) {
            throw new IllegalStateException(failure);
        }
        zk.close();

        BenchSupport.printResult(rec, measureMs, cpu1 - cpu0);
    }

    private static void fail(CountDownLatch done, String why) {
        failure = why;
        done.countDown();
    }
}
