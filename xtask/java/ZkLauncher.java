import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.Arrays;

/**
 * Runs another class's {@code main}, optionally tied to the life of the process that started it.
 *
 * <pre>java -cp ... ZkLauncher [--watch-stdin] &lt;MainClass&gt; &lt;args...&gt;</pre>
 *
 * <p>With {@code --watch-stdin}, a daemon thread reads standard input until end of file and then
 * halts the JVM at once. The parent keeps the write end of that pipe open and never writes to it,
 * so when the parent exits for any reason, even SIGKILL, the pipe closes and this JVM dies with it:
 * a ZooKeeper started by a test never outlives the test.
 */
public final class ZkLauncher {
    private ZkLauncher() {}

    public static void main(String[] args) throws Throwable {
        int first = 0;
        boolean watchStdin = false;
        if (args.length > 0 && args[0].equals("--watch-stdin")) {
            watchStdin = true;
            first = 1;
        }
        if (args.length <= first) {
            System.err.println("usage: ZkLauncher [--watch-stdin] <MainClass> <args...>");
            System.exit(2);
        }
        if (watchStdin) {
            Thread watcher = new Thread(ZkLauncher::haltAtEndOfStdin, "xtask-stdin-watcher");
            watcher.setDaemon(true);
            watcher.start();
        }
        Method main = Class.forName(args[first]).getMethod("main", String[].class);
        String[] rest = Arrays.copyOfRange(args, first + 1, args.length);
        try {
            main.invoke(null, (Object) rest);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }

    private static void haltAtEndOfStdin() {
        InputStream in = System.in;
        byte[] buffer = new byte[256];
        try {
            while (in.read(buffer) >= 0) {
                // Nothing is expected on stdin; keep reading until the parent is gone.
            }
        } catch (IOException e) {
            // A broken stdin means the parent is gone too.
        }
        Runtime.getRuntime().halt(0);
    }
}
