// The Curator side of every `cargo xtask interop <recipe>` (xtask/src/interop/), the
// `interop` mode of CuratorWorker: Apache
// Curator 5.4's InterProcessMutex, InterProcessReadWriteLock, InterProcessMultiLock,
// InterProcessSemaphoreV2 or InterProcessSemaphoreMutex contending with ours on the same
// paths. One worker, a recipe switch: the sessions, the READY/GO handshake, the watchdogs, the
// counts and the holds are shared. Its arguments are our worker's, in the same order
// (xtask/src/interop/ours/mod.rs, WorkerConfig):
//
//   java -cp <classes>:<curator and zookeeper jars> CuratorWorker interop \
//       <mutex|rwlock|multilock|semaphore|semaphore-mutex> <connect> <lock path> <clients>
//       <run ms> <dir> <leases>
//
// Starts <clients> threads, each with its own CuratorFramework (its own session). When every
// client is connected it prints "READY" and waits for "GO" on stdin; then each thread loops
// for <run ms>: acquire (the time left as timeout) -> hold a random 0.2..3 ms -> release, and
// records each hold; at the end each thread writes its holds to <dir>/holds-java-<i>, one line
// each (xtask/src/interop/holds.rs):
//
//   HOLD who=java-<i> n=<its acquisition count> on=<lock|member-<k>|leases> mode=<x|r|w|lease>
//        from=<ns> to=<ns> node=<lock node name or -> token=-
//
// `from` is taken after the acquire returned and `to` before the release is called, on the
// clock our side uses too: the wall clock read once at the start (Instant.now(), ns, between
// two System.nanoTime() readings, the tightest of 20 tries) plus System.nanoTime()'s progress
// since (CLOCK_MONOTONIC, the same kernel clock as Rust's Instant). The harness checks both
// sides' holds against the recipe's rule. What is held:
//
//   mutex:           on=lock mode=x (with the lock node's name)
//   rwlock:          on=lock mode=r (70%) or mode=w (30%); never a downgrade (Curator 5.4's
//                    downgrade lets a queued writer in: CURATOR-621); ours downgrades
//   multilock:       a random non-empty subset of <path>/0..2 in the canonical (sorted) order;
//                    on=member-<k> mode=x for each member k held
//   semaphore:       on=leases mode=lease, one lease per ask (see semaphoreLoop)
//   semaphore-mutex: on=lock mode=lease
//
// At the end it prints one line
//
//   COUNTS side=java clients=<n> acquisitions=<n> errors=<n>
//
// and exits 0; a setup failure prints "ERROR <message>" and exits 1. It halts when stdin
// ends (the harness went away), and by itself 120 s after the end of its run.

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMultiLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreMutex;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;

public final class CuratorInterop {
    private static final AtomicLong ACQUISITIONS = new AtomicLong();
    private static final AtomicLong ERRORS = new AtomicLong();
    /** Members of the multi-lock: <path>/0, <path>/1, <path>/2. */
    private static final int MEMBERS = 3;
    /** The holds' clock: the wall clock once, in ns, and the monotonic clock then. */
    private static long wall0;
    private static long mono0;

    /** Curator's mutex, exposing the holder's lock node (protected getLockPath). */
    static final class Mutex extends InterProcessMutex {
        Mutex(CuratorFramework client, String path) {
            super(client, path);
        }

        String ourNode() {
            String path = getLockPath();
            return path == null ? "-" : path.substring(path.lastIndexOf('/') + 1);
        }
    }

    /** One client's holds, written to <dir>/holds-<name> at the end. */
    static final class Holds {
        final String name;
        final StringBuilder lines = new StringBuilder();
        long n;

        Holds(String name) {
            this.name = name;
        }

        /** Counts an acquisition; its number. */
        long acquired() {
            ACQUISITIONS.incrementAndGet();
            return ++n;
        }

        void record(long n, String on, String mode, long from, long to, String node) {
            lines.append("HOLD who=").append(name).append(" n=").append(n)
                .append(" on=").append(on).append(" mode=").append(mode)
                .append(" from=").append(from).append(" to=").append(to)
                .append(" node=").append(node).append(" token=-\n");
        }

        void write(File dir) {
            try {
                Files.write(new File(dir, "holds-" + name).toPath(),
                    lines.toString().getBytes(StandardCharsets.UTF_8));
            } catch (IOException e) {
                error(name, "writing its holds", e);
            }
        }
    }

    /**
     * Anchors the holds' clock: the wall-clock reading taken between two monotonic ones, the
     * tightest pair of 20 (a thread preempted between its readings would shift every stamp;
     * xtask/src/interop/holds.rs, Clock, does the same).
     */
    static void anchorClock() {
        long bestGap = Long.MAX_VALUE;
        for (int i = 0; i < 20; i++) {
            long before = System.nanoTime();
            java.time.Instant wall = java.time.Instant.now();
            long after = System.nanoTime();
            if (after - before < bestGap) {
                bestGap = after - before;
                mono0 = before + (after - before) / 2;
                wall0 = wall.getEpochSecond() * 1_000_000_000L + wall.getNano();
            }
        }
    }

    /** The holds' clock: ns since the Unix epoch. */
    static long now() {
        return wall0 + (System.nanoTime() - mono0);
    }

    static void main(String[] args) {
        try {
            run(args);
        } catch (Throwable e) {
            System.out.println("ERROR " + e);
            System.out.flush();
            Runtime.getRuntime().halt(1);
        }
        System.out.flush();
        Runtime.getRuntime().halt(0);
    }

    private static void run(String[] args) throws Exception {
        if (args.length != 7) {
            throw new IllegalArgumentException("usage: CuratorWorker interop "
                + "<mutex|rwlock|multilock|semaphore|semaphore-mutex> "
                + "<connect> <lock path> <clients> <run ms> <dir> <leases>");
        }
        String recipe = args[0];
        if (!List.of("mutex", "rwlock", "multilock", "semaphore", "semaphore-mutex")
                .contains(recipe)) {
            throw new IllegalArgumentException("unknown recipe " + recipe);
        }
        String connect = args[1];
        String path = args[2];
        int clients = Integer.parseInt(args[3]);
        long runMs = Long.parseLong(args[4]);
        File dir = new File(args[5]);
        int leases = Integer.parseInt(args[6]);

        List<CuratorFramework> sessions = CuratorWorker.sessions(connect, clients);
        BufferedReader stdin = new BufferedReader(
            new InputStreamReader(System.in, StandardCharsets.UTF_8));
        System.out.println("READY");
        System.out.flush();
        String line = stdin.readLine();
        if (line == null || !line.trim().equals("GO")) {
            throw new IOException("expected GO on stdin, got " + line);
        }
        anchorClock();
        long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(runMs);
        Thread watchdog = new Thread(() -> {
            try {
                while (stdin.readLine() != null) {
                }
            } catch (IOException e) {
                // the same as end of file
            }
            Runtime.getRuntime().halt(3);
        });
        watchdog.setDaemon(true);
        watchdog.start();
        Thread deadman = new Thread(() -> {
            long haltAt = end + TimeUnit.MILLISECONDS.toNanos(120_000);
            for (long left; (left = haltAt - System.nanoTime()) > 0; ) {
                LockSupport.parkNanos(left);
            }
            System.err.println("CuratorInterop: still running 120 s after its run; halting");
            Runtime.getRuntime().halt(4);
        });
        deadman.setDaemon(true);
        deadman.start();

        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < clients; i++) {
            Holds holds = new Holds("java-" + i);
            CuratorFramework client = sessions.get(i);
            Runnable body;
            switch (recipe) {
                case "mutex":
                    body = () -> mutexLoop(holds, new Mutex(client, path), end);
                    break;
                case "rwlock":
                    body = () -> rwLoop(holds, new InterProcessReadWriteLock(client, path), end);
                    break;
                case "multilock":
                    body = () -> multiLoop(holds, client, path, end);
                    break;
                case "semaphore":
                    body = () -> semaphoreLoop(holds,
                        new InterProcessSemaphoreV2(client, path, leases), end);
                    break;
                default:
                    body = () -> semaphoreMutexLoop(holds,
                        new InterProcessSemaphoreMutex(client, path), end);
                    break;
            }
            Thread t = new Thread(() -> {
                body.run();
                holds.write(dir);
            }, holds.name);
            t.start();
            threads.add(t);
        }
        for (Thread t : threads) {
            t.join();
        }
        for (CuratorFramework client : sessions) {
            client.close();
        }
        System.out.println("COUNTS side=java clients=" + clients
            + " acquisitions=" + ACQUISITIONS.get()
            + " errors=" + ERRORS.get());
    }

    private static void mutexLoop(Holds holds, Mutex mutex, long end) {
        while (take(holds.name, mutex, end)) {
            long n = holds.acquired();
            long from = now();
            hold();
            holds.record(n, "lock", "x", from, now(), mutex.ourNode());
            release(holds.name, mutex);
        }
    }

    private static void rwLoop(Holds holds, InterProcessReadWriteLock rw, long end) {
        while (true) {
            boolean write = ThreadLocalRandom.current().nextInt(10) < 3;
            InterProcessLock lock = write ? rw.writeLock() : rw.readLock();
            if (!take(holds.name, lock, end)) {
                return;
            }
            long n = holds.acquired();
            long from = now();
            hold();
            holds.record(n, "lock", write ? "w" : "r", from, now(), "-");
            release(holds.name, lock);
        }
    }

    private static void multiLoop(Holds holds, CuratorFramework client, String path, long end) {
        while (true) {
            // A random non-empty subset, in the canonical order (sorted paths) ours uses.
            List<String> members = new ArrayList<>();
            List<Integer> ks = new ArrayList<>();
            for (int k = 0; k < MEMBERS; k++) {
                if (ThreadLocalRandom.current().nextInt(10) < 6) {
                    members.add(path + "/" + k);
                    ks.add(k);
                }
            }
            if (members.isEmpty()) {
                members.add(path + "/0");
                ks.add(0);
            }
            InterProcessMultiLock lock = new InterProcessMultiLock(client, members);
            if (!take(holds.name, lock, end)) {
                return;
            }
            long n = holds.acquired();
            long from = now();
            hold();
            long to = now();
            for (int k : ks) {
                holds.record(n, "member-" + k, "x", from, to, "-");
            }
            release(holds.name, lock);
        }
    }

    private static void semaphoreLoop(Holds holds, InterProcessSemaphoreV2 semaphore, long end) {
        while (true) {
            long left = end - System.nanoTime();
            if (left <= 0) {
                return;
            }
            // One lease per ask: Curator takes several one at a time, holding the first
            // while it waits for the inner lock to take the next, and with a few clients that
            // deadlocks within seconds (each holding part of what it needs). Ours asks for
            // two at times (all or none, under one hold of the inner lock).
            Collection<Lease> held;
            try {
                held = semaphore.acquire(1, TimeUnit.NANOSECONDS.toMillis(left),
                    TimeUnit.MILLISECONDS);
            } catch (Exception e) {
                error(holds.name, "acquire", e);
                continue;
            }
            if (held == null) {
                return;
            }
            long n = holds.acquired();
            long from = now();
            hold();
            long to = now();
            for (Lease lease : held) {
                String node = lease.getNodeName();
                holds.record(n, "leases", "lease", from, to,
                    node == null ? "-" : node.substring(node.lastIndexOf('/') + 1));
            }
            semaphore.returnAll(held);
        }
    }

    private static void semaphoreMutexLoop(Holds holds, InterProcessSemaphoreMutex lock,
            long end) {
        while (take(holds.name, lock, end)) {
            long n = holds.acquired();
            long from = now();
            hold();
            holds.record(n, "lock", "lease", from, now(), "-");
            release(holds.name, lock);
        }
    }

    /** Acquires with the time left; false when the run is over. */
    private static boolean take(String name, InterProcessLock lock, long end) {
        while (true) {
            long left = end - System.nanoTime();
            if (left <= 0) {
                return false;
            }
            try {
                return lock.acquire(TimeUnit.NANOSECONDS.toMillis(left), TimeUnit.MILLISECONDS);
            } catch (Exception e) {
                error(name, "acquire", e);
            }
        }
    }

    private static void hold() {
        LockSupport.parkNanos(ThreadLocalRandom.current().nextLong(200_000, 3_000_000));
    }

    private static void release(String name, InterProcessLock lock) {
        try {
            lock.release();
        } catch (Exception e) {
            error(name, "release", e);
        }
    }

    private static void error(String name, String what, Exception e) {
        ERRORS.incrementAndGet();
        System.err.println("ERROR-COUNTED " + name + " " + what + ": " + e);
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50));
    }
}
