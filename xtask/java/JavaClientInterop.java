// The plain Java ZooKeeper client on one side of zk-client's interop test
// (zk-client/tests/java_interop.rs).
//
// Two modes, both printing one line per node on stdout:
//
//   write <connect> <base>
//       Connects, authenticates as digest alice:secret, creates a fixed set of
//       nodes under <base> (data: empty, null, bytes 0..255, 100 KiB; ACLs:
//       open, digest with some permissions, the creator's, ip, several entries
//       in a chosen order; a node with versions and an ACL version; an
//       ephemeral-sequential, a persistent-sequential, a container and a TTL
//       node), prints every node, then "READY". It keeps the session (and so
//       the ephemeral node) until it reads "close" or end of file on stdin,
//       then closes the session and prints "CLOSED".
//
//   read <connect> <path>...
//       Connects, authenticates as digest alice:secret, prints each path with
//       the label "-", then "READY", and exits.
//
// Line format (tab-separated):
//
//   NODE <label> <path> <data> <stat> <acl>
//
//   <data>  lowercase hex, empty for an empty array, "-" for null
//   <stat>  czxid,mzxid,ctime,mtime,version,cversion,aversion,ephemeralOwner,
//           dataLength,numChildren,pzxid (decimal, jute order)
//   <acl>   entries "<perms>:<scheme>:<id>" joined by "," in the server's order
//
// Errors print "ERROR <message>" and exit with status 1. The process halts by
// itself after 60 s, and in read mode when stdin reaches end of file, so it
// never outlives the test that started it.
//
// Build and run:
//
//   CP=/usr/share/java/zookeeper.jar:/usr/share/java/zookeeper-jute.jar:/usr/share/java/slf4j-api.jar:/usr/share/java/slf4j-nop.jar
//   javac -cp $CP -d /tmp/interop xtask/java/JavaClientInterop.java
//   java -cp /tmp/interop:$CP JavaClientInterop write 127.0.0.1:2181 /interop-java

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs.Ids;
import org.apache.zookeeper.ZooDefs.Perms;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.Id;
import org.apache.zookeeper.data.Stat;
import org.apache.zookeeper.server.auth.DigestAuthenticationProvider;

public final class JavaClientInterop {
    private static final long HARD_LIMIT_MS = 60_000;
    private static final String USER = "alice:secret";

    public static void main(String[] args) {
        Thread limit = new Thread(() -> {
            try {
                Thread.sleep(HARD_LIMIT_MS);
            } catch (InterruptedException e) {
                return;
            }
            System.out.println("ERROR hard time limit reached");
            System.out.flush();
            Runtime.getRuntime().halt(4);
        });
        limit.setDaemon(true);
        limit.start();
        try {
            if (args.length >= 3 && args[0].equals("write")) {
                write(args[1], args[2]);
            } else if (args.length >= 2 && args[0].equals("read")) {
                haltAtEndOfStdin();
                read(args[1], Arrays.copyOfRange(args, 2, args.length));
            } else {
                throw new IllegalArgumentException(
                        "usage: write <connect> <base> | read <connect> <path>...");
            }
        } catch (Throwable e) {
            e.printStackTrace();
            System.out.println("ERROR " + e);
            System.out.flush();
            Runtime.getRuntime().halt(1);
        }
        System.out.flush();
        Runtime.getRuntime().halt(0);
    }

    /** Connects, waits for SyncConnected (10 s at most) and adds the digest identity. */
    private static ZooKeeper connect(String connect) throws Exception {
        CountDownLatch connected = new CountDownLatch(1);
        ZooKeeper zk = new ZooKeeper(connect, 10_000, event -> {
            if (event.getState() == Watcher.Event.KeeperState.SyncConnected) {
                connected.countDown();
            }
        });
        if (!connected.await(10, TimeUnit.SECONDS)) {
            throw new IllegalStateException("no connection to " + connect + " within 10 s");
        }
        zk.addAuthInfo("digest", USER.getBytes(StandardCharsets.UTF_8));
        return zk;
    }

    /** A daemon thread that halts the JVM when stdin ends (the parent went away). */
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

    private static final class Made {
        final String label;
        final String path;

        Made(String label, String path) {
            this.label = label;
            this.path = path;
        }
    }

    private static void write(String connect, String base) throws Exception {
        ZooKeeper zk = connect(connect);
        List<Made> made = new ArrayList<>();

        byte[] binary = new byte[256];
        for (int i = 0; i < 256; i++) {
            binary[i] = (byte) i;
        }
        byte[] large = new byte[100 * 1024];
        for (int i = 0; i < large.length; i++) {
            large[i] = (byte) ((i * 31 + 7) % 251);
        }
        Id alice = new Id("digest", DigestAuthenticationProvider.generateDigest(USER));
        Id bob = new Id("digest", DigestAuthenticationProvider.generateDigest("bob:hunter2"));
        Id local = new Id("ip", "127.0.0.1");

        zk.create(base, ascii("base"), Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        made.add(new Made("empty", zk.create(base + "/empty", new byte[0],
                Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT)));
        made.add(new Made("null", zk.create(base + "/null", null,
                Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT)));
        made.add(new Made("binary", zk.create(base + "/binary", binary,
                Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT)));
        made.add(new Made("large", zk.create(base + "/large", large,
                Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT)));
        made.add(new Made("digest", zk.create(base + "/digest", ascii("d"),
                Arrays.asList(new ACL(Perms.READ | Perms.CREATE | Perms.ADMIN, alice)),
                CreateMode.PERSISTENT)));
        made.add(new Made("creator", zk.create(base + "/creator", ascii("c"),
                Ids.CREATOR_ALL_ACL, CreateMode.PERSISTENT)));
        made.add(new Made("ip", zk.create(base + "/ip", ascii("i"),
                Arrays.asList(new ACL(Perms.ALL, local)), CreateMode.PERSISTENT)));
        made.add(new Made("mixed", zk.create(base + "/mixed", ascii("m"),
                Arrays.asList(new ACL(Perms.READ | Perms.WRITE, bob),
                        new ACL(Perms.READ, local),
                        new ACL(Perms.READ | Perms.DELETE, Ids.ANYONE_ID_UNSAFE),
                        new ACL(Perms.ALL, alice)),
                CreateMode.PERSISTENT)));
        String versioned = zk.create(base + "/versioned", ascii("v0"),
                Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        zk.setData(versioned, ascii("v1"), -1);
        zk.setData(versioned, ascii("v2"), 1);
        zk.setACL(versioned, Arrays.asList(new ACL(Perms.READ | Perms.WRITE, Ids.ANYONE_ID_UNSAFE),
                new ACL(Perms.ALL, alice)), 0);
        made.add(new Made("versioned", versioned));
        made.add(new Made("eseq", zk.create(base + "/eseq-", ascii("e"),
                Ids.OPEN_ACL_UNSAFE, CreateMode.EPHEMERAL_SEQUENTIAL)));
        made.add(new Made("pseq", zk.create(base + "/pseq-", ascii("p"),
                Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT_SEQUENTIAL)));
        made.add(new Made("container", zk.create(base + "/container", ascii("k"),
                Ids.OPEN_ACL_UNSAFE, CreateMode.CONTAINER)));
        made.add(new Made("container-child", zk.create(base + "/container/child", ascii("kc"),
                Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT)));
        made.add(new Made("ttl", zk.create(base + "/ttl", ascii("t"),
                Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT_WITH_TTL, new Stat(), 3_600_000L)));
        // Last, so that its child count and pzxid are final.
        made.add(new Made("base", base));

        for (Made m : made) {
            print(zk, m.label, m.path);
        }
        System.out.println("READY");
        System.out.flush();

        BufferedReader in = new BufferedReader(
                new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null && !line.trim().equals("close")) {
            // wait
        }
        zk.close();
        System.out.println("CLOSED");
    }

    private static void read(String connect, String[] paths) throws Exception {
        ZooKeeper zk = connect(connect);
        for (String path : paths) {
            print(zk, "-", path);
        }
        System.out.println("READY");
        zk.close();
    }

    /** Prints one NODE line: getData's bytes and Stat, then getACL's list. */
    private static void print(ZooKeeper zk, String label, String path) throws Exception {
        Stat stat = new Stat();
        byte[] data = zk.getData(path, false, stat);
        Stat aclStat = new Stat();
        List<ACL> acl = zk.getACL(path, aclStat);
        if (!aclStat.equals(stat)) {
            throw new IllegalStateException(path + ": getACL's Stat " + aclStat
                    + " differs from getData's " + stat);
        }
        StringBuilder line = new StringBuilder("NODE\t");
        line.append(label).append('\t').append(path).append('\t');
        if (data == null) {
            line.append('-');
        } else {
            for (byte b : data) {
                line.append(Character.forDigit((b >> 4) & 0xf, 16));
                line.append(Character.forDigit(b & 0xf, 16));
            }
        }
        line.append('\t')
                .append(stat.getCzxid()).append(',')
                .append(stat.getMzxid()).append(',')
                .append(stat.getCtime()).append(',')
                .append(stat.getMtime()).append(',')
                .append(stat.getVersion()).append(',')
                .append(stat.getCversion()).append(',')
                .append(stat.getAversion()).append(',')
                .append(stat.getEphemeralOwner()).append(',')
                .append(stat.getDataLength()).append(',')
                .append(stat.getNumChildren()).append(',')
                .append(stat.getPzxid());
        line.append('\t');
        for (int i = 0; i < acl.size(); i++) {
            ACL a = acl.get(i);
            if (i > 0) {
                line.append(',');
            }
            line.append(a.getPerms()).append(':')
                    .append(a.getId().getScheme()).append(':')
                    .append(a.getId().getId());
        }
        System.out.println(line);
    }

    private static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }
}
