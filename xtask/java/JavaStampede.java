// The Java client's side of `cargo xtask bench stampede` (xtask/src/bench/stampede/): the
// plain ZooKeeper 3.8 client, whose reconnect Curator's clients ride on. Ours is
// `zk-worker stampede` (xtask/src/bench/stampede/ours.rs), with the same arguments and lines
// (xtask/src/bench/stampede/lines.rs). Compiled on its own with BenchSupport.java.
//
//   java -cp <classes>:<zookeeper jars> JavaStampede <connect> <n> <budget ms> [<first>]
//
// Connects <n> ZooKeeper clients at once (10 s session timeout). With <first> (one of the
// connect string's addresses), each client's host order is the client's own
// (StaticHostProvider's, from a seed) picked among those that start at <first>: every session
// starts there, and goes on in a random order of its own. Then
//
//   READY on=<addr>=<n>,...           where each sits (the client's remote address)
//   CUT <addr>|all                    (from the bench) follows every client at <addr> (or all)
//   ARMED
//   BACK tracked=<n> back=<n> ended=<n> first_us=<us> p50_us=<us> p99_us=<us> last_us=<us> on=...
//   CLOSE                             (from the bench) closes every client and exits
//
// A followed client is back at its first SyncConnected after a Disconnected; it ended at
// Expired, AuthFailed or Closed. It fails ("ERROR <message>", exit 1) when its clients do not
// all connect within <budget ms>, and halts when its stdin ends.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.client.StaticHostProvider;

public final class JavaStampede {
    private static final int SESSION_TIMEOUT_MS = 10_000;
    private static final Pattern REMOTE = Pattern.compile("remoteserver:[^ ]*/([0-9.]+:[0-9]+)");

    public static void main(String[] args) {
        BenchSupport.main(args, JavaStampede::run);
    }

    /** One client's watcher: its first connection, then, once armed, its return. */
    private static final class Follower implements Watcher {
        final CountDownLatch connected = new CountDownLatch(1);
        ZooKeeper zk;
        private CountDownLatch done;
        private long armedAt;
        private boolean left;
        private long backAt = -1;
        private boolean ended;

        synchronized void arm(CountDownLatch done, long at) {
            this.done = done;
            this.armedAt = at;
        }

        synchronized long delayNanos() {
            return backAt < 0 ? -1 : backAt - armedAt;
        }

        synchronized boolean ended() {
            return ended;
        }

        @Override
        public synchronized void process(WatchedEvent e) {
            if (e.getType() != Event.EventType.None) {
                return;
            }
            boolean armed = done != null;
            switch (e.getState()) {
                case SyncConnected:
                case ConnectedReadOnly:
                    connected.countDown();
                    if (armed && left && backAt < 0 && !ended) {
                        backAt = System.nanoTime();
                        done.countDown();
                    }
                    break;
                case Disconnected:
                    left = armed || left;
                    break;
                case Expired:
                case AuthFailed:
                case Closed:
                    if (armed && backAt < 0 && !ended) {
                        ended = true;
                        done.countDown();
                    }
                    break;
                default:
                    break;
            }
        }
    }

    /** The client's remote address, from its description ("remoteserver:/127.0.0.1:port"). */
    private static String remote(ZooKeeper zk) {
        Matcher m = REMOTE.matcher(zk.toString());
        return m.find() ? m.group(1) : "none";
    }

    private static String placement(List<Follower> all) {
        Map<String, Integer> on = new TreeMap<>();
        for (Follower f : all) {
            String addr = remote(f.zk);
            if (!addr.equals("none")) {
                on.merge(addr, 1, Integer::sum);
            }
        }
        List<String> parts = new ArrayList<>();
        for (Map.Entry<String, Integer> e : on.entrySet()) {
            parts.add(e.getKey() + "=" + e.getValue());
        }
        return String.join(",", parts);
    }

    private static InetSocketAddress address(String hostPort) {
        int colon = hostPort.lastIndexOf(':');
        return new InetSocketAddress(hostPort.substring(0, colon),
                Integer.parseInt(hostPort.substring(colon + 1)));
    }

    /** The nearest-rank percentile of sorted `v` (as the Rust side's). */
    private static long pick(List<Long> v, double q) {
        if (v.isEmpty()) {
            return 0;
        }
        int rank = (int) Math.ceil(v.size() * q);
        rank = Math.max(1, Math.min(rank, v.size())) - 1;
        return v.get(rank);
    }

    private static void run(String[] args) throws Exception {
        if (args.length != 3 && args.length != 4) {
            throw new IllegalArgumentException("usage: <connect> <n> <budget ms> [<first>]");
        }
        String connect = args[0];
        int n = Integer.parseInt(args[1]);
        long budgetMs = Long.parseLong(args[2]);
        InetSocketAddress first = args.length == 4 ? address(args[3]) : null;
        List<InetSocketAddress> hosts = new ArrayList<>();
        for (String host : connect.split(",")) {
            hosts.add(address(host));
        }
        BlockingQueue<String> lines = readLinesFromStdin();

        List<Follower> all = new ArrayList<>(n);
        long seed = 0;
        for (int i = 0; i < n; i++) {
            Follower f = new Follower();
            if (first == null) {
                f.zk = new ZooKeeper(connect, SESSION_TIMEOUT_MS, f);
            } else {
                // The next seed whose order starts at `first`.
                while (!new StaticHostProvider(hosts, seed).next(0).equals(first)) {
                    seed++;
                }
                f.zk = new ZooKeeper(connect, SESSION_TIMEOUT_MS, f, false,
                        new StaticHostProvider(hosts, seed));
                seed++;
            }
            all.add(f);
        }
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(budgetMs);
        for (Follower f : all) {
            long left = deadline - System.nanoTime();
            if (!f.connected.await(Math.max(0, left), TimeUnit.NANOSECONDS)) {
                throw new IllegalStateException("not every session connected within the budget");
            }
        }
        System.out.println("READY on=" + placement(all));
        System.out.flush();

        String line = lines.poll(budgetMs, TimeUnit.MILLISECONDS);
        if (line == null || !line.startsWith("CUT ")) {
            throw new IllegalStateException("`" + line + "` from the bench, not `CUT <addr>`");
        }
        String cut = line.substring(4).trim();
        List<Follower> tracked = new ArrayList<>();
        for (Follower f : all) {
            if (cut.equals("all") || remote(f.zk).equals(cut)) {
                tracked.add(f);
            }
        }
        CountDownLatch done = new CountDownLatch(tracked.size());
        long armedAt = System.nanoTime();
        for (Follower f : tracked) {
            f.arm(done, armedAt);
        }
        System.out.println("ARMED");
        System.out.flush();
        done.await(budgetMs, TimeUnit.MILLISECONDS);

        List<Long> delays = new ArrayList<>();
        int ended = 0;
        for (Follower f : tracked) {
            long d = f.delayNanos();
            if (d >= 0) {
                delays.add(d / 1_000);
            } else if (f.ended()) {
                ended++;
            }
        }
        Collections.sort(delays);
        System.out.println("BACK tracked=" + tracked.size()
                + " back=" + delays.size()
                + " ended=" + ended
                + " first_us=" + (delays.isEmpty() ? 0 : delays.get(0))
                + " p50_us=" + pick(delays, 0.5)
                + " p99_us=" + pick(delays, 0.99)
                + " last_us=" + (delays.isEmpty() ? 0 : delays.get(delays.size() - 1))
                + " on=" + placement(all));
        System.out.flush();

        line = lines.poll(budgetMs, TimeUnit.MILLISECONDS);
        if (line == null || !line.trim().equals("CLOSE")) {
            throw new IllegalStateException("`" + line + "` from the bench, not `CLOSE`");
        }
        for (Follower f : all) {
            f.zk.close(1_000);
        }
    }

    /** Each line of stdin; the end of stdin halts the JVM (the bench went away). */
    private static BlockingQueue<String> readLinesFromStdin() {
        BlockingQueue<String> lines = new LinkedBlockingQueue<>();
        Thread t = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(
                    new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null) {
                    lines.add(line);
                }
            } catch (Exception e) {
                // same as end of file
            }
            Runtime.getRuntime().halt(3);
        });
        t.setDaemon(true);
        t.start();
        return lines;
    }
}
