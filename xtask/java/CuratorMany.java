// The Curator side of `cargo xtask bench many` (xtask/src/bench/many/): what a Curator user
// would write to take many distinct locks at once in one process. Ours is `zk-worker many`
// (xtask/src/bench/many/ours.rs), with the same arguments and lines
// (xtask/src/bench/many/lines.rs). Compiled on its own with BenchSupport.java.
//
//   java -cp <classes>:<curator and zookeeper jars> CuratorMany \
//       <connect> <locks|sessions> <n> <path> <budget ms> <pool threads>
//
// - locks: one CuratorFramework (10 s session timeout, 5 s connection timeout,
//   ExponentialBackoffRetry(100, 5), as every harness's), then READY; on GO, a fixed pool of
//   <pool threads> runs the <n> InterProcessMutex.acquire() calls on <path>/lock-<i>, each
//   thread taking the next i until none is left.
// - sessions: READY before any session; on GO, the same pool starts <n> CuratorFrameworks,
//   each acquiring its own <path>/lock-<i>.
//
// Curator's InterProcessMutex belongs to the thread that acquired it (release() from another
// thread fails), so each pool thread keeps what it acquired and, on RELEASE, releases it.
//
//   READY rss_kib=<KiB> heap_kib=<KiB> threads=<n>
//   ACQUIRED ns=<GO to the last acquire> held=<n> rss_kib=<KiB> heap_kib=<KiB> threads=<n>
//   RELEASED ns=<RELEASE to the last release> rss_kib=<KiB> heap_kib=<KiB>
//   (heap_kib: the heap in use after System.gc())
//
// then on CLOSE it closes every CuratorFramework and exits. It fails ("ERROR <message>",
// exit 1) when a step is not over within <budget ms>, and halts when its stdin ends.

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;

public final class CuratorMany {
    private static final AtomicReference<String> failure = new AtomicReference<>();

    public static void main(String[] args) {
        BenchSupport.main(args, CuratorMany::run);
    }

    private static void run(String[] args) throws Exception {
        if (args.length != 6) {
            throw new IllegalArgumentException(
                    "usage: <connect> <locks|sessions> <n> <path> <budget ms> <pool threads>");
        }
        String connect = args[0];
        boolean sessions;
        switch (args[1]) {
            case "locks":
                sessions = false;
                break;
            case "sessions":
                sessions = true;
                break;
            default:
                throw new IllegalArgumentException("not locks or sessions: " + args[1]);
        }
        int n = Integer.parseInt(args[2]);
        String path = args[3];
        long budgetMs = Long.parseLong(args[4]);
        int poolThreads = Math.min(Integer.parseInt(args[5]), n);
        BlockingQueue<String> steps = readStepsFromStdin();

        CuratorFramework shared = sessions ? null : newClient(connect);
        long readyRss = status("VmRSS:");
        System.out.println("READY rss_kib=" + readyRss + " heap_kib=" + heapKib()
                + " threads=" + status("Threads:"));
        System.out.flush();

        step(steps, "GO", budgetMs);
        long started = System.nanoTime();
        ExecutorService pool = Executors.newFixedThreadPool(poolThreads);
        AtomicInteger next = new AtomicInteger();
        AtomicInteger held = new AtomicInteger();
        List<CuratorFramework> clients = java.util.Collections.synchronizedList(new ArrayList<>());
        CountDownLatch acquired = new CountDownLatch(poolThreads);
        CountDownLatch release = new CountDownLatch(1);
        CountDownLatch released = new CountDownLatch(poolThreads);
        for (int t = 0; t < poolThreads; t++) {
            pool.execute(() -> {
                List<InterProcessMutex> mine = new ArrayList<>();
                try {
                    int i;
                    while ((i = next.getAndIncrement()) < n && failure.get() == null) {
                        CuratorFramework client = shared;
                        if (client == null) {
                            client = newClient(connect);
                            clients.add(client);
                        }
                        InterProcessMutex mutex = new InterProcessMutex(client, path + "/lock-" + i);
                        mutex.acquire();
                        mine.add(mutex);
                        held.incrementAndGet();
                    }
                } catch (Exception e) {
                    failure.compareAndSet(null, Thread.currentThread().getName() + ": " + e);
                } finally {
                    acquired.countDown();
                }
                try {
                    release.await();
                    for (InterProcessMutex mutex : mine) {
                        mutex.release();
                    }
                } catch (Exception e) {
                    failure.compareAndSet(null, Thread.currentThread().getName() + ": " + e);
                } finally {
                    released.countDown();
                }
            });
        }
        await(acquired, budgetMs, "acquire()");
        long acquireNs = System.nanoTime() - started;
        long heldRss = status("VmRSS:");
        long heldThreads = status("Threads:");
        System.out.println("ACQUIRED ns=" + acquireNs + " held=" + held.get()
                + " rss_kib=" + heldRss + " heap_kib=" + heapKib() + " threads=" + heldThreads);
        System.out.flush();

        step(steps, "RELEASE", budgetMs);
        started = System.nanoTime();
        release.countDown();
        await(released, budgetMs, "release()");
        long releaseNs = System.nanoTime() - started;
        long releasedRss = status("VmRSS:");
        System.out.println("RELEASED ns=" + releaseNs + " rss_kib=" + releasedRss
                + " heap_kib=" + heapKib());
        System.out.flush();

        step(steps, "CLOSE", budgetMs);
        pool.shutdown();
        if (shared != null) {
            shared.close();
        }
        for (CuratorFramework client : clients) {
            client.close();
        }
    }

    /** A started client, connected, with the settings every harness uses. */
    private static CuratorFramework newClient(String connect) throws IOException,
            InterruptedException {
        CuratorFramework client = CuratorFrameworkFactory.newClient(
                connect, 10_000, 5_000, new ExponentialBackoffRetry(100, 5));
        client.start();
        if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) {
            throw new IOException("a client did not connect to " + connect);
        }
        return client;
    }

    /** Waits for `latch` within the budget; fails with the first failure of a pool thread. */
    private static void await(CountDownLatch latch, long budgetMs, String what) throws Exception {
        if (!latch.await(budgetMs, TimeUnit.MILLISECONDS)) {
            throw new TimeoutException(what + " not done within the budget");
        }
        String failed = failure.get();
        if (failed != null) {
            throw new IllegalStateException(failed);
        }
    }

    /** Waits for the line `want` from the bench within the budget. */
    private static void step(BlockingQueue<String> steps, String want, long budgetMs)
            throws Exception {
        String got = steps.poll(budgetMs, TimeUnit.MILLISECONDS);
        if (got == null) {
            throw new TimeoutException("no `" + want + "` from the bench within the budget");
        }
        if (!got.equals(want)) {
            throw new IllegalStateException("`" + got + "` from the bench, not `" + want + "`");
        }
    }

    /** The step lines (GO, RELEASE, CLOSE) on stdin; halts the JVM when stdin ends. */
    private static BlockingQueue<String> readStepsFromStdin() {
        BlockingQueue<String> steps = new LinkedBlockingQueue<>();
        Thread t = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(
                    new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null) {
                    String step = line.trim();
                    if (step.equals("GO") || step.equals("RELEASE") || step.equals("CLOSE")) {
                        steps.add(step);
                    }
                }
            } catch (Exception e) {
                // same as end of file
            }
            Runtime.getRuntime().halt(3);
        }, "stdin");
        t.setDaemon(true);
        t.start();
        return steps;
    }

    /**
     * The heap in use after a full collection, in KiB: what live objects keep (read after
     * the resident set, which a collection may shrink).
     */
    private static long heapKib() {
        for (int i = 0; i < 2; i++) {
            System.gc();
        }
        Runtime rt = Runtime.getRuntime();
        return (rt.totalMemory() - rt.freeMemory()) / 1024;
    }

    /** The first number after `key` in /proc/self/status (VmRSS in KiB, Threads). */
    private static long status(String key) throws Exception {
        for (String line : Files.readAllLines(Paths.get("/proc/self/status"))) {
            if (line.startsWith(key)) {
                return Long.parseLong(line.substring(key.length()).trim().split("\\s+")[0]);
            }
        }
        return 0;
    }
}
