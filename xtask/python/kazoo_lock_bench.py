#!/usr/bin/python3
"""The kazoo side of the lock benchmarks, `cargo xtask bench <recipe>` (xtask/src/bench/locks/).

kazoo's lock recipes (``Lock``, ``ReadLock``/``WriteLock``, ``Semaphore``),
<sessions> contenders in this one process, each looping acquire -> release on
one lock path, printing one RESULT line. Ours is ``zk-worker bench ...
<workload>`` (xtask/src/bin/zk-worker.rs), Curator's is ``CuratorWorker bench``
(xtask/java/CuratorBench.java).

    /usr/bin/python3 kazoo_lock_bench.py <connect> <lock path> <sessions> \\
        <warmup ms> <measure ms> [workload]

<workload> (default mutex) is the lock each cycle takes: mutex (``client.Lock``),
read or write (``client.ReadLock``, ``client.WriteLock``), rwmix:<P> (the read
lock with probability P per cent, else the write lock), semmutex (``client.Semaphore``
with one lease), sem:<N> (``client.Semaphore`` with N leases; kazoo's own protocol, not
Curator's). kazoo has no multi-lock.

Each contender is a thread with its own ``KazooClient`` (its own session, 10 s
session timeout, the default threading handler) and its own
``client.Lock(path)``. Once every client is connected, the contenders loop

    lock.acquire() -> lock.release()

one cycle's latency measured from before ``acquire()`` to after ``release()``
returns (``release()`` waits for its delete). They run <warmup ms> unmeasured,
then <measure ms> measured: a cycle counts when it completes inside the
window. At the window's start and end this prints WINDOW_START and WINDOW_END
(the bench reads the server's counters then). After the window each contender
finishes its cycle in progress and stops.

Output (one line, space-separated key=value, as the other workers):

    RESULT ops=<cycles> measure_ms=<ms> p50_ns=<ns> p99_ns=<ns>
           cpu_window_ticks=<utime+stime during the window, clock ticks>
           cpu_total_ticks=<utime+stime at the end> hwm_kib=<VmHWM>

p50/p99 are nearest-rank percentiles from a fixed-memory histogram with the
same buckets as xtask's bench::histogram::Histogram (0.2% precision).

It exits when its stdin reaches end of file (the bench went away), and prints
"ERROR <message>" and exits 1 on any failure.
"""

import logging
import os
import random
import sys
import threading
import time

from kazoo.client import KazooClient

SESSION_TIMEOUT_S = 10.0
SUB_BITS = 9
BUCKETS = 56 << SUB_BITS


def bucket(v):
    """The histogram bucket of ``v`` ns (as bench::histogram)."""
    if v < 1024:
        return max(v, 0)
    shift = v.bit_length() - 1 - SUB_BITS
    return (shift << SUB_BITS) + (v >> shift)


def lowest(index):
    """The smallest value in bucket ``index``."""
    if index < 1024:
        return index
    shift = (index >> SUB_BITS) - 1
    mantissa = (index & ((1 << SUB_BITS) - 1)) | (1 << SUB_BITS)
    return mantissa << shift


def percentile(counts, total, p):
    """Nearest rank, reported as the lowest value of the bucket; 0 if empty."""
    rank = max((total * p + 99) // 100, 1)
    seen = 0
    for index, count in enumerate(counts):
        seen += count
        if seen >= rank:
            return lowest(index)
    return 0


def cpu_ticks():
    """utime + stime of this process, in clock ticks, from /proc/self/stat."""
    with open("/proc/self/stat", "rb") as f:
        stat = f.read().decode("ascii")
    fields = stat[stat.rindex(")") + 2:].split()
    return int(fields[11]) + int(fields[12])


def hwm_kib():
    """Peak resident set size (VmHWM) in KiB, from /proc/self/status."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def exit_at_end_of_stdin():
    """A daemon thread that exits the process when stdin ends."""

    def watch():
        try:
            while sys.stdin.buffer.read(64):
                pass
        except Exception:  # the same as end of file
            pass
        os._exit(3)

    threading.Thread(target=watch, daemon=True).start()


def sleep_until(deadline):
    while True:
        left = deadline - time.monotonic_ns()
        if left <= 0:
            return
        time.sleep(left / 1e9)


class Contender(threading.Thread):
    """acquire -> release cycles on one client until the window ends."""

    def __init__(self, index, client, path, start, end, workload):
        super().__init__(name="contender-%d" % index, daemon=True)
        if workload == "mutex":
            self.read_pct, self.lock = None, client.Lock(path)
        elif workload in ("read", "write") or workload.startswith("rwmix:"):
            self.read_pct = {"read": 100, "write": 0}.get(workload)
            if self.read_pct is None:
                self.read_pct = int(workload[len("rwmix:"):])
            self.read_lock = client.ReadLock(path)
            self.write_lock = client.WriteLock(path)
            self.lock = None
        elif workload == "semmutex" or workload.startswith("sem:"):
            leases = 1 if workload == "semmutex" else int(workload[len("sem:"):])
            self.read_pct = None
            self.lock = client.Semaphore(path, max_leases=leases)
        else:
            raise ValueError("kazoo has no lock for workload %r" % workload)
        self.start_ns = start
        self.end_ns = end
        self.counts = [0] * BUCKETS
        self.total = 0
        self.failure = None

    def run(self):
        try:
            lock = self.lock
            counts = self.counts
            start, end = self.start_ns, self.end_ns
            t0 = time.monotonic_ns()
            rng = random.Random(self.name)
            while True:
                if self.read_pct is not None:
                    if rng.randrange(100) < self.read_pct:
                        lock = self.read_lock
                    else:
                        lock = self.write_lock
                lock.acquire()
                lock.release()
                now = time.monotonic_ns()
                if start <= now < end:
                    counts[bucket(now - t0)] += 1
                    self.total += 1
                if now >= end:
                    return
                t0 = now
        except Exception as e:  # reported by main
            self.failure = "%s: %r" % (self.name, e)


def run(args):
    if len(args) not in (5, 6):
        raise ValueError(
            "usage: <connect> <lock path> <sessions> <warmup ms> <measure ms> [workload]")
    workload = args[5] if len(args) == 6 else "mutex"
    exit_at_end_of_stdin()
    connect, path = args[0], args[1]
    sessions = int(args[2])
    warmup_ns = int(args[3]) * 1_000_000
    measure_ms = int(args[4])

    clients = []
    for _ in range(sessions):
        client = KazooClient(hosts=connect, timeout=SESSION_TIMEOUT_S)
        client.start(timeout=30)
        clients.append(client)

    begin = time.monotonic_ns()
    start = begin + warmup_ns
    end = start + measure_ms * 1_000_000
    contenders = [Contender(i, c, path, start, end, workload)
                  for i, c in enumerate(clients)]
    for c in contenders:
        c.start()

    sleep_until(start)
    cpu0 = cpu_ticks()
    print("WINDOW_START", flush=True)
    sleep_until(end)
    cpu1 = cpu_ticks()
    print("WINDOW_END", flush=True)
    for c in contenders:
        c.join(60)
        if c.is_alive():
            raise RuntimeError("%s still running 60 s after the window" % c.name)
        if c.failure:
            raise RuntimeError(c.failure)
    for client in clients:
        client.stop()
        client.close()

    counts = [0] * BUCKETS
    total = 0
    for c in contenders:
        total += c.total
        for i, n in enumerate(c.counts):
            if n:
                counts[i] += n
    print(
        "RESULT ops=%d measure_ms=%d p50_ns=%d p99_ns=%d cpu_window_ticks=%d "
        "cpu_total_ticks=%d hwm_kib=%d"
        % (total, measure_ms, percentile(counts, total, 50),
           percentile(counts, total, 99), cpu1 - cpu0, cpu_ticks(), hwm_kib()),
        flush=True)


def main():
    logging.basicConfig(level=logging.ERROR)
    try:
        run(sys.argv[1:])
    except BaseException as e:  # noqa: B902 - report everything, then exit 1
        print("ERROR %r" % (e,), flush=True)
        sys.stdout.flush()
        os._exit(1)
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
