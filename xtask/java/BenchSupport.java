// What the Java benchmark workers (JavaClientBench, CuratorBench) share: the latency
// histogram, the RESULT line xtask/src/bench/sample.rs parses, CPU and peak-RSS readings
// from /proc, and the exit discipline (halt when stdin ends, ERROR line on failure).

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.concurrent.TimeUnit;

final class BenchSupport {
    private BenchSupport() {}

    /**
     * Latencies in ns, in fixed memory: the same buckets as xtask's
     * bench::histogram::Histogram (values below 1024 exact, then 10 significant bits).
     */
    static final class Histogram {
        private final int[] counts = new int[56 << 9];
        long total;

        void record(long v) {
            counts[bucket(Math.max(v, 0))]++;
            total++;
        }

        void merge(Histogram other) {
            for (int i = 0; i < counts.length; i++) {
                counts[i] += other.counts[i];
            }
            total += other.total;
        }

        /** Nearest rank, reported as the lowest value of the bucket; 0 if empty. */
        long percentile(int p) {
            long rank = Math.max((total * p + 99) / 100, 1);
            long seen = 0;
            for (int i = 0; i < counts.length; i++) {
                seen += counts[i];
                if (seen >= rank) {
                    return lowest(i);
                }
            }
            return 0;
        }

        static int bucket(long v) {
            if (v < 1024) {
                return (int) v;
            }
            int shift = 63 - Long.numberOfLeadingZeros(v) - 9;
            return (shift << 9) + (int) (v >>> shift);
        }

        static long lowest(int index) {
            if (index < 1024) {
                return index;
            }
            int shift = (index >> 9) - 1;
            long mantissa = (index & 511) | 512;
            return mantissa << shift;
        }
    }

    /** A worker's body. */
    interface Body {
        void run(String[] args) throws Exception;
    }

    /** Runs `body`, then halts: 0 on success, 1 after printing an ERROR line. */
    static void main(String[] args, Body body) {
        try {
            body.run(args);
        } catch (Throwable e) {
            e.printStackTrace();
            System.out.println("ERROR " + e);
            System.out.flush();
            Runtime.getRuntime().halt(1);
        }
        System.out.flush();
        Runtime.getRuntime().halt(0);
    }

    /** Prints the RESULT line. */
    static void printResult(Histogram h, long measureMs, long cpuWindowTicks) throws Exception {
        System.out.println("RESULT ops=" + h.total
                + " measure_ms=" + measureMs
                + " p50_ns=" + h.percentile(50)
                + " p99_ns=" + h.percentile(99)
                + " cpu_window_ticks=" + cpuWindowTicks
                + " cpu_total_ticks=" + cpuTicks()
                + " hwm_kib=" + hwmKib());
    }

    static void sleepUntil(long deadline) throws InterruptedException {
        long left;
        while ((left = deadline - System.nanoTime()) > 0) {
            TimeUnit.NANOSECONDS.sleep(left);
        }
    }

    /** utime + stime of this process, in clock ticks, from /proc/self/stat. */
    static long cpuTicks() throws Exception {
        String stat = new String(Files.readAllBytes(Paths.get("/proc/self/stat")),
                StandardCharsets.US_ASCII);
        String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        return Long.parseLong(f[11]) + Long.parseLong(f[12]);
    }

    /** Peak resident set size (VmHWM) in KiB, from /proc/self/status. */
    static long hwmKib() throws Exception {
        for (String line : Files.readAllLines(Paths.get("/proc/self/status"))) {
            if (line.startsWith("VmHWM:")) {
                return Long.parseLong(line.substring(6).trim().split("\\s+")[0]);
            }
        }
        return 0;
    }

    /** A daemon thread that halts the JVM when stdin ends (the bench went away). */
    static void haltAtEndOfStdin() {
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
}
