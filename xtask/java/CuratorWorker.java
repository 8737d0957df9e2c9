// The Curator worker of xtask's harnesses, as zk-worker is ours: one program, the mode first.
//
//   java -cp <classes>:<curator and zookeeper jars> CuratorWorker bench <args>
//       the lock benchmarks' Curator side (CuratorBench.java)
//   java -cp <classes>:<curator and zookeeper jars> CuratorWorker interop <args>
//       every interop run's Curator side (CuratorInterop.java)
//
// An unknown mode prints "ERROR <usage>" and exits 1.

import java.util.Arrays;

public final class CuratorWorker {
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
            default:
                System.out.println("ERROR usage: CuratorWorker <bench|interop> <args>, not `"
                    + mode + "`");
                System.out.flush();
                Runtime.getRuntime().halt(1);
        }
    }
}
