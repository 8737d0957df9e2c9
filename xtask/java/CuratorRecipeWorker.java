// The Curator side of every `cargo xtask interop <recipe>` (xtask/src/interop/ for the mutex,
// xtask/src/recipe_interop/ for the others): Apache Curator 5.4's InterProcessMutex,
// InterProcessReadWriteLock, InterProcessMultiLock, InterProcessSemaphoreV2 or
// InterProcessSemaphoreMutex contending with ours on the same paths. One worker, a recipe
// switch: the sessions, the READY/GO handshake, the watchdogs and the counts are shared.
//
//   java -cp <classes>:<curator and zookeeper jars> CuratorRecipeWorker \
//       <rwlock|multilock|semaphore|semaphore-mutex> <connect> <lock path> <clients> <run ms>
//       <marker dir> [<leases>]
//   java ... CuratorRecipeWorker mutex <connect> <lock path> <clients> <run ms> <marker file>
//       <log file>
//
// Starts <clients> threads, each with its own CuratorFramework (its own session). When every
// client is connected it prints "READY" and waits for "GO" on stdin; then each thread loops
// for <run ms>: acquire (the time left as timeout) -> enter the critical section -> hold a
// random 0.2..3 ms -> leave -> release. The critical section is checked with files in
// <marker dir>, shared with our side (the same rules, src/recipe_interop.rs):
//
//   rwlock, writer: create "W" exclusively (exists: two writers), then no "R-*" may exist
//   rwlock, reader: create "R-<name>", then "W" may not exist
//   multilock:      create "M-<k>" exclusively for each member k held
//   semaphore(-mutex): for each lease held, create the first "S-<k>" (k < leases) that does
//                   not exist; none left means more holders than leases
//   mutex:          create <marker file> exclusively (it exists: another holder is inside),
//                   and append "java-<i> <n> <lock node name> - <ok|OVERLAP> <unix µs>" to
//                   <log file> (one write), from which the harness checks the lock order
//
// A broken rule is a violation, counted and reported on stderr. Curator's side never
// downgrades (Curator 5.4's downgrade lets a queued writer in: CURATOR-621); ours does. At
// the end it prints one line
//
//   COUNTS side=java clients=<n> acquisitions=<n> violations=<n> errors=<n>
//
// and exits 0; a setup failure prints "ERROR <message>" and exits 1. It halts when stdin
// ends (the harness went away), and by itself 120 s after the end of its run.

import java.io.BufferedReader;
import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMultiLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreMutex;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.retry.ExponentialBackoffRetry;

public final class CuratorRecipeWorker {
    private static final AtomicLong ACQUISITIONS = new AtomicLong();
    private static final AtomicLong VIOLATIONS = new AtomicLong();
    private static final AtomicLong ERRORS = new AtomicLong();
    /** Members of the multi-lock: <path>/0, <path>/1, <path>/2. */
    private static final int MEMBERS = 3;

    /** Curator's mutex, exposing the holder's lock node (protected getLockPath). */
    static final class Mutex extends InterProcessMutex {
        Mutex(CuratorFramework client, String path) {
            super(client, path);
        }

        String ourNode() {
            String path = getLockPath();
            return path == null ? "?" : path.substring(path.lastIndexOf('/') + 1);
        }
    }

    public static void main(String[] args) {
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
        String recipe = args.length > 0 ? args[0] : "";
        boolean mutex = recipe.equals("mutex");
        if (mutex ? args.length != 7 : (args.length != 6 && args.length != 7)) {
            throw new IllegalArgumentException("usage: CuratorRecipeWorker "
                + "<rwlock|multilock|semaphore|semaphore-mutex> "
                + "<connect> <lock path> <clients> <run ms> <marker dir> [<leases>], or "
                + "mutex <connect> <lock path> <clients> <run ms> <marker file> <log file>");
        }
        if (!List.of("mutex", "rwlock", "multilock", "semaphore", "semaphore-mutex")
                .contains(recipe)) {
            throw new IllegalArgumentException("unknown recipe " + recipe);
        }
        int leases = !mutex && args.length == 7 ? Integer.parseInt(args[6]) : 3;
        File log = mutex ? new File(args[6]) : null;
        String connect = args[1];
        String path = args[2];
        int clients = Integer.parseInt(args[3]);
        long runMs = Long.parseLong(args[4]);
        File dir = new File(args[5]);

        List<CuratorFramework> sessions = new ArrayList<>();
        for (int i = 0; i < clients; i++) {
            CuratorFramework client = CuratorFrameworkFactory.newClient(
                connect, 10_000, 5_000, new ExponentialBackoffRetry(100, 5));
            client.start();
            if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) {
                throw new IOException("client " + i + " did not connect to " + connect);
            }
            sessions.add(client);
        }
        BufferedReader stdin = new BufferedReader(
            new InputStreamReader(System.in, StandardCharsets.UTF_8));
        System.out.println("READY");
        System.out.flush();
        String line = stdin.readLine();
        if (line == null || !line.trim().equals("GO")) {
            throw new IOException("expected GO on stdin, got " + line);
        }
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
            System.err.println("CuratorRecipeWorker: still running 120 s after its run; halting");
            Runtime.getRuntime().halt(4);
        });
        deadman.setDaemon(true);
        deadman.start();

        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < clients; i++) {
            String name = "java-" + i;
            CuratorFramework client = sessions.get(i);
            Runnable body;
            switch (recipe) {
                case "mutex":
                    body = () -> mutexLoop(name, new Mutex(client, path), end, dir, log);
                    break;
                case "rwlock":
                    body = () -> rwLoop(name, new InterProcessReadWriteLock(client, path), end, dir);
                    break;
                case "multilock":
                    body = () -> multiLoop(name, client, path, end, dir);
                    break;
                case "semaphore":
                    body = () -> semaphoreLoop(name,
                        new InterProcessSemaphoreV2(client, path, leases), leases, end, dir);
                    break;
                default:
                    body = () -> semaphoreMutexLoop(name,
                        new InterProcessSemaphoreMutex(client, path), end, dir);
                    break;
            }
            Thread t = new Thread(body, name);
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
            + " violations=" + VIOLATIONS.get()
            + " errors=" + ERRORS.get());
    }

    /** The mutex: `marker` is one file, and every acquisition is logged with its lock node. */
    private static void mutexLoop(String name, Mutex mutex, long end, File marker, File log) {
        long n = 0;
        try (FileOutputStream out = new FileOutputStream(log, true)) {
            while (take(name, mutex, end)) {
                n++;
                try {
                    mutexCritical(name, n, mutex.ourNode(), marker, out);
                } catch (IOException e) {
                    error(name, "critical section", e);
                } finally {
                    release(name, mutex);
                }
            }
        } catch (IOException e) {
            error(name, "opening the log", e);
        }
    }

    private static void mutexCritical(String name, long n, String node, File marker,
            FileOutputStream log) throws IOException {
        boolean created = marker.createNewFile();
        if (created) {
            Files.write(marker.toPath(), (name + " " + node).getBytes(StandardCharsets.UTF_8));
        } else {
            String other;
            try {
                other = new String(Files.readAllBytes(marker.toPath()), StandardCharsets.UTF_8);
            } catch (IOException e) {
                other = "(unreadable: " + e + ")";
            }
            violation(name + " holds " + node + " (acquisition " + n
                + ") but the marker exists, written by: "
                + (other.isEmpty() ? "(empty: its holder has just created it)" : other));
        }
        String flag = created ? "ok" : "OVERLAP";
        java.time.Instant now = java.time.Instant.now();
        long micros = now.getEpochSecond() * 1_000_000L + now.getNano() / 1_000;
        log.write((name + " " + n + " " + node + " - " + flag + " " + micros + "\n")
            .getBytes(StandardCharsets.UTF_8));
        hold();
        if (created && !marker.delete()) {
            violation(name + " holds " + node
                + " but its marker was gone when it came to delete it");
        }
    }

    private static void rwLoop(String name, InterProcessReadWriteLock rw, long end, File dir) {
        while (true) {
            boolean write = ThreadLocalRandom.current().nextInt(10) < 3;
            InterProcessLock lock = write ? rw.writeLock() : rw.readLock();
            if (!take(name, lock, end)) {
                return;
            }
            try {
                if (write) {
                    writerEnter(name, dir);
                    hold();
                    leave(new File(dir, "W"));
                } else {
                    File mine = new File(dir, "R-" + name);
                    readerEnter(name, mine, dir);
                    hold();
                    leave(mine);
                }
            } catch (IOException e) {
                error(name, "critical section", e);
            } finally {
                release(name, lock);
            }
        }
    }

    private static void multiLoop(String name, CuratorFramework client, String path, long end,
            File dir) {
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
            if (!take(name, lock, end)) {
                return;
            }
            List<File> mine = new ArrayList<>();
            try {
                for (int k : ks) {
                    File marker = new File(dir, "M-" + k);
                    if (marker.createNewFile()) {
                        mine.add(marker);
                    } else {
                        violation(name + " holds member " + k + " but its marker exists");
                    }
                }
                hold();
                for (File marker : mine) {
                    leave(marker);
                }
            } catch (IOException e) {
                error(name, "critical section", e);
            } finally {
                release(name, lock);
            }
        }
    }

    private static void semaphoreLoop(String name, InterProcessSemaphoreV2 semaphore, int leases,
            long end, File dir) {
        while (true) {
            long left = end - System.nanoTime();
            if (left <= 0) {
                return;
            }
            // One lease per ask: Curator takes several one at a time, holding the first
            // while it waits for the inner lock to take the next, and with a few clients that
            // deadlocks within seconds (each holding part of what it needs). Ours asks for
            // two at times (all or none, under one hold of the inner lock).
            int qty = 1;
            java.util.Collection<Lease> held;
            try {
                held = semaphore.acquire(qty, TimeUnit.NANOSECONDS.toMillis(left),
                    TimeUnit.MILLISECONDS);
            } catch (Exception e) {
                error(name, "acquire", e);
                continue;
            }
            if (held == null) {
                return;
            }
            ACQUISITIONS.incrementAndGet();
            List<File> mine = new ArrayList<>();
            try {
                for (int i = 0; i < held.size(); i++) {
                    File slot = enterSlot(name, dir, leases);
                    if (slot != null) {
                        mine.add(slot);
                    }
                }
                hold();
                for (File slot : mine) {
                    leave(slot);
                }
            } catch (IOException e) {
                error(name, "critical section", e);
            } finally {
                semaphore.returnAll(held);
            }
        }
    }

    private static void semaphoreMutexLoop(String name, InterProcessSemaphoreMutex lock, long end,
            File dir) {
        while (take(name, lock, end)) {
            try {
                File slot = enterSlot(name, dir, 1);
                hold();
                if (slot != null) {
                    leave(slot);
                }
            } catch (IOException e) {
                error(name, "critical section", e);
            } finally {
                release(name, lock);
            }
        }
    }

    /** Takes the first free slot of `leases`; none free is a violation (null). */
    private static File enterSlot(String name, File dir, int leases) throws IOException {
        for (int k = 0; k < leases; k++) {
            File slot = new File(dir, "S-" + k);
            if (slot.createNewFile()) {
                return slot;
            }
        }
        violation(name + " holds a lease but all " + leases + " slots are taken");
        return null;
    }

    /** Acquires with the time left; false when the run is over. */
    private static boolean take(String name, InterProcessLock lock, long end) {
        while (true) {
            long left = end - System.nanoTime();
            if (left <= 0) {
                return false;
            }
            try {
                if (lock.acquire(TimeUnit.NANOSECONDS.toMillis(left), TimeUnit.MILLISECONDS)) {
                    ACQUISITIONS.incrementAndGet();
                    return true;
                }
                return false;
            } catch (Exception e) {
                error(name, "acquire", e);
            }
        }
    }

    private static void writerEnter(String name, File dir) throws IOException {
        if (!new File(dir, "W").createNewFile()) {
            violation(name + " writes but another writer's marker exists");
        }
        String[] readers = dir.list((d, n) -> n.startsWith("R-"));
        if (readers != null && readers.length > 0) {
            violation(name + " writes while readers are inside: " + String.join(",", readers));
        }
    }

    private static void readerEnter(String name, File mine, File dir) throws IOException {
        mine.createNewFile();
        if (new File(dir, "W").exists()) {
            violation(name + " reads while a writer is inside");
        }
    }

    private static void hold() {
        LockSupport.parkNanos(ThreadLocalRandom.current().nextLong(200_000, 3_000_000));
    }

    private static void leave(File marker) {
        marker.delete();
    }

    private static void release(String name, InterProcessLock lock) {
        try {
            lock.release();
        } catch (Exception e) {
            error(name, "release", e);
        }
    }

    private static void violation(String what) {
        VIOLATIONS.incrementAndGet();
        System.err.println("VIOLATION " + what);
    }

    private static void error(String name, String what, Exception e) {
        ERRORS.incrementAndGet();
        System.err.println("ERROR-COUNTED " + name + " " + what + ": " + e);
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50));
    }
}
