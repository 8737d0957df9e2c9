// Conformance vector generator for the Rust ZooKeeper client's jute codec.
//
// Uses ZooKeeper 3.8.0's own jute classes to serialize every record a client
// sends or receives, and prints one line per case on stdout:
//
//     <RecordName>\t<caseLabel>\t<hex>\t<text>\n
//
// <hex> is the BinaryOutputArchive encoding (what goes on the wire), <text> is
// the same record rendered through TextArchive below (a tag-annotated,
// unambiguous rendering of the logical values). See TextArchive for the text
// grammar.
//
// Build and run (Debian/Ubuntu packaging of ZooKeeper 3.8.0):
//
//   CP=/usr/share/java/zookeeper-jute.jar:/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-api.jar:/usr/share/java/slf4j-nop.jar
//   javac -cp $CP -d /tmp/conf xtask/java/Conformance.java
//   java -cp /tmp/conf:$CP Conformance > /tmp/cases.tsv
//
// Deterministic (fixed seed). Exits non-zero on any internal failure.
//
// NOTE on strings: 3.8.0's BinaryOutputArchive does NOT use
// String.getBytes(UTF_8); it encodes each UTF-16 code unit separately
// (stringToByteBuffer), so characters outside the BMP (e.g. emoji) are written
// as two 3-byte surrogate encodings (CESU-8), e.g. U+1F600 -> ed a0 bd ed b8 80,
// while the text column renders standard UTF-8 (f0 9f 98 80). U+0000 is
// written as a single 0x00 byte (not the modified-UTF-8 c0 80). Cases whose
// strings contain non-BMP characters carry "emoji" in their label.

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.io.BufferedWriter;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Deque;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;

import org.apache.jute.BinaryInputArchive;
import org.apache.jute.BinaryOutputArchive;
import org.apache.jute.OutputArchive;
import org.apache.jute.Record;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.MultiOperationRecord;
import org.apache.zookeeper.MultiResponse;
import org.apache.zookeeper.Op;
import org.apache.zookeeper.OpResult;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.ClientInfo;
import org.apache.zookeeper.data.Id;
import org.apache.zookeeper.data.Stat;
import org.apache.zookeeper.proto.AddWatchRequest;
import org.apache.zookeeper.proto.AuthPacket;
import org.apache.zookeeper.proto.CheckVersionRequest;
import org.apache.zookeeper.proto.CheckWatchesRequest;
import org.apache.zookeeper.proto.ConnectRequest;
import org.apache.zookeeper.proto.ConnectResponse;
import org.apache.zookeeper.proto.Create2Response;
import org.apache.zookeeper.proto.CreateRequest;
import org.apache.zookeeper.proto.CreateResponse;
import org.apache.zookeeper.proto.CreateTTLRequest;
import org.apache.zookeeper.proto.DeleteRequest;
import org.apache.zookeeper.proto.ErrorResponse;
import org.apache.zookeeper.proto.ExistsRequest;
import org.apache.zookeeper.proto.ExistsResponse;
import org.apache.zookeeper.proto.GetACLRequest;
import org.apache.zookeeper.proto.GetACLResponse;
import org.apache.zookeeper.proto.GetAllChildrenNumberRequest;
import org.apache.zookeeper.proto.GetAllChildrenNumberResponse;
import org.apache.zookeeper.proto.GetChildren2Request;
import org.apache.zookeeper.proto.GetChildren2Response;
import org.apache.zookeeper.proto.GetChildrenRequest;
import org.apache.zookeeper.proto.GetChildrenResponse;
import org.apache.zookeeper.proto.GetDataRequest;
import org.apache.zookeeper.proto.GetDataResponse;
import org.apache.zookeeper.proto.GetEphemeralsRequest;
import org.apache.zookeeper.proto.GetEphemeralsResponse;
import org.apache.zookeeper.proto.GetSASLRequest;
import org.apache.zookeeper.proto.MultiHeader;
import org.apache.zookeeper.proto.ReconfigRequest;
import org.apache.zookeeper.proto.RemoveWatchesRequest;
import org.apache.zookeeper.proto.ReplyHeader;
import org.apache.zookeeper.proto.RequestHeader;
import org.apache.zookeeper.proto.SetACLRequest;
import org.apache.zookeeper.proto.SetACLResponse;
import org.apache.zookeeper.proto.SetDataRequest;
import org.apache.zookeeper.proto.SetDataResponse;
import org.apache.zookeeper.proto.SetSASLRequest;
import org.apache.zookeeper.proto.SetSASLResponse;
import org.apache.zookeeper.proto.SetWatches;
import org.apache.zookeeper.proto.SetWatches2;
import org.apache.zookeeper.proto.SyncRequest;
import org.apache.zookeeper.proto.SyncResponse;
import org.apache.zookeeper.proto.WatcherEvent;
import org.apache.zookeeper.proto.WhoAmIResponse;
import org.apache.zookeeper.server.persistence.FileHeader;
import org.apache.zookeeper.server.persistence.Util;
import org.apache.zookeeper.txn.CheckVersionTxn;
import org.apache.zookeeper.txn.CloseSessionTxn;
import org.apache.zookeeper.txn.CreateContainerTxn;
import org.apache.zookeeper.txn.CreateSessionTxn;
import org.apache.zookeeper.txn.CreateTTLTxn;
import org.apache.zookeeper.txn.CreateTxn;
import org.apache.zookeeper.txn.CreateTxnV0;
import org.apache.zookeeper.txn.DeleteTxn;
import org.apache.zookeeper.txn.ErrorTxn;
import org.apache.zookeeper.txn.MultiTxn;
import org.apache.zookeeper.txn.SetACLTxn;
import org.apache.zookeeper.txn.SetDataTxn;
import org.apache.zookeeper.txn.SetMaxChildrenTxn;
import org.apache.zookeeper.txn.Txn;
import org.apache.zookeeper.txn.TxnDigest;
import org.apache.zookeeper.txn.TxnHeader;

public final class Conformance {

    // ------------------------------------------------------------------
    // Text archive
    // ------------------------------------------------------------------

    /**
     * Renders a record as text:
     *   int/long:  tag=decimal;      bool: tag=true; / tag=false;
     *   string:    tag=s<hex utf8>;  or tag=null;
     *   buffer:    tag=b<hex>;       or tag=null;
     *   record:    tag{ ... };       vector: tag[ ... ];  (null vector: tag[null];)
     * Inside a vector, element tags are rendered as "".
     */
    static final class TextArchive implements OutputArchive {
        private final StringBuilder sb = new StringBuilder();
        // true = vector, false = record
        private final Deque<Boolean> stack = new ArrayDeque<>();

        private String t(String tag) {
            if (!stack.isEmpty() && stack.peek()) {
                return "";
            }
            if (tag == null) {
                throw new IllegalStateException("null tag outside vector");
            }
            if (tag.indexOf('\t') >= 0 || tag.indexOf('\n') >= 0 || tag.indexOf(' ') >= 0) {
                throw new IllegalStateException("bad tag: " + tag);
            }
            return tag;
        }

        @Override
        public void writeByte(byte b, String tag) {
            throw new UnsupportedOperationException("writeByte");
        }

        @Override
        public void writeBool(boolean b, String tag) {
            sb.append(t(tag)).append('=').append(b ? "true" : "false").append(';');
        }

        @Override
        public void writeInt(int i, String tag) {
            sb.append(t(tag)).append('=').append(i).append(';');
        }

        @Override
        public void writeLong(long l, String tag) {
            sb.append(t(tag)).append('=').append(l).append(';');
        }

        @Override
        public void writeFloat(float f, String tag) {
            throw new UnsupportedOperationException("writeFloat");
        }

        @Override
        public void writeDouble(double d, String tag) {
            throw new UnsupportedOperationException("writeDouble");
        }

        @Override
        public void writeString(String s, String tag) {
            sb.append(t(tag)).append('=');
            if (s == null) {
                sb.append("null");
            } else {
                sb.append('s');
                hex(sb, s.getBytes(StandardCharsets.UTF_8));
            }
            sb.append(';');
        }

        @Override
        public void writeBuffer(byte[] buf, String tag) {
            sb.append(t(tag)).append('=');
            if (buf == null) {
                sb.append("null");
            } else {
                sb.append('b');
                hex(sb, buf);
            }
            sb.append(';');
        }

        @Override
        public void writeRecord(Record r, String tag) throws IOException {
            r.serialize(this, tag);
        }

        @Override
        public void startRecord(Record r, String tag) {
            sb.append(t(tag)).append('{');
            stack.push(Boolean.FALSE);
        }

        @Override
        public void endRecord(Record r, String tag) {
            if (stack.isEmpty() || stack.peek()) {
                throw new IllegalStateException("endRecord without matching startRecord");
            }
            stack.pop();
            sb.append("};");
        }

        @Override
        public void startVector(List<?> v, String tag) {
            sb.append(t(tag)).append('[');
            if (v == null) {
                sb.append("null");
            }
            stack.push(Boolean.TRUE);
        }

        @Override
        public void endVector(List<?> v, String tag) {
            if (stack.isEmpty() || !stack.peek()) {
                throw new IllegalStateException("endVector without matching startVector");
            }
            stack.pop();
            sb.append("];");
        }

        @Override
        public void startMap(TreeMap<?, ?> v, String tag) {
            throw new UnsupportedOperationException("startMap");
        }

        @Override
        public void endMap(TreeMap<?, ?> v, String tag) {
            throw new UnsupportedOperationException("endMap");
        }

        String finish() {
            if (!stack.isEmpty()) {
                throw new IllegalStateException("unbalanced containers: depth " + stack.size());
            }
            return sb.toString();
        }
    }

    private static final char[] HEX = "0123456789abcdef".toCharArray();

    static void hex(StringBuilder sb, byte[] b) {
        for (byte x : b) {
            sb.append(HEX[(x >> 4) & 0xf]).append(HEX[x & 0xf]);
        }
    }

    static String hex(byte[] b) {
        StringBuilder sb = new StringBuilder(b.length * 2);
        hex(sb, b);
        return sb.toString();
    }

    // ------------------------------------------------------------------
    // Emission
    // ------------------------------------------------------------------

    private static PrintWriter out;
    private static final Map<String, Integer> counts = new LinkedHashMap<>();
    private static final Set<String> seen = new HashSet<>();
    private static int roundTripChecked = 0;
    private static int roundTripSkipped = 0;

    /** Emit a case with no trailing readOnly bool. */
    static void emit(String name, String label, Record r) throws Exception {
        emit(name, label, r, null, true);
    }

    /**
     * Emit one case. If readOnly != null, a trailing writeBool(readOnly, "readOnly") is
     * appended to both archives. If roundTrip, the bytes are decoded again with
     * BinaryInputArchive and re-encoded, and must be identical.
     */
    static void emit(String name, String label, Record r, Boolean readOnly, boolean roundTrip)
            throws Exception {
        if (label.isEmpty() || !label.matches("[A-Za-z0-9._+-]+")) {
            throw new IllegalStateException("bad label: " + label);
        }
        if (!seen.add(name + "\t" + label)) {
            throw new IllegalStateException("duplicate case: " + name + " " + label);
        }

        ByteArrayOutputStream baos = new ByteArrayOutputStream();
        BinaryOutputArchive boa = BinaryOutputArchive.getArchive(baos);
        r.serialize(boa, "");
        if (readOnly != null) {
            boa.writeBool(readOnly, "readOnly");
        }
        byte[] bytes = baos.toByteArray();

        TextArchive ta = new TextArchive();
        r.serialize(ta, "");
        if (readOnly != null) {
            ta.writeBool(readOnly, "readOnly");
        }
        String text = ta.finish();

        if (roundTrip) {
            roundTrip(r, bytes, readOnly);
            roundTripChecked++;
        } else {
            roundTripSkipped++;
        }

        out.append(name).append('\t').append(label).append('\t')
                .append(hex(bytes)).append('\t').append(text).append('\n');
        counts.merge(name, 1, Integer::sum);
    }

    /** Decode with Java's own BinaryInputArchive, re-encode, compare. */
    static void roundTrip(Record r, byte[] bytes, Boolean readOnly) throws Exception {
        Record copy = r.getClass().getDeclaredConstructor().newInstance();
        BinaryInputArchive bia =
                BinaryInputArchive.getArchive(new DataInputStream(new ByteArrayInputStream(bytes)));
        copy.deserialize(bia, "");
        Boolean ro = null;
        if (readOnly != null) {
            ro = bia.readBool("readOnly");
        }
        ByteArrayOutputStream baos = new ByteArrayOutputStream();
        BinaryOutputArchive boa = BinaryOutputArchive.getArchive(baos);
        copy.serialize(boa, "");
        if (ro != null) {
            boa.writeBool(ro, "readOnly");
        }
        byte[] again = baos.toByteArray();
        if (!Arrays.equals(bytes, again)) {
            throw new IllegalStateException("round trip mismatch for " + r.getClass().getName());
        }
    }

    // ------------------------------------------------------------------
    // Values
    // ------------------------------------------------------------------

    static final Random RNG = new Random(0x5eed_2024_0001L);

    static final int IMAX = Integer.MAX_VALUE;
    static final int IMIN = Integer.MIN_VALUE;
    static final long LMAX = Long.MAX_VALUE;
    static final long LMIN = Long.MIN_VALUE;

    static final String PATH = "/app/config/node-0000000042";
    static final String CJK = "/\u6570\u636e/\u8282\u70b9/\u65e5\u672c\u8a9e/\ud55c\uad6d\uc5b4";
    static final String ACCENTED = "/caf\u00e9/na\u00efve/\u00c5ngstr\u00f6m/\u0161\u0165\u0159/\u0394\u03b9\u03ac";
    static final String NUL = "/a\u0000b/\u0000";
    static final String UNICODE = "/\u00e9\u00e8\u00fc\u00df/\u4e2d\u6587/\u0416\u0436/\u0000/\u20ac\uffff";
    // U+1F600 (grinning face), U+1F389 (party popper), U+10FFFF: non-BMP -> CESU-8 on the wire.
    static final String EMOJI = "/\ud83d\ude00/\ud83c\udf89x/\udbff\udfff";
    static final String LONG = longString(3000);
    static final String LONG_UNICODE = longUnicode(2000);

    static String longString(int n) {
        StringBuilder sb = new StringBuilder(n);
        sb.append('/');
        String alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./";
        while (sb.length() < n) {
            sb.append(alphabet.charAt(RNG.nextInt(alphabet.length())));
        }
        return sb.toString();
    }

    static String longUnicode(int n) {
        // BMP only, mixing 1-, 2- and 3-byte UTF-8 sequences.
        String pool = "a/Z\u00e9\u00fc\u00df\u0416\u03a9\u4e2d\u6587\u65e5\u672c\uac00\u20ac\u0000";
        StringBuilder sb = new StringBuilder(n);
        while (sb.length() < n) {
            sb.append(pool.charAt(RNG.nextInt(pool.length())));
        }
        return sb.toString();
    }

    static byte[] bytes(int... v) {
        byte[] b = new byte[v.length];
        for (int i = 0; i < v.length; i++) {
            b[i] = (byte) v[i];
        }
        return b;
    }

    static byte[] randomBytes(int n) {
        byte[] b = new byte[n];
        RNG.nextBytes(b);
        return b;
    }

    static final byte[] EMPTY = new byte[0];
    static final byte[] SMALL = bytes(0x00, 0x01, 0x7f, 0x80, 0xff, 0x2f, 0x00);
    static final byte[] BIG = randomBytes(100 * 1024);
    static final byte[] PASSWD16 = randomBytes(16);
    static final byte[] ZERO16 = new byte[16];
    static final byte[] JSON = "{\"k\":\"v\",\"n\":42}".getBytes(StandardCharsets.UTF_8);

    static List<String> strings(String... s) {
        return new ArrayList<>(Arrays.asList(s));
    }

    static List<String> manyStrings(int n, String prefix) {
        List<String> l = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            l.add(prefix + String.format("%010d", i));
        }
        return l;
    }

    static Id id(String scheme, String ident) {
        return new Id(scheme, ident);
    }

    static final Id ANYONE = id("world", "anyone");

    static List<ACL> openAcl() {
        return new ArrayList<>(Collections.singletonList(new ACL(31, ANYONE)));
    }

    static List<ACL> variedAcl() {
        List<ACL> l = new ArrayList<>();
        l.add(new ACL(31, ANYONE));
        l.add(new ACL(1, id("auth", "")));
        l.add(new ACL(0, id("digest", "user:smGaoVKd/cQkjm7b88GyorAUz20=")));
        l.add(new ACL(-1, id("ip", "10.0.0.0/8")));
        l.add(new ACL(IMAX, id("sasl", "zk/host@EXAMPLE.COM")));
        l.add(new ACL(IMIN, id("x509", "CN=\u00e9l\u00e8ve,O=\u4f8b")));
        return l;
    }

    static List<ACL> manyAcl(int n) {
        List<ACL> l = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            l.add(new ACL(RNG.nextInt(), id("scheme" + (i % 7), "id-" + i)));
        }
        return l;
    }

    static Stat stat(long czxid, long mzxid, long ctime, long mtime, int version, int cversion,
            int aversion, long ephemeralOwner, int dataLength, int numChildren, long pzxid) {
        return new Stat(czxid, mzxid, ctime, mtime, version, cversion, aversion, ephemeralOwner,
                dataLength, numChildren, pzxid);
    }

    static Stat zeroStat() {
        return new Stat(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    }

    static Stat maxStat() {
        return stat(LMAX, LMAX, LMAX, LMAX, IMAX, IMAX, IMAX, LMAX, IMAX, IMAX, LMAX);
    }

    static Stat minStat() {
        return stat(LMIN, LMIN, LMIN, LMIN, IMIN, IMIN, IMIN, LMIN, IMIN, IMIN, LMIN);
    }

    static Stat typicalStat() {
        return stat(0x100000002L, 0x100000007L, 1700000000123L, 1700000456789L, 3, 7, 1,
                0x1000a2b3c4d0001L, 42, 5, 0x100000009L);
    }

    static Stat negStat() {
        return stat(-1, -2, -1700000000000L, -3, -1, -2, -3, -4, -5, -6, -7);
    }

    static Stat randomStat() {
        return stat(RNG.nextLong(), RNG.nextLong(), RNG.nextLong(), RNG.nextLong(), RNG.nextInt(),
                RNG.nextInt(), RNG.nextInt(), RNG.nextLong(), RNG.nextInt(), RNG.nextInt(),
                RNG.nextLong());
    }

    /** Label/stat pairs used for records that only wrap a Stat. */
    static Object[][] statCases() {
        return new Object[][] {
            {"zero", zeroStat()},
            {"max", maxStat()},
            {"min", minStat()},
            {"typical", typicalStat()},
            {"negative", negStat()},
            {"random", randomStat()},
        };
    }

    /** Label/path pairs used for records whose only field is a path-like string. */
    static Object[][] pathCases() {
        return new Object[][] {
            {"empty", ""},
            {"root", "/"},
            {"typical", PATH},
            {"cjk", CJK},
            {"accented", ACCENTED},
            {"nul", NUL},
            {"long", LONG},
            {"long-unicode", LONG_UNICODE},
            {"emoji", EMOJI},
        };
    }

    /** Label/buffer pairs. */
    static Object[][] bufferCases() {
        return new Object[][] {
            {"null-buffer", null},
            {"empty-buffer", EMPTY},
            {"small-buffer", SMALL},
            {"json", JSON},
            {"big-buffer", BIG},
        };
    }

    // ------------------------------------------------------------------
    // Cases
    // ------------------------------------------------------------------

    static void dataRecords() throws Exception {
        // Id
        emit("Id", "world-anyone", ANYONE);
        emit("Id", "empty", id("", ""));
        emit("Id", "digest", id("digest", "user:smGaoVKd/cQkjm7b88GyorAUz20="));
        emit("Id", "unicode", id("\u00e9sch\u00e8me", UNICODE));
        emit("Id", "cjk-nul", id(CJK, NUL));
        emit("Id", "long", id(LONG, LONG_UNICODE));
        emit("Id", "emoji", id("sasl", EMOJI), null, false);

        // ACL
        emit("ACL", "all-world", new ACL(31, ANYONE));
        emit("ACL", "zero-empty", new ACL(0, id("", "")));
        emit("ACL", "neg-one", new ACL(-1, id("ip", "127.0.0.1")));
        emit("ACL", "max", new ACL(IMAX, id("digest", ACCENTED)));
        emit("ACL", "min", new ACL(IMIN, id(LONG, CJK)));
        emit("ACL", "read", new ACL(1, id("auth", "")));

        // Stat
        for (Object[] c : statCases()) {
            emit("Stat", (String) c[0], (Stat) c[1]);
        }

        // ClientInfo
        emit("ClientInfo", "ip", new ClientInfo("ip", "127.0.0.1"));
        emit("ClientInfo", "empty", new ClientInfo("", ""));
        emit("ClientInfo", "unicode", new ClientInfo("x509", UNICODE));
        emit("ClientInfo", "long", new ClientInfo(LONG, LONG_UNICODE));
        emit("ClientInfo", "sasl", new ClientInfo("sasl", "zk/host.example.com@EXAMPLE.COM"));
    }

    static void connect() throws Exception {
        // ConnectRequest(protocolVersion, lastZxidSeen, timeOut, sessionId, passwd) + readOnly
        emit("ConnectRequest", "zero", new ConnectRequest(0, 0, 0, 0, ZERO16), false, true);
        emit("ConnectRequest", "typical", new ConnectRequest(0, 0, 30000, 0, ZERO16), false, true);
        emit("ConnectRequest", "reconnect-ro",
                new ConnectRequest(0, 0x200000015L, 40000, 0x1000a2b3c4d0001L, PASSWD16), true, true);
        emit("ConnectRequest", "max", new ConnectRequest(IMAX, LMAX, IMAX, LMAX, SMALL), true, true);
        emit("ConnectRequest", "min", new ConnectRequest(IMIN, LMIN, IMIN, LMIN, EMPTY), false, true);
        emit("ConnectRequest", "null-buffer", new ConnectRequest(0, -1, -1, -1, null), false, true);
        emit("ConnectRequest", "big-buffer", new ConnectRequest(1, 2, 3, 4, BIG), true, true);

        // ConnectResponse(protocolVersion, timeOut, sessionId, passwd) + readOnly
        emit("ConnectResponse", "zero", new ConnectResponse(0, 0, 0, ZERO16), false, true);
        emit("ConnectResponse", "typical",
                new ConnectResponse(0, 30000, 0x1000a2b3c4d0001L, PASSWD16), false, true);
        emit("ConnectResponse", "readonly", new ConnectResponse(0, 4000, 0, ZERO16), true, true);
        emit("ConnectResponse", "max", new ConnectResponse(IMAX, IMAX, LMAX, SMALL), true, true);
        emit("ConnectResponse", "min", new ConnectResponse(IMIN, IMIN, LMIN, EMPTY), false, true);
        emit("ConnectResponse", "null-buffer", new ConnectResponse(-1, -1, -1, null), true, true);
        emit("ConnectResponse", "expired", new ConnectResponse(0, 0, 0, EMPTY), false, true);
        emit("ConnectResponse", "no-readonly",
                new ConnectResponse(0, 30000, 0x1000a2b3c4d0001L, PASSWD16), null, true);
        emit("ConnectResponse", "no-readonly-max", new ConnectResponse(IMAX, IMAX, LMAX, BIG), null, true);
    }

    static void watches() throws Exception {
        // SetWatches(relativeZxid, dataWatches, existWatches, childWatches)
        emit("SetWatches", "empty", new SetWatches(0, strings(), strings(), strings()));
        emit("SetWatches", "one-each",
                new SetWatches(0x100000005L, strings("/a"), strings("/b"), strings("/c")));
        emit("SetWatches", "mixed",
                new SetWatches(-1, strings(PATH, "/", ""), strings(), strings(CJK, ACCENTED, NUL)));
        emit("SetWatches", "max-long-vector",
                new SetWatches(LMAX, manyStrings(1000, "/d/"), manyStrings(1000, "/e/"),
                        manyStrings(1000, "/c/")));
        emit("SetWatches", "min-long-strings",
                new SetWatches(LMIN, strings(LONG), strings(LONG_UNICODE), strings(UNICODE)));
        emit("SetWatches", "emoji", new SetWatches(7, strings(EMOJI), strings(), strings()), null, false);

        // SetWatches2(relativeZxid, data, exist, child, persistent, persistentRecursive)
        emit("SetWatches2", "empty",
                new SetWatches2(0, strings(), strings(), strings(), strings(), strings()));
        emit("SetWatches2", "one-each",
                new SetWatches2(0x100000005L, strings("/a"), strings("/b"), strings("/c"),
                        strings("/p"), strings("/r")));
        emit("SetWatches2", "mixed",
                new SetWatches2(-1, strings(PATH, ""), strings(), strings(CJK), strings(ACCENTED, NUL),
                        strings("/")));
        emit("SetWatches2", "max-long-vector",
                new SetWatches2(LMAX, manyStrings(1000, "/d/"), strings(), manyStrings(1000, "/c/"),
                        strings(), manyStrings(1000, "/r/")));
        emit("SetWatches2", "min-long-strings",
                new SetWatches2(LMIN, strings(), strings(LONG), strings(), strings(LONG_UNICODE),
                        strings(UNICODE)));
        emit("SetWatches2", "emoji",
                new SetWatches2(1, strings(), strings(), strings(), strings(EMOJI), strings()), null,
                false);

        // AddWatchRequest(path, mode in {0,1})
        emit("AddWatchRequest", "persistent", new AddWatchRequest(PATH, 0));
        emit("AddWatchRequest", "recursive", new AddWatchRequest("/", 1));
        emit("AddWatchRequest", "empty", new AddWatchRequest("", 0));
        emit("AddWatchRequest", "unicode", new AddWatchRequest(UNICODE, 1));
        emit("AddWatchRequest", "long", new AddWatchRequest(LONG, 0));

        // WatcherEvent(type, state, path)
        int[] types = {-1, 1, 2, 3, 4, 5, 6, 7};
        int[] states = {-1, 0, 1, 3, 4, 5, 6, -112, 7};
        String[] paths = {"", PATH, "/", CJK, ACCENTED, NUL, LONG, UNICODE, LONG_UNICODE};
        for (int i = 0; i < types.length; i++) {
            emit("WatcherEvent", "type" + types[i],
                    new WatcherEvent(types[i], 3, paths[i % paths.length]));
        }
        for (int i = 0; i < states.length; i++) {
            emit("WatcherEvent", "state" + states[i],
                    new WatcherEvent(-1, states[i], i == 0 ? "" : paths[(i + 3) % paths.length]));
        }
        emit("WatcherEvent", "session-expired", new WatcherEvent(-1, -112, ""));
        emit("WatcherEvent", "emoji", new WatcherEvent(4, 3, EMOJI), null, false);

        // CheckWatchesRequest / RemoveWatchesRequest (path, type in 1..5)
        String[] wpaths = {PATH, "/", "", UNICODE, LONG};
        for (int type = 1; type <= 5; type++) {
            emit("CheckWatchesRequest", "type" + type, new CheckWatchesRequest(wpaths[type - 1], type));
            emit("RemoveWatchesRequest", "type" + type, new RemoveWatchesRequest(wpaths[5 - type], type));
        }
        emit("CheckWatchesRequest", "cjk", new CheckWatchesRequest(CJK, 3));
        emit("RemoveWatchesRequest", "accented", new RemoveWatchesRequest(ACCENTED, 1));
    }

    static void headers() throws Exception {
        // RequestHeader(xid, type): one case per allowed opcode, with varied xids.
        int[] types = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21,
            22, 100, 101, 102, 103, 104, 105, 106, 107, -10, -11};
        int[] xids = {0, 1, IMAX, IMIN, -1, -2, -4, -8, 42, 123456789};
        for (int i = 0; i < types.length; i++) {
            emit("RequestHeader", "op" + types[i], new RequestHeader(xids[i % xids.length], types[i]));
        }
        emit("RequestHeader", "ping", new RequestHeader(-2, 11));
        emit("RequestHeader", "auth", new RequestHeader(-4, 100));
        emit("RequestHeader", "setwatches", new RequestHeader(-8, 101));
        emit("RequestHeader", "close-max", new RequestHeader(IMAX, -11));
        emit("RequestHeader", "create-min", new RequestHeader(IMIN, 1));

        // ReplyHeader(xid, zxid, err)
        emit("ReplyHeader", "zero", new ReplyHeader(0, 0, 0));
        emit("ReplyHeader", "notification", new ReplyHeader(-1, -1, 0));
        emit("ReplyHeader", "ping", new ReplyHeader(-2, 0x100000003L, 0));
        emit("ReplyHeader", "no-node", new ReplyHeader(17, 0x100000004L, -101));
        emit("ReplyHeader", "max", new ReplyHeader(IMAX, LMAX, IMAX));
        emit("ReplyHeader", "min", new ReplyHeader(IMIN, LMIN, IMIN));

        // MultiHeader(type, done, err)
        emit("MultiHeader", "create", new MultiHeader(1, false, -1));
        emit("MultiHeader", "done", new MultiHeader(-1, true, -1));
        emit("MultiHeader", "zero", new MultiHeader(0, false, 0));
        emit("MultiHeader", "error", new MultiHeader(-1, false, -101));
        emit("MultiHeader", "max", new MultiHeader(IMAX, true, IMAX));
        emit("MultiHeader", "min", new MultiHeader(IMIN, false, IMIN));

        // AuthPacket(type, scheme, auth)
        emit("AuthPacket", "digest",
                new AuthPacket(0, "digest", "user:password".getBytes(StandardCharsets.UTF_8)));
        emit("AuthPacket", "empty", new AuthPacket(0, "", EMPTY));
        emit("AuthPacket", "null-buffer", new AuthPacket(-1, "ip", null));
        emit("AuthPacket", "max", new AuthPacket(IMAX, UNICODE, SMALL));
        emit("AuthPacket", "min-big", new AuthPacket(IMIN, LONG, BIG));

        // ErrorResponse(err)
        emit("ErrorResponse", "zero", new ErrorResponse(0));
        emit("ErrorResponse", "no-node", new ErrorResponse(-101));
        emit("ErrorResponse", "bad-version", new ErrorResponse(-103));
        emit("ErrorResponse", "max", new ErrorResponse(IMAX));
        emit("ErrorResponse", "min", new ErrorResponse(IMIN));
    }

    static void simplePathRecords() throws Exception {
        for (Object[] c : pathCases()) {
            String label = (String) c[0];
            String p = (String) c[1];
            boolean rt = !label.contains("emoji");
            emit("GetAllChildrenNumberRequest", label, new GetAllChildrenNumberRequest(p), null, rt);
            emit("SyncRequest", label, new SyncRequest(p), null, rt);
            emit("SyncResponse", label, new SyncResponse(p), null, rt);
            emit("GetACLRequest", label, new GetACLRequest(p), null, rt);
            emit("GetEphemeralsRequest", label, new GetEphemeralsRequest(p), null, rt);
            emit("CreateResponse", label, new CreateResponse(p), null, rt);
        }

        // (path, watch)
        Object[][] pw = {
            {"typical-watch", PATH, true},
            {"typical-nowatch", PATH, false},
            {"root", "/", false},
            {"empty", "", true},
            {"unicode", UNICODE, true},
            {"long", LONG, false},
        };
        for (Object[] c : pw) {
            String label = (String) c[0];
            String p = (String) c[1];
            boolean w = (Boolean) c[2];
            emit("GetDataRequest", label, new GetDataRequest(p, w));
            emit("GetChildrenRequest", label, new GetChildrenRequest(p, w));
            emit("GetChildren2Request", label, new GetChildren2Request(p, w));
            emit("ExistsRequest", label, new ExistsRequest(p, w));
        }

        // (path, version)
        Object[][] pv = {
            {"any-version", PATH, -1},
            {"zero", "/", 0},
            {"max", CJK, IMAX},
            {"min", ACCENTED, IMIN},
            {"empty", "", 7},
            {"long", LONG_UNICODE, 12345},
        };
        for (Object[] c : pv) {
            emit("DeleteRequest", (String) c[0], new DeleteRequest((String) c[1], (Integer) c[2]));
            emit("CheckVersionRequest", (String) c[0],
                    new CheckVersionRequest((String) c[1], (Integer) c[2]));
        }
    }

    static void dataAndAcl() throws Exception {
        // SetDataRequest(path, data, version)
        emit("SetDataRequest", "typical", new SetDataRequest(PATH, JSON, -1));
        emit("SetDataRequest", "null-buffer", new SetDataRequest("/", null, 0));
        emit("SetDataRequest", "empty-buffer", new SetDataRequest("", EMPTY, IMAX));
        emit("SetDataRequest", "small-min", new SetDataRequest(UNICODE, SMALL, IMIN));
        emit("SetDataRequest", "big-buffer", new SetDataRequest(LONG, BIG, 3));

        // GetDataResponse(data, stat)
        emit("GetDataResponse", "typical", new GetDataResponse(JSON, typicalStat()));
        emit("GetDataResponse", "null-buffer", new GetDataResponse(null, zeroStat()));
        emit("GetDataResponse", "empty-buffer", new GetDataResponse(EMPTY, maxStat()));
        emit("GetDataResponse", "small-min", new GetDataResponse(SMALL, minStat()));
        emit("GetDataResponse", "big-buffer", new GetDataResponse(BIG, randomStat()));

        // Stat-only responses
        for (Object[] c : statCases()) {
            emit("SetDataResponse", (String) c[0], new SetDataResponse((Stat) c[1]));
            emit("SetACLResponse", (String) c[0], new SetACLResponse((Stat) c[1]));
            emit("ExistsResponse", (String) c[0], new ExistsResponse((Stat) c[1]));
        }

        // SetACLRequest(path, acl, version)
        emit("SetACLRequest", "typical", new SetACLRequest(PATH, openAcl(), -1));
        emit("SetACLRequest", "empty-vector", new SetACLRequest("", new ArrayList<>(), 0));
        emit("SetACLRequest", "varied-max", new SetACLRequest(UNICODE, variedAcl(), IMAX));
        emit("SetACLRequest", "long-vector-min", new SetACLRequest(LONG, manyAcl(1000), IMIN));

        // GetACLResponse(acl, stat)
        emit("GetACLResponse", "typical", new GetACLResponse(openAcl(), typicalStat()));
        emit("GetACLResponse", "empty-vector", new GetACLResponse(new ArrayList<>(), zeroStat()));
        emit("GetACLResponse", "varied-max", new GetACLResponse(variedAcl(), maxStat()));
        emit("GetACLResponse", "long-vector-min", new GetACLResponse(manyAcl(1000), minStat()));

        // SASL tokens
        for (Object[] c : bufferCases()) {
            String label = (String) c[0];
            byte[] b = (byte[]) c[1];
            emit("GetSASLRequest", label, new GetSASLRequest(b));
            emit("SetSASLRequest", label, new SetSASLRequest(b));
            emit("SetSASLResponse", label, new SetSASLResponse(b));
        }

        // ReconfigRequest(joiningServers, leavingServers, newMembers, curConfigId)
        emit("ReconfigRequest", "typical",
                new ReconfigRequest("server.4=10.0.0.4:2888:3888:participant;2181", "", "", -1));
        emit("ReconfigRequest", "empty", new ReconfigRequest("", "", "", 0));
        emit("ReconfigRequest", "leaving-max", new ReconfigRequest("", "1,2", "", LMAX));
        emit("ReconfigRequest", "members-min",
                new ReconfigRequest("", "", "server.1=a:1:2;3,server.2=b:1:2;3", LMIN));
        emit("ReconfigRequest", "unicode-long",
                new ReconfigRequest(UNICODE, LONG, LONG_UNICODE, 0x100000000L));
    }

    static void create() throws Exception {
        // CreateRequest(path, data, acl, flags in 0..6)
        emit("CreateRequest", "persistent", new CreateRequest(PATH, JSON, openAcl(), 0));
        emit("CreateRequest", "ephemeral-null-buffer", new CreateRequest("/e", null, openAcl(), 1));
        emit("CreateRequest", "sequential-empty", new CreateRequest("/s-", EMPTY, variedAcl(), 2));
        emit("CreateRequest", "ephemeral-sequential-empty-vector",
                new CreateRequest("", SMALL, new ArrayList<>(), 3));
        emit("CreateRequest", "container-unicode", new CreateRequest(UNICODE, SMALL, openAcl(), 4));
        emit("CreateRequest", "ttl-flag5-long-vector", new CreateRequest(LONG, BIG, manyAcl(1000), 5));
        emit("CreateRequest", "ttl-flag6", new CreateRequest(CJK, EMPTY, variedAcl(), 6));

        // CreateTTLRequest(path, data, acl, flags, ttl)
        emit("CreateTTLRequest", "typical", new CreateTTLRequest(PATH, JSON, openAcl(), 5, 60000));
        emit("CreateTTLRequest", "sequential-max", new CreateTTLRequest("/t-", SMALL, variedAcl(), 6, LMAX));
        emit("CreateTTLRequest", "zero", new CreateTTLRequest("", null, new ArrayList<>(), 0, 0));
        emit("CreateTTLRequest", "min", new CreateTTLRequest(ACCENTED, EMPTY, openAcl(), 1, LMIN));
        emit("CreateTTLRequest", "long-vector",
                new CreateTTLRequest(LONG_UNICODE, BIG, manyAcl(1000), 5, 1));
        emit("CreateTTLRequest", "container-flag4",
                new CreateTTLRequest(NUL, SMALL, openAcl(), 4, -1));

        // Create2Response(path, stat)
        emit("Create2Response", "typical", new Create2Response(PATH, typicalStat()));
        emit("Create2Response", "empty-zero", new Create2Response("", zeroStat()));
        emit("Create2Response", "max", new Create2Response(UNICODE, maxStat()));
        emit("Create2Response", "min", new Create2Response(LONG, minStat()));
        emit("Create2Response", "emoji", new Create2Response(EMOJI, randomStat()), null, false);
    }

    static void children() throws Exception {
        Object[][] lists = {
            {"empty-vector", strings()},
            {"one", strings("child")},
            {"varied", strings("", "a", CJK.substring(1), ACCENTED.substring(1), "x\u0000y")},
            {"long-vector", manyStrings(1000, "node-")},
            {"long-strings", strings(LONG, LONG_UNICODE)},
        };
        Stat[] stats = {zeroStat(), typicalStat(), maxStat(), minStat(), randomStat()};
        for (int i = 0; i < lists.length; i++) {
            String label = (String) lists[i][0];
            @SuppressWarnings("unchecked")
            List<String> l = (List<String>) lists[i][1];
            emit("GetChildrenResponse", label, new GetChildrenResponse(l));
            emit("GetChildren2Response", label, new GetChildren2Response(l, stats[i]));
            emit("GetEphemeralsResponse", label, new GetEphemeralsResponse(l));
        }
        emit("GetChildrenResponse", "emoji", new GetChildrenResponse(strings(EMOJI.substring(1))), null,
                false);

        // GetAllChildrenNumberResponse(totalNumber)
        emit("GetAllChildrenNumberResponse", "zero", new GetAllChildrenNumberResponse(0));
        emit("GetAllChildrenNumberResponse", "typical", new GetAllChildrenNumberResponse(1234));
        emit("GetAllChildrenNumberResponse", "max", new GetAllChildrenNumberResponse(IMAX));
        emit("GetAllChildrenNumberResponse", "min", new GetAllChildrenNumberResponse(IMIN));
        emit("GetAllChildrenNumberResponse", "negative", new GetAllChildrenNumberResponse(-1));

        // WhoAmIResponse(List<ClientInfo>)
        emit("WhoAmIResponse", "empty-vector", new WhoAmIResponse(new ArrayList<>()));
        emit("WhoAmIResponse", "one",
                new WhoAmIResponse(new ArrayList<>(List.of(new ClientInfo("ip", "127.0.0.1")))));
        emit("WhoAmIResponse", "varied", new WhoAmIResponse(new ArrayList<>(List.of(
                new ClientInfo("ip", "10.1.2.3"),
                new ClientInfo("digest", "user"),
                new ClientInfo("", ""),
                new ClientInfo("x509", UNICODE),
                new ClientInfo(LONG, CJK)))));
        List<ClientInfo> many = new ArrayList<>();
        for (int i = 0; i < 1000; i++) {
            many.add(new ClientInfo("scheme" + (i % 5), "user-" + i));
        }
        emit("WhoAmIResponse", "long-vector", new WhoAmIResponse(many));
    }

    static Op withType(Op op, int type) throws Exception {
        Field f = Op.class.getDeclaredField("type");
        f.setAccessible(true);
        f.setInt(op, type);
        return op;
    }

    static MultiOperationRecord multi(Op... ops) {
        return new MultiOperationRecord(Arrays.asList(ops));
    }

    static void multiRequest() throws Exception {
        emit("MultiRequest", "empty", new MultiOperationRecord());
        emit("MultiRequest", "typical", multi(
                Op.create("/app", JSON, openAcl(), CreateMode.PERSISTENT),
                Op.create("/app/lock-", EMPTY, openAcl(), CreateMode.EPHEMERAL_SEQUENTIAL),
                Op.create("/app/container", null, variedAcl(), CreateMode.CONTAINER),
                Op.create("/app/ttl", SMALL, openAcl(), CreateMode.PERSISTENT_WITH_TTL, 60000L),
                Op.delete("/app/old", -1),
                Op.setData("/app", JSON, 0),
                Op.check("/app", 3)));
        emit("MultiRequest", "all-create-modes", multi(
                Op.create("/p", EMPTY, openAcl(), CreateMode.PERSISTENT),
                Op.create("/ps-", EMPTY, openAcl(), CreateMode.PERSISTENT_SEQUENTIAL),
                Op.create("/e", EMPTY, openAcl(), CreateMode.EPHEMERAL),
                Op.create("/es-", EMPTY, openAcl(), CreateMode.EPHEMERAL_SEQUENTIAL),
                Op.create("/c", EMPTY, openAcl(), CreateMode.CONTAINER),
                Op.create("/t", EMPTY, openAcl(), CreateMode.PERSISTENT_WITH_TTL, 1L),
                Op.create("/ts-", EMPTY, openAcl(), CreateMode.PERSISTENT_SEQUENTIAL_WITH_TTL, LMAX),
                Op.create("/int-flags", EMPTY, openAcl(), 3),
                Op.create("/int-flags-ttl", EMPTY, openAcl(), 6, 12345L)));
        // Op has no public factory for the create2 opcode (15); Java's own
        // MultiOperationRecord.serialize accepts it, so force the type via
        // reflection. (Java's deserialize maps 15 back to create, so no round trip.)
        emit("MultiRequest", "create2", multi(
                withType(Op.create("/c2", JSON, openAcl(), CreateMode.PERSISTENT), 15),
                withType(Op.create("/c2/e-", null, variedAcl(), CreateMode.EPHEMERAL_SEQUENTIAL), 15),
                Op.check("/c2", -1)), null, false);
        emit("MultiRequest", "read-only", multi(
                Op.getChildren("/app"),
                Op.getData("/app/config"),
                Op.getChildren(UNICODE),
                Op.getData("")));
        emit("MultiRequest", "extremes", multi(
                Op.create(LONG, BIG, manyAcl(1000), CreateMode.PERSISTENT),
                Op.create(UNICODE, null, new ArrayList<>(), CreateMode.EPHEMERAL),
                Op.delete("", IMIN),
                Op.delete(CJK, IMAX),
                Op.setData(ACCENTED, null, IMIN),
                Op.setData(LONG_UNICODE, EMPTY, IMAX),
                Op.check(NUL, IMIN),
                Op.check("/", 0)));
        emit("MultiRequest", "single-delete", multi(Op.delete(PATH, 5)));
    }

    static void multiResponse() throws Exception {
        emit("MultiResponse", "empty", new MultiResponse());

        MultiResponse r = new MultiResponse();
        r.add(new OpResult.CreateResult("/app"));
        emit("MultiResponse", "create", r);

        r = new MultiResponse();
        r.add(new OpResult.CreateResult("/app/lock-0000000007", typicalStat()));
        r.add(new OpResult.CreateResult("", maxStat()));
        emit("MultiResponse", "create2", r);

        r = new MultiResponse();
        r.add(new OpResult.DeleteResult());
        r.add(new OpResult.SetDataResult(typicalStat()));
        r.add(new OpResult.CheckResult());
        emit("MultiResponse", "delete-setdata-check", r);

        r = new MultiResponse();
        r.add(new OpResult.GetChildrenResult(strings("a", "b", CJK.substring(1))));
        r.add(new OpResult.GetDataResult(JSON, typicalStat()));
        r.add(new OpResult.GetDataResult(null, zeroStat()));
        r.add(new OpResult.GetChildrenResult(strings()));
        r.add(new OpResult.GetDataResult(EMPTY, minStat()));
        emit("MultiResponse", "read", r);

        r = new MultiResponse();
        r.add(new OpResult.GetChildrenResult(manyStrings(1000, "n-")));
        r.add(new OpResult.GetDataResult(BIG, maxStat()));
        emit("MultiResponse", "read-big", r);

        // Failed transaction: ok ops report 0, the failing one its code, the rest -2.
        r = new MultiResponse();
        r.add(new OpResult.ErrorResult(0));
        r.add(new OpResult.ErrorResult(-101));
        r.add(new OpResult.ErrorResult(-2));
        emit("MultiResponse", "errors", r);

        r = new MultiResponse();
        r.add(new OpResult.ErrorResult(IMAX));
        r.add(new OpResult.ErrorResult(IMIN));
        emit("MultiResponse", "errors-extreme", r);

        r = new MultiResponse();
        r.add(new OpResult.CreateResult(PATH));
        r.add(new OpResult.CreateResult(UNICODE, randomStat()));
        r.add(new OpResult.DeleteResult());
        r.add(new OpResult.SetDataResult(negStat()));
        r.add(new OpResult.CheckResult());
        r.add(new OpResult.GetChildrenResult(strings(LONG)));
        r.add(new OpResult.GetDataResult(SMALL, typicalStat()));
        r.add(new OpResult.ErrorResult(-103));
        r.add(new OpResult.CreateResult(LONG_UNICODE));
        emit("MultiResponse", "mixed", r);
    }


    // ------------------------------------------------------------------
    // Transaction log (org.apache.zookeeper.txn, server.persistence)
    // ------------------------------------------------------------------

    static final int ZKLG = 0x5a4b4c47;

    /** The bytes of a record as PrepRequestProcessor puts them in a multi's Txn. */
    static byte[] bytesOf(Record r) throws IOException {
        ByteArrayOutputStream baos = new ByteArrayOutputStream();
        r.serialize(BinaryOutputArchive.getArchive(baos), "request");
        return baos.toByteArray();
    }

    static Txn txn(int type, Record r) throws IOException {
        return new Txn(type, bytesOf(r));
    }

    static MultiTxn multiTxn(Txn... txns) {
        return new MultiTxn(new ArrayList<>(Arrays.asList(txns)));
    }

    static CreateTxn createTxn() {
        return new CreateTxn("/locks/m/_c_2c5e-lock-0000000007", SMALL, openAcl(), true, 8);
    }

    static void txnRecords() throws Exception {
        // FileHeader(magic, version, dbid)
        emit("FileHeader", "log", new FileHeader(ZKLG, 2, 0));
        emit("FileHeader", "snapshot", new FileHeader(0x5a4b534e, 2, -1));
        emit("FileHeader", "max", new FileHeader(IMAX, IMAX, LMAX));
        emit("FileHeader", "min", new FileHeader(IMIN, IMIN, LMIN));
        emit("FileHeader", "zero", new FileHeader(0, 0, 0));

        // TxnHeader(clientId, cxid, zxid, time, type): every type a server logs.
        int[] types = {-10, -11, -1, 1, 2, 5, 7, 13, 14, 15, 16, 19, 20, 21};
        long[] sessions = {0x1000abcde000000L, 0, LMAX, LMIN, -1, 72057781111160832L};
        for (int i = 0; i < types.length; i++) {
            emit("TxnHeader", "type" + types[i], new TxnHeader(sessions[i % sessions.length],
                    i % 2 == 0 ? i : -i, 0x100000001L + i, 1764000000000L + i, types[i]));
        }
        emit("TxnHeader", "max", new TxnHeader(LMAX, IMAX, LMAX, LMAX, 1));
        emit("TxnHeader", "min", new TxnHeader(LMIN, IMIN, LMIN, LMIN, -11));

        // TxnDigest(version, treeDigest)
        emit("TxnDigest", "v2", new TxnDigest(2, 1371985504L));
        emit("TxnDigest", "zero", new TxnDigest(0, 0));
        emit("TxnDigest", "max", new TxnDigest(IMAX, LMAX));
        emit("TxnDigest", "min", new TxnDigest(IMIN, LMIN));

        // The creates.
        emit("CreateTxnV0", "typical", new CreateTxnV0(PATH, JSON, openAcl(), false));
        emit("CreateTxnV0", "ephemeral-null-buffer", new CreateTxnV0("/e", null, variedAcl(), true));
        emit("CreateTxnV0", "empty", new CreateTxnV0("", EMPTY, new ArrayList<>(), false));
        emit("CreateTxnV0", "long", new CreateTxnV0(LONG_UNICODE, BIG, manyAcl(1000), true));
        emit("CreateTxn", "typical", createTxn());
        emit("CreateTxn", "persistent", new CreateTxn(PATH, JSON, openAcl(), false, 0));
        emit("CreateTxn", "null-buffer-min", new CreateTxn(CJK, null, variedAcl(), false, IMIN));
        emit("CreateTxn", "empty-max", new CreateTxn("", EMPTY, new ArrayList<>(), true, IMAX));
        emit("CreateTxn", "long", new CreateTxn(LONG, BIG, manyAcl(1000), false, -1));
        emit("CreateTxn", "emoji", new CreateTxn(EMOJI, SMALL, openAcl(), true, 1), null, false);
        emit("CreateTTLTxn", "typical", new CreateTTLTxn(PATH, JSON, openAcl(), 3, 60000));
        emit("CreateTTLTxn", "null-buffer", new CreateTTLTxn("/t", null, variedAcl(), 0, 1));
        emit("CreateTTLTxn", "max", new CreateTTLTxn(UNICODE, SMALL, openAcl(), IMAX, LMAX));
        emit("CreateTTLTxn", "min", new CreateTTLTxn(ACCENTED, EMPTY, new ArrayList<>(), IMIN, LMIN));
        emit("CreateContainerTxn", "typical", new CreateContainerTxn("/locks/m", EMPTY, openAcl(), 4));
        emit("CreateContainerTxn", "null-buffer", new CreateContainerTxn("/c", null, variedAcl(), 0));
        emit("CreateContainerTxn", "max", new CreateContainerTxn(NUL, JSON, openAcl(), IMAX));
        emit("CreateContainerTxn", "long-min", new CreateContainerTxn(LONG, BIG, manyAcl(100), IMIN));

        // Path-and-int records, and DeleteTxn.
        Object[][] pathInts = {
            {"typical", PATH, 1}, {"root-zero", "/", 0}, {"unicode-max", UNICODE, IMAX},
            {"cjk-min", CJK, IMIN}, {"long-neg", LONG, -1},
        };
        for (Object[] c : pathInts) {
            String label = (String) c[0];
            String path = (String) c[1];
            int n = (Integer) c[2];
            emit("DeleteTxn", label, new DeleteTxn(path));
            emit("CheckVersionTxn", label, new CheckVersionTxn(path, n));
            emit("SetMaxChildrenTxn", label, new SetMaxChildrenTxn(path, n));
        }
        // SetDataTxn(path, data, version)
        emit("SetDataTxn", "typical", new SetDataTxn(PATH, JSON, 1));
        emit("SetDataTxn", "null-buffer", new SetDataTxn("/", null, 0));
        emit("SetDataTxn", "reconfig", new SetDataTxn("/zookeeper/config",
                "server.1=127.0.0.1:2888:3888:participant;2181\nversion=100000005"
                        .getBytes(StandardCharsets.UTF_8), -1));
        emit("SetDataTxn", "max", new SetDataTxn(UNICODE, SMALL, IMAX));
        emit("SetDataTxn", "big-min", new SetDataTxn(LONG, BIG, IMIN));
        // SetACLTxn(path, acl, version)
        emit("SetACLTxn", "typical", new SetACLTxn(PATH, openAcl(), 1));
        emit("SetACLTxn", "empty-vector", new SetACLTxn("", new ArrayList<>(), 0));
        emit("SetACLTxn", "varied-max", new SetACLTxn(UNICODE, variedAcl(), IMAX));
        emit("SetACLTxn", "long-vector-min", new SetACLTxn(LONG, manyAcl(1000), IMIN));

        // Sessions and errors.
        emit("CreateSessionTxn", "typical", new CreateSessionTxn(30000));
        emit("CreateSessionTxn", "zero", new CreateSessionTxn(0));
        emit("CreateSessionTxn", "max", new CreateSessionTxn(IMAX));
        emit("CreateSessionTxn", "min", new CreateSessionTxn(IMIN));
        emit("CloseSessionTxn", "none", new CloseSessionTxn(new ArrayList<>()));
        emit("CloseSessionTxn", "one", new CloseSessionTxn(strings("/tl/c/e-0000000000")));
        emit("CloseSessionTxn", "varied", new CloseSessionTxn(strings("", "/", CJK, NUL, UNICODE)));
        emit("CloseSessionTxn", "many", new CloseSessionTxn(manyStrings(1000, "/locks/m/_c_x-lock-")));
        emit("ErrorTxn", "node-exists", new ErrorTxn(-110));
        emit("ErrorTxn", "no-node", new ErrorTxn(-101));
        emit("ErrorTxn", "runtime-inconsistency", new ErrorTxn(-2));
        emit("ErrorTxn", "ok", new ErrorTxn(0));
        emit("ErrorTxn", "max", new ErrorTxn(IMAX));
        emit("ErrorTxn", "min", new ErrorTxn(IMIN));

        // Txn(type, data) and MultiTxn(txns)
        emit("Txn", "create", txn(1, createTxn()));
        emit("Txn", "check", txn(13, new CheckVersionTxn("/a", 2)));
        emit("Txn", "error", txn(-1, new ErrorTxn(-101)));
        emit("Txn", "empty-data", new Txn(2, EMPTY));
        emit("Txn", "big", new Txn(5, BIG));
        emit("MultiTxn", "empty", multiTxn());
        emit("MultiTxn", "check-create-delete", multiTxn(
                txn(13, new CheckVersionTxn("/tl", 2)),
                txn(1, createTxn()),
                txn(2, new DeleteTxn("/tl/p3"))));
        emit("MultiTxn", "failed", multiTxn(
                txn(1, createTxn()),
                txn(-1, new ErrorTxn(-101)),
                txn(-1, new ErrorTxn(-2))));
        emit("MultiTxn", "every-inner-type", multiTxn(
                txn(1, createTxn()),
                txn(15, createTxn()),
                txn(21, new CreateTTLTxn("/t", JSON, openAcl(), 1, 5000)),
                txn(19, new CreateContainerTxn("/c", EMPTY, openAcl(), 2)),
                txn(2, new DeleteTxn("/d")),
                txn(20, new DeleteTxn("/c")),
                txn(5, new SetDataTxn("/s", SMALL, 3)),
                txn(13, new CheckVersionTxn("/s", 3))));
    }

    /**
     * One log record's bytes as Util.marshallTxnEntry writes them (hdr, txn if any, digest if
     * any); rendered as a record of those three fields.
     */
    static final class TxnLogEntry implements Record {
        final TxnHeader hdr;
        final Record txn;
        final TxnDigest digest;

        TxnLogEntry(TxnHeader hdr, Record txn, TxnDigest digest) {
            this.hdr = hdr;
            this.txn = txn;
            this.digest = digest;
        }

        @Override
        public void serialize(OutputArchive oa, String tag) throws IOException {
            oa.startRecord(this, tag);
            hdr.serialize(oa, "hdr");
            if (txn != null) {
                txn.serialize(oa, "txn");
            }
            if (digest != null) {
                digest.serialize(oa, "digest");
            }
            oa.endRecord(this, tag);
        }

        @Override
        public void deserialize(org.apache.jute.InputArchive ia, String tag) {
            throw new UnsupportedOperationException("deserialize");
        }
    }

    static int entryCount = 0;

    static void entry(String label, int type, Record txn, boolean digest) throws Exception {
        entryCount++;
        TxnHeader hdr = new TxnHeader(0x1000abcde000000L + entryCount, entryCount,
                0x200000000L + entryCount, 1764000000000L + entryCount, type);
        TxnDigest d = digest ? new TxnDigest(2, 0x5eed0000L + entryCount) : null;
        TxnLogEntry e = new TxnLogEntry(hdr, txn, d);
        byte[] java = Util.marshallTxnEntry(hdr, txn, d);
        ByteArrayOutputStream baos = new ByteArrayOutputStream();
        e.serialize(BinaryOutputArchive.getArchive(baos), "");
        if (!Arrays.equals(java, baos.toByteArray())) {
            throw new IllegalStateException("TxnLogEntry differs from Util.marshallTxnEntry: " + label);
        }
        emit("TxnLogEntry", label + (digest ? "-digest" : ""), e, null, false);
    }

    static void txnLogEntries() throws Exception {
        for (boolean digest : new boolean[] {true, false}) {
            entry("create-session", -10, new CreateSessionTxn(30000), digest);
            entry("close-session", -11, new CloseSessionTxn(strings("/a", "/b/e-0000000001")),
                    digest);
            entry("create", 1, createTxn(), digest);
            entry("create2", 15, new CreateTxn(PATH, JSON, variedAcl(), false, 3), digest);
            entry("create-ttl", 21, new CreateTTLTxn(PATH, JSON, openAcl(), 3, 60000), digest);
            entry("create-container", 19, new CreateContainerTxn("/locks/m", EMPTY, openAcl(), 4),
                    digest);
            entry("delete", 2, new DeleteTxn(PATH), digest);
            entry("delete-container", 20, new DeleteTxn("/locks/m"), digest);
            entry("set-data", 5, new SetDataTxn(PATH, SMALL, 2), digest);
            entry("reconfig", 16, new SetDataTxn("/zookeeper/config", JSON, -1), digest);
            entry("set-acl", 7, new SetACLTxn(PATH, variedAcl(), 1), digest);
            entry("error", -1, new ErrorTxn(-110), digest);
            entry("multi", 14, multiTxn(
                    txn(13, new CheckVersionTxn("/tl", 2)),
                    txn(1, createTxn()),
                    txn(2, new DeleteTxn("/tl/p3"))), digest);
            entry("multi-failed", 14, multiTxn(
                    txn(1, createTxn()),
                    txn(-1, new ErrorTxn(-101)),
                    txn(-1, new ErrorTxn(-2))), digest);
        }
        // A closeSession as servers before 3.6 logged it: nothing after the header.
        entry("close-session-no-body", -11, null, false);
        // A create as servers before 3.3 logged it.
        entry("create-v0", 1, new CreateTxnV0(PATH, JSON, openAcl(), true), false);
    }

    // ------------------------------------------------------------------

    static final String[] EXPECTED = {
        "Id", "ACL", "Stat", "ClientInfo",
        "ConnectRequest", "ConnectResponse", "SetWatches", "SetWatches2", "RequestHeader",
        "MultiHeader", "AuthPacket", "ReplyHeader", "GetDataRequest", "SetDataRequest",
        "ReconfigRequest", "SetDataResponse", "GetSASLRequest", "SetSASLRequest",
        "SetSASLResponse", "CreateRequest", "CreateTTLRequest", "DeleteRequest",
        "GetChildrenRequest", "GetAllChildrenNumberRequest", "GetChildren2Request",
        "CheckVersionRequest", "SyncRequest", "SyncResponse", "GetACLRequest", "SetACLRequest",
        "SetACLResponse", "AddWatchRequest", "WatcherEvent", "ErrorResponse", "CreateResponse",
        "Create2Response", "ExistsRequest", "ExistsResponse", "GetDataResponse",
        "GetChildrenResponse", "GetAllChildrenNumberResponse", "GetChildren2Response",
        "GetACLResponse", "CheckWatchesRequest", "RemoveWatchesRequest", "GetEphemeralsRequest",
        "GetEphemeralsResponse", "WhoAmIResponse", "MultiRequest", "MultiResponse",
        "FileHeader", "TxnHeader", "TxnDigest", "CreateTxnV0", "CreateTxn", "CreateTTLTxn",
        "CreateContainerTxn", "DeleteTxn", "SetDataTxn", "CheckVersionTxn", "SetACLTxn",
        "SetMaxChildrenTxn", "CreateSessionTxn", "CloseSessionTxn", "ErrorTxn", "Txn",
        "MultiTxn", "TxnLogEntry",
    };

    public static void main(String[] args) {
        int status = 0;
        try {
            out = new PrintWriter(new BufferedWriter(
                    new OutputStreamWriter(System.out, StandardCharsets.UTF_8), 1 << 16));
            dataRecords();
            connect();
            watches();
            headers();
            simplePathRecords();
            dataAndAcl();
            create();
            children();
            multiRequest();
            multiResponse();
            txnRecords();
            txnLogEntries();
            out.flush();
            if (out.checkError()) {
                throw new IOException("error writing stdout");
            }

            Set<String> expected = new HashSet<>(Arrays.asList(EXPECTED));
            if (expected.size() != 68) {
                throw new IllegalStateException("expected list has " + expected.size() + " names");
            }
            if (!counts.keySet().equals(expected)) {
                Set<String> missing = new HashSet<>(expected);
                missing.removeAll(counts.keySet());
                Set<String> extra = new HashSet<>(counts.keySet());
                extra.removeAll(expected);
                throw new IllegalStateException("record set mismatch; missing=" + missing + " extra=" + extra);
            }
            int total = 0;
            for (Map.Entry<String, Integer> e : counts.entrySet()) {
                if (e.getValue() < 4) {
                    throw new IllegalStateException(e.getKey() + " has only " + e.getValue() + " cases");
                }
                total += e.getValue();
            }
            System.err.println("Conformance: " + total + " cases, " + counts.size() + " records ("
                    + roundTripChecked + " round-trip checked, " + roundTripSkipped + " skipped)");
            for (Map.Entry<String, Integer> e : counts.entrySet()) {
                System.err.println("  " + e.getKey() + ": " + e.getValue());
            }
        } catch (Throwable t) {
            System.err.println("Conformance: FAILED");
            t.printStackTrace();
            status = 1;
        }
        if (out != null) {
            out.flush();
        }
        System.exit(status);
    }
}
