// The Curator worker of xtask's harnesses, as zk-worker is ours: one program, the mode first.
//
//   java -cp <classes>:<curator and zookeeper jars> CuratorWorker bench <args>
//       the lock benchmarks' Curator side (CuratorBench.java)
//   java -cp <classes>:<curator and zookeeper jars> CuratorWorker interop <args>
//       every interop run's Curator side (CuratorInterop.java)
//   java -cp <classes>:<curator and zookeeper jars> CuratorWorker chaos <args>
//       the chaos run's Curator side (CuratorChaos.java)
//
// An unknown mode prints "ERROR <usage>" and exits 1.

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.ExponentialBackoffRetry;

public final class CuratorWorker {
    /**
     * Starts `n` clients of `connect`, each its own session, with the settings every harness
     * uses (10 s session timeout, 5 s connection timeout, ExponentialBackoffRetry(100, 5); our
     * workers ask for the same session timeout), and waits until each is connected.
     */
    static List<CuratorFramework> sessions(String connect, int n) throws IOException,
            InterruptedException {
        List<CuratorFramework> sessions = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            CuratorFramework client = CuratorFrameworkFactory.newClient(
                connect, 10_000, 5_000, new ExponentialBackoffRetry(100, 5));
            client.start();
            if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) {
                throw new IOException("client " + i + " did not connect to " + connect);
            }
            sessions.add(client);
        }
        return sessions;
    }

    public static void main(String[] args) {
        String mode = args.length > 0 ? args[0] : "";
        String[] rest = Arrays.copyOfRange(args, Math.min(1, args.length), args.length);
        switch (mode) {
            case "bench":
                CuratorBench.main(rest);
                break;
            case "interop":
                CuratorInterop.main(rest);
                break;
            case "chaos":
                CuratorChaos.main(rest);
                break;
            case "queue":
                CuratorQueue.main(rest);
                break;
            default:
                System.out.println("ERROR usage: CuratorWorker <bench|interop|chaos> <args>, not `"
                    + mode + "`");
                System.out.flush();
                Runtime.getRuntime().halt(1);
        }
    }
}
