// The Curator side of `cargo xtask interop mutex` (xtask/src/interop.rs): Apache
// Curator 5.4's InterProcessMutex contending with ours (recipe-mutex, run by
// xtask/src/bin/lock-worker.rs or in-process) on one lock path.
//
//   java -cp <classes>:<curator and zookeeper jars> CuratorMutexWorker \
//       <connect> <lock path> <clients> <run ms> <marker file> <log file>
//
// Starts <clients> threads, each with its own CuratorFramework (its own
// session, ExponentialBackoffRetry) and its own InterProcessMutex on <lock
// path>. When every client is connected it prints "READY" and waits for a line
// "GO" on stdin; then each thread loops for <run ms>:
//
//   acquire (with the time left as timeout; false means the run is over)
//   -> create <marker file> exclusively (File.createNewFile). If it already
//      exists another holder is inside: a violation, counted and reported on
//      stderr with both holders' lock nodes; the other's marker is left alone.
//   -> append "java-<i> <n> <lock node name> - <ok|OVERLAP> <unix µs>" to <log
//      file> (O_APPEND, one write), hold for a random 0.2..3 ms, delete the marker if we created it
//   -> release.
//
// At the end it prints one line
//
//   COUNTS side=java clients=<n> acquisitions=<n> violations=<n> errors=<n>
//
// and exits 0. Any setup failure prints "ERROR <message>" and exits 1. It
// halts when stdin reaches end of file (the harness went away), and by itself
// 120 s after the end of its run, so it never outlives the harness.

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
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;

public final class CuratorMutexWorker {
    private static final AtomicLong ACQUISITIONS = new AtomicLong();
    private static final AtomicLong VIOLATIONS = new AtomicLong();
    private static final AtomicLong ERRORS = new AtomicLong();

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
        if (args.length != 6) {
            throw new IllegalArgumentException(
                "usage: CuratorMutexWorker <connect> <lock path> <clients> <run ms> <marker> <log>");
        }
        String connect = args[0];
        String path = args[1];
        int clients = Integer.parseInt(args[2]);
        long runMs = Long.parseLong(args[3]);
        File marker = new File(args[4]);
        File log = new File(args[5]);

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
        // Stop when the harness goes away, or long after the run should be over.
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
            System.err.println("CuratorMutexWorker: still running 120 s after its run; halting");
            Runtime.getRuntime().halt(4);
        });
        deadman.setDaemon(true);
        deadman.start();

        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < clients; i++) {
            String name = "java-" + i;
            Mutex mutex = new Mutex(sessions.get(i), path);
            Thread t = new Thread(() -> loop(name, mutex, end, marker, log), name);
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

    /** One client's acquire / critical section / release loop until {@code end}. */
    private static void loop(String name, Mutex mutex, long end, File marker, File log) {
        long n = 0;
        try (FileOutputStream out = new FileOutputStream(log, true)) {
            while (true) {
                long left = end - System.nanoTime();
                if (left <= 0) {
                    return;
                }
                boolean held;
                try {
                    held = mutex.acquire(TimeUnit.NANOSECONDS.toMillis(left), TimeUnit.MILLISECONDS);
                } catch (Exception e) {
                    error(name, "acquire", e);
                    continue;
                }
                if (!held) {
                    return;
                }
                n++;
                ACQUISITIONS.incrementAndGet();
                try {
                    critical(name, n, mutex.ourNode(), marker, out);
                } catch (Exception e) {
                    error(name, "critical section", e);
                } finally {
                    try {
                        mutex.release();
                    } catch (Exception e) {
                        error(name, "release", e);
                    }
                }
            }
        } catch (IOException e) {
            error(name, "opening the log", e);
        }
    }

    private static void critical(String name, long n, String node, File marker, FileOutputStream log)
            throws IOException {
        boolean created = marker.createNewFile();
        if (created) {
            Files.write(marker.toPath(), (name + " " + node).getBytes(StandardCharsets.UTF_8));
        } else {
            VIOLATIONS.incrementAndGet();
            String other;
            try {
                other = new String(Files.readAllBytes(marker.toPath()), StandardCharsets.UTF_8);
            } catch (IOException e) {
                other = "(unreadable: " + e + ")";
            }
            System.err.println("VIOLATION " + name + " holds " + node
                + " (acquisition " + n + ") but the marker exists, written by: "
                + (other.isEmpty() ? "(empty: its holder has just created it)" : other));
        }
        String flag = created ? "ok" : "OVERLAP";
        java.time.Instant now = java.time.Instant.now();
        long micros = now.getEpochSecond() * 1_000_000L + now.getNano() / 1_000;
        log.write((name + " " + n + " " + node + " - " + flag + " " + micros + "\n")
            .getBytes(StandardCharsets.UTF_8));
        long holdNanos = ThreadLocalRandom.current().nextLong(200_000, 3_000_000);
        LockSupport.parkNanos(holdNanos);
        if (created && !marker.delete()) {
            VIOLATIONS.incrementAndGet();
            System.err.println("VIOLATION " + name + " holds " + node
                + " but its marker was gone when it came to delete it");
        }
    }

    private static void error(String name, String what, Exception e) {
        ERRORS.incrementAndGet();
        System.err.println("ERROR-COUNTED " + name + " " + what + ": " + e);
        // Do not spin on a persistent failure.
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50));
    }
}
