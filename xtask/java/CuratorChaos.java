// The Curator side of `cargo xtask chaos` (xtask/src/chaos/), the `chaos` mode of
// CuratorWorker: Apache Curator 5.4's five lock recipes on the chaos run's paths, under the
// same nemesis as ours. Its arguments are our worker's (xtask/src/chaos/ours.rs, OursConfig):
//
//   java -cp <classes>:<curator and zookeeper jars> CuratorWorker chaos \
//       <connect> <process> <clients per recipe> <run ms> <dir> <leases> <session ms>
//       <fence|no-fence (ignored)> <recipes, comma-separated>
//
// For each recipe, <clients> threads, each with its own CuratorFramework (its own session,
// ExponentialBackoffRetry). It prints READY once every client is connected and waits for GO;
// each thread then loops until the run's end: acquire in a style (release: with the time left
// as timeout; timeout: a short one; cancel: interrupted after 1..40 ms if still acquiring;
// drop has no Curator form and is taken as release), and while holding, update the recipe's
// protected register(s) through the process's store session (60 s timeout, outliving a pause):
// read with its Stat, wait 0.2..3 ms, setData(read + 1) at the version
// read (a Curator user's best: it refuses a write after another's, not a write by a holder
// whose session is gone that read afresh). A connection state SUSPENDED or LOST while holding
// is the hold's lost signal (as Curator's documentation asks holders to take it). Each hold
// also leaves its mark for the log judge (xtask/src/chaos/judge/marks.rs): an EPHEMERAL node
// /chaos-marks/<client>-<n> of the holder's session, plainly created after the acquire with
// data "java <lock> <mode> <node>@<czxid> ..." (the lock /chaos/<recipe>; the mode exclusive,
// read, write or lease), deleted before the release; register values are
// "<value> java <lock> <mode> <node>@<czxid>", the register's own lock (the multi-lock's
// register k: member k, /chaos/multilock/<k>) and its node held. The lines
// (xtask/src/chaos/history.rs) go to <dir>/java-<process>.history:
//
//   HOLD who=java-<p>.<recipe>.<i> n=.. on=.. mode=.. from=<ns> to=<ns> node=.. token=-
//   ACQ who=.. n=.. style=<release|timeout|cancel> start=<ns> end=<ns|-> outcome=<held|timeout|cancelled|error:<kind>|unfinished>
//   WRITE who=.. n=.. reg=<name> read=<v> sent=<ns> replied=<ns> result=<ok:<version>|badversion|error:<kind>>
//   LOST who=.. n=.. at=<ns>
//
// Then it prints "DONE events=<n>", waits for CLOSE (or the end of stdin), closes its
// sessions and exits 0. Paths (xtask/src/chaos/layout.rs): locks under /chaos/<recipe>
// (/chaos/multilock/0..2), registers under /chaos-registers/<recipe> (multilock-<k>); the
// semaphore has no register.

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
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
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.data.Stat;

public final class CuratorChaos {
    private static final String ROOT = "/chaos";
    private static final String REGISTERS = "/chaos-registers";
    /** Where each hold leaves its mark (xtask/src/chaos/judge/marks.rs). */
    private static final String MARKS = "/chaos-marks";
    private static final int MEMBERS = 3;
    private static final StringBuffer LINES = new StringBuffer();
    private static final AtomicLong EVENTS = new AtomicLong();
    /** Acquires under way, by client: the ACQ line's start, for those that never end. */
    private static final Map<String, String> ACQUIRING = new ConcurrentHashMap<>();
    /** The store's session: registers are read and written through it (60 s timeout: it
     * outlives a pause of this process, as a real store would). */
    private static CuratorFramework store;

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

    static void line(String text) {
        LINES.append(text + "\n"); // one append: StringBuffer locks each call, not a pair
        EVENTS.incrementAndGet();
    }

    /** One client: its name, session, count and the hold it is in (0: none). */
    static final class Client {
        final String name;
        final String recipe;
        final CuratorFramework zk;
        final long end;
        long n;
        volatile long holding;

        Client(String name, String recipe, CuratorFramework zk, long end) {
            this.name = name;
            this.recipe = recipe;
            this.zk = zk;
            this.end = end;
            session();
            zk.getConnectionStateListenable().addListener((c, state) -> {
                long h = holding;
                // What Curator's documentation asks of a holder: SUSPENDED already means the
                // lock may be gone (ours says the same at a disconnect: Loss::Unsure).
                if ((state == ConnectionState.SUSPENDED || state == ConnectionState.LOST)
                        && h != 0) {
                    line("LOST who=" + name + " n=" + h + " at=" + CuratorInterop.now());
                }
                if (state == ConnectionState.CONNECTED || state == ConnectionState.RECONNECTED) {
                    session();
                }
            });
        }

        /** Records the session the client has now (a node left is traced to it). */
        void session() {
            try {
                long id = zk.getZookeeperClient().getZooKeeper().getSessionId();
                line("SESSION who=" + name + " id=0x" + Long.toHexString(id) + " at="
                    + CuratorInterop.now());
            } catch (Exception e) {
                System.err.println("CuratorChaos " + name + " session id: " + e);
            }
        }

        boolean over() {
            return System.nanoTime() >= end;
        }
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
        if (args.length != 9) {
            throw new IllegalArgumentException("usage: CuratorWorker chaos <connect> <process> "
                + "<clients per recipe> <run ms> <dir> <leases> <session ms> <fence|no-fence> "
                + "<recipes>");
        }
        String connect = args[0];
        int process = Integer.parseInt(args[1]);
        int clients = Integer.parseInt(args[2]);
        long runMs = Long.parseLong(args[3]);
        File dir = new File(args[4]);
        int leases = Integer.parseInt(args[5]);
        int sessionMs = Integer.parseInt(args[6]);
        String[] recipes = args[8].split(",");

        List<CuratorFramework> sessions = new ArrayList<>();
        for (int i = 0; i < recipes.length * clients; i++) {
            CuratorFramework zk = CuratorFrameworkFactory.newClient(connect, sessionMs,
                Math.min(5_000, sessionMs), new ExponentialBackoffRetry(100, 5));
            zk.start();
            if (!zk.blockUntilConnected(30, TimeUnit.SECONDS)) {
                throw new IOException("client " + i + " did not connect to " + connect);
            }
            sessions.add(zk);
        }
        store = CuratorFrameworkFactory.newClient(connect, 60_000, 5_000,
            new ExponentialBackoffRetry(100, 5));
        store.start();
        if (!store.blockUntilConnected(30, TimeUnit.SECONDS)) {
            throw new IOException("the store client did not connect to " + connect);
        }
        BufferedReader stdin = new BufferedReader(
            new InputStreamReader(System.in, StandardCharsets.UTF_8));
        System.out.println("READY");
        System.out.flush();
        String go = stdin.readLine();
        if (go == null || !go.trim().equals("GO")) {
            throw new IOException("expected GO on stdin, got " + go);
        }
        CuratorInterop.anchorClock();
        long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(runMs);
        // The harness's lines during the run (STOP-AT-HOLD, STOP-CANCEL, RESUMED: see
        // stopIfAimed); CLOSE (or the end of stdin) comes after DONE.
        java.util.concurrent.CountDownLatch closed = new java.util.concurrent.CountDownLatch(1);
        Thread reader = new Thread(() -> {
            try {
                for (String l; (l = stdin.readLine()) != null; ) {
                    if (l.trim().equals("CLOSE")) {
                        break;
                    }
                    harnessLine(l.trim());
                }
            } catch (IOException e) {
                // the harness is gone: close as for CLOSE
            }
            closed.countDown();
        }, "stdin");
        reader.setDaemon(true);
        reader.start();
        Thread deadman = new Thread(() -> {
            long haltAt = end + TimeUnit.SECONDS.toNanos(300);
            for (long left; (left = haltAt - System.nanoTime()) > 0; ) {
                LockSupport.parkNanos(left);
            }
            System.err.println("CuratorChaos: still running 300 s after its run; halting");
            Runtime.getRuntime().halt(4);
        });
        deadman.setDaemon(true);
        deadman.start();

        List<Thread> threads = new ArrayList<>();
        int s = 0;
        for (String recipe : recipes) {
            for (int i = 0; i < clients; i++) {
                String name = "java-" + process + "." + recipe + "." + i;
                Client c = new Client(name, recipe, sessions.get(s++), end);
                Thread t = new Thread(() -> body(c, leases), name);
                t.setDaemon(true);
                t.start();
                threads.add(t);
            }
        }
        long waitUntil = end + TimeUnit.MILLISECONDS.toNanos(2L * sessionMs + 10_000);
        for (Thread t : threads) {
            long left = waitUntil - System.nanoTime();
            if (left > 0) {
                t.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
            }
        }
        for (String started : ACQUIRING.values()) {
            line(started + " end=- outcome=unfinished");
        }
        Files.write(new File(dir, "java-" + process + ".history").toPath(),
            LINES.toString().getBytes(StandardCharsets.UTF_8));
        System.out.println("DONE events=" + EVENTS.get());
        System.out.flush();
        closed.await(); // CLOSE, or the end of stdin
        for (CuratorFramework zk : sessions) {
            zk.close();
        }
        store.close();
    }

    private static void body(Client c, int leases) {
        String path = ROOT + "/" + c.recipe;
        try {
            switch (c.recipe) {
                case "mutex": {
                    Mutex m = new Mutex(c.zk, path);
                    while (!c.over()) {
                        cycle(c, m, "lock", "x", List.of("mutex"), m, () -> List.of(lockPath(m)));
                    }
                    break;
                }
                case "rwlock": {
                    InterProcessReadWriteLock rw = new InterProcessReadWriteLock(c.zk, path);
                    while (!c.over()) {
                        if (ThreadLocalRandom.current().nextInt(10) < 3) {
                            cycle(c, rw.writeLock(), "lock", "w", List.of("rwlock"), null,
                                () -> List.of(lockPath(rw.writeLock())));
                        } else {
                            cycle(c, rw.readLock(), "lock", "r", List.of(), null,
                                () -> List.of(lockPath(rw.readLock())));
                        }
                    }
                    break;
                }
                case "multilock": {
                    List<Mutex> members = new ArrayList<>();
                    List<String> regs = new ArrayList<>();
                    for (int k = 0; k < MEMBERS; k++) {
                        members.add(new Mutex(c.zk, path + "/" + k));
                        regs.add("multilock-" + k);
                    }
                    // Curator's own member type (InterProcessMultiLock(client, paths) makes
                    // InterProcessMutexes too), so that each member's node can be named.
                    InterProcessMultiLock lock =
                        new InterProcessMultiLock(new ArrayList<InterProcessLock>(members));
                    java.util.function.Supplier<List<String>> nodes = () -> {
                        List<String> held = new ArrayList<>();
                        for (Mutex m : members) {
                            held.add(lockPath(m));
                        }
                        return held;
                    };
                    while (!c.over()) {
                        cycle(c, lock, "member", "x", regs, null, nodes);
                    }
                    break;
                }
                case "semaphore":
                    semaphoreLoop(c, new InterProcessSemaphoreV2(c.zk, path, leases), path);
                    break;
                case "semaphore-mutex": {
                    InterProcessSemaphoreMutex lock = new InterProcessSemaphoreMutex(c.zk, path);
                    while (!c.over()) {
                        cycle(c, lock, "leases", "lease", List.of("semaphore-mutex"), null,
                            () -> List.of(path + "/leases/" + leaseName(lock)));
                    }
                    break;
                }
                default:
                    throw new IllegalArgumentException("unknown recipe " + c.recipe);
            }
        } catch (Throwable e) {
            System.err.println("CuratorChaos " + c.name + ": " + e);
        }
    }

    /** A style, drawn: release, timeout or cancel (drop has no Curator form). */
    private static String style() {
        int r = ThreadLocalRandom.current().nextInt(4);
        return r == 1 ? "timeout" : r == 3 ? "cancel" : "release";
    }

    /** One acquisition: given the timeout, what was held, or null when the time passed. */
    interface Attempt<T> {
        T run(long timeoutMs) throws Exception;
    }

    /**
     * Acquires in a style drawn at random (its timeout, a cancel by interrupt); the ACQ line
     * is written. What was held, or null (after an error, a short pause first).
     */
    private static <T> T acquire(Client c, Attempt<T> attempt) {
        String style = style();
        long n = ++c.n;
        long start = CuratorInterop.now();
        String head = "ACQ who=" + c.name + " n=" + n + " style=" + style + " start=" + start;
        ACQUIRING.put(c.name, head);
        long left = TimeUnit.NANOSECONDS.toMillis(Math.max(0, c.end - System.nanoTime()));
        long timeout = style.equals("timeout")
            ? Math.min(left, 20 + ThreadLocalRandom.current().nextInt(400))
            : left;
        Canceller cancel = style.equals("cancel")
            ? new Canceller(Thread.currentThread(), 1 + ThreadLocalRandom.current().nextInt(40))
            : null;
        String outcome;
        T held = null;
        try {
            held = attempt.run(timeout);
            outcome = held != null ? "held" : "timeout";
        } catch (InterruptedException e) {
            outcome = "cancelled";
        } catch (Exception e) {
            outcome = cancel != null && cancel.fired() ? "cancelled" : "error:" + kind(e);
        }
        if (cancel != null) {
            cancel.settle();
        }
        ACQUIRING.remove(c.name);
        line(head + " end=" + CuratorInterop.now() + " outcome=" + outcome);
        if (outcome.startsWith("error")) {
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50));
        }
        return held;
    }

    /** Interrupts a thread still acquiring after a while; settled once the acquire returns. */
    static final class Canceller {
        private final AtomicBoolean armed = new AtomicBoolean(true);
        private final AtomicBoolean done = new AtomicBoolean(false);
        private final Thread timer;

        Canceller(Thread target, long afterMs) {
            timer = new Thread(() -> {
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(afterMs));
                if (armed.compareAndSet(true, false)) {
                    target.interrupt();
                }
                done.set(true);
            });
            timer.setDaemon(true);
            timer.start();
        }

        boolean fired() {
            return !armed.get();
        }

        /** Disarms, or waits for the interrupt to land and clears it. */
        void settle() {
            if (!armed.compareAndSet(true, false)) {
                while (!done.get()) {
                    Thread.onSpinWait();
                }
            }
            Thread.interrupted();
        }
    }

    /** A mutex's node (InterProcessMutex.getLockPath is protected: read by reflection). */
    static String lockPath(InterProcessMutex lock) {
        try {
            java.lang.reflect.Method m = InterProcessMutex.class.getDeclaredMethod("getLockPath");
            m.setAccessible(true);
            return (String) m.invoke(lock);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    /** A semaphore mutex's lease node's name (its private field `lease`, by reflection). */
    static String leaseName(InterProcessSemaphoreMutex lock) {
        try {
            java.lang.reflect.Field f = InterProcessSemaphoreMutex.class.getDeclaredField("lease");
            f.setAccessible(true);
            Lease lease = (Lease) f.get(lock);
            return lease == null ? null : lease.getNodeName();
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * Leaves the hold's mark (xtask/src/chaos/judge/marks.rs): an EPHEMERAL node of the
     * holder's own session naming each node held with its token (its czxid, read here:
     * Curator has no fencing token). Fills tokens; the mark's path, or null if no node
     * held could be named (gone already). A mark whose create failed is still deleted.
     */
    private static String mark(Client c, String lock, String mode, List<String> nodes,
            long[] tokens) {
        StringBuilder data = new StringBuilder("java ").append(lock).append(' ')
            .append(markMode(mode));
        try {
            for (int i = 0; i < nodes.size(); i++) {
                Stat stat = nodes.get(i) == null ? null : c.zk.checkExists().forPath(nodes.get(i));
                if (stat == null) {
                    return null;
                }
                tokens[i] = stat.getCzxid();
                data.append(' ').append(nodes.get(i)).append('@').append(tokens[i]);
            }
        } catch (Exception e) {
            return null;
        }
        return MARKS + "/" + c.name + "-" + c.n + "\n" + data;
    }

    /** Creates the mark `pending` (path, newline, data); whether it was surely created. */
    private static boolean create(Client c, String pending) {
        int cut = pending.indexOf('\n');
        try {
            c.zk.create().withMode(CreateMode.EPHEMERAL).forPath(pending.substring(0, cut),
                pending.substring(cut + 1).getBytes(StandardCharsets.UTF_8));
            return true;
        } catch (KeeperException.NodeExistsException e) {
            return true; // a retry after a lost reply
        } catch (Exception e) {
            return false;
        }
    }

    /** Deletes the mark before the release. */
    private static void unmark(Client c, String pending) {
        try {
            c.zk.delete().forPath(pending.substring(0, pending.indexOf('\n')));
        } catch (Exception e) {
            // NoNode: never made, or gone with its session; else it goes with the session.
        }
    }

    /** The mode a mark or a register value names for a HOLD line's mode (marks.rs's Mode). */
    private static String markMode(String mode) {
        switch (mode) {
            case "x":
                return "exclusive";
            case "r":
                return "read";
            case "w":
                return "write";
            case "lease":
                return "lease";
            default:
                throw new IllegalArgumentException("no mark mode for " + mode);
        }
    }

    private static void cycle(Client c, InterProcessLock lock, String on, String mode,
            List<String> regs, Mutex node, java.util.function.Supplier<List<String>> held) {
        if (acquire(c, t -> lock.acquire(t, TimeUnit.MILLISECONDS) ? Boolean.TRUE : null) == null) {
            return;
        }
        long n = c.n;
        c.holding = n;
        long from = CuratorInterop.now();
        List<String> nodes;
        try {
            nodes = held.get();
        } catch (RuntimeException e) {
            System.err.println("CuratorChaos " + c.name + " nodes: " + e);
            nodes = List.of();
        }
        long[] tokens = new long[nodes.size()];
        String path = ROOT + "/" + c.recipe;
        String pending = nodes.isEmpty() ? null : mark(c, path, mode, nodes, tokens);
        boolean marked = pending != null && create(c, pending);
        // Unmarked, the hold writes nothing (the log would show a write no mark stands for).
        if (marked && !regs.isEmpty()) {
            stopIfAimed(c.name);
        }
        work(c, marked ? regs : List.of(), mode, nodes, tokens);
        long to = CuratorInterop.now(); // the hold, as the clients' checker sees it
        if (pending != null) {
            unmark(c, pending);
        }
        c.holding = 0;
        String nodeName = node == null ? "-" : node.ourNode();
        if (on.equals("member")) {
            for (int k = 0; k < MEMBERS; k++) {
                line("HOLD who=" + c.name + " n=" + n + " on=member-" + k + " mode=" + mode
                    + " from=" + from + " to=" + to + " node=- token=-");
            }
        } else {
            line("HOLD who=" + c.name + " n=" + n + " on=" + on + " mode=" + mode + " from="
                + from + " to=" + to + " node=" + nodeName + " token=-");
        }
        try {
            lock.release();
        } catch (Exception e) {
            System.err.println("CuratorChaos " + c.name + " release: " + e);
        }
    }

    /** Set by the harness's STOP-AT-HOLD (cleared by STOP-CANCEL). */
    private static final AtomicBoolean STOP_AT_HOLD = new AtomicBoolean();
    /** How many RESUMED lines the harness has sent (guarded by itself). */
    private static final long[] RESUMES = {0};

    /** The harness's lines during the run (see stopIfAimed). */
    private static void harnessLine(String l) {
        if (l.equals("STOP-AT-HOLD")) {
            STOP_AT_HOLD.set(true);
        } else if (l.equals("STOP-CANCEL")) {
            STOP_AT_HOLD.set(false);
        } else if (l.equals("RESUMED")) {
            synchronized (RESUMES) {
                RESUMES[0]++;
                RESUMES.notifyAll();
            }
        }
    }

    /**
     * If a pause is aimed (STOP-AT-HOLD), says "STOPPING <who>" and waits until the harness
     * has stopped this JVM (SIGSTOP), resumed it and said RESUMED (30 s at most). Called when
     * a hold has made its mark and before its writes.
     */
    private static void stopIfAimed(String who) {
        long before;
        synchronized (RESUMES) {
            before = RESUMES[0];
        }
        if (!STOP_AT_HOLD.getAndSet(false)) {
            return;
        }
        synchronized (System.out) {
            System.out.println("STOPPING " + who);
            System.out.flush();
        }
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        synchronized (RESUMES) {
            for (long left; RESUMES[0] == before && (left = until - System.nanoTime()) > 0; ) {
                try {
                    TimeUnit.NANOSECONDS.timedWait(RESUMES, left);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }
    }

    /**
     * Reads each register, waits, writes each one more at the version read, each under its
     * own lock's node (register i of the multi-lock under member i's; else the one node).
     */
    private static void work(Client c, List<String> regs, String mode, List<String> nodes,
            long[] tokens) {
        long[] read = new long[regs.size()];
        int[] versions = new int[regs.size()];
        try {
            for (int i = 0; i < regs.size(); i++) {
                Stat stat = new Stat();
                byte[] data = store.getData().storingStatIn(stat)
                    .forPath(REGISTERS + "/" + regs.get(i));
                read[i] = Long.parseLong(
                    new String(data, StandardCharsets.UTF_8).trim().split("\\s+")[0]);
                versions[i] = stat.getVersion();
            }
        } catch (Exception e) {
            return;
        }
        LockSupport.parkNanos(ThreadLocalRandom.current().nextLong(200_000, 3_000_000));
        for (int i = 0; i < regs.size(); i++) {
            long sent = CuratorInterop.now();
            String result;
            try {
                // The value, then who wrote it: the register's lock (the multi-lock's member
                // i, else the recipe's), the mode held, the node of that lock held, its token.
                boolean multi = c.recipe.equals("multilock");
                String lock = ROOT + "/" + c.recipe + (multi ? "/" + i : "");
                int h = multi ? i : 0;
                String node = h < nodes.size() ? nodes.get(h) : "-";
                long token = h < nodes.size() ? tokens[h] : 0;
                String value = (read[i] + 1) + " java " + lock + " " + markMode(mode) + " "
                    + node + "@" + token;
                Stat stat = store.setData().withVersion(versions[i])
                    .forPath(REGISTERS + "/" + regs.get(i),
                        value.getBytes(StandardCharsets.UTF_8));
                result = "ok:" + stat.getVersion();
            } catch (KeeperException.BadVersionException e) {
                result = "badversion";
            } catch (Exception e) {
                result = "error:" + kind(e);
            }
            line("WRITE who=" + c.name + " n=" + c.n + " reg=" + regs.get(i) + " read=" + read[i]
                + " sent=" + sent + " replied=" + CuratorInterop.now() + " result=" + result);
        }
    }

    private static void semaphoreLoop(Client c, InterProcessSemaphoreV2 semaphore, String path) {
        while (!c.over()) {
            Collection<Lease> held =
                acquire(c, t -> semaphore.acquire(1, t, TimeUnit.MILLISECONDS));
            if (held == null) {
                continue;
            }
            long n = c.n;
            c.holding = n;
            long from = CuratorInterop.now();
            List<String> nodes = new ArrayList<>();
            for (Lease lease : held) {
                nodes.add(path + "/leases/" + lease.getNodeName()); // the name only
            }
            String pending = mark(c, path, "lease", nodes, new long[nodes.size()]);
            if (pending != null) {
                create(c, pending);
            }
            LockSupport.parkNanos(ThreadLocalRandom.current().nextLong(200_000, 3_000_000));
            long to = CuratorInterop.now();
            if (pending != null) {
                unmark(c, pending);
            }
            c.holding = 0;
            for (Lease lease : held) {
                String node = lease.getNodeName();
                line("HOLD who=" + c.name + " n=" + n + " on=leases mode=lease from=" + from
                    + " to=" + to + " node="
                    + (node == null ? "-" : node.substring(node.lastIndexOf('/') + 1))
                    + " token=-");
            }
            semaphore.returnAll(held);
        }
    }

    /** An exception's kind, one word: its class's simple name. */
    private static String kind(Throwable e) {
        return e.getClass().getSimpleName().isEmpty() ? "Exception" : e.getClass().getSimpleName();
    }
}
