// Decompresses a ZooKeeper snapshot file with ZooKeeper's own reader (SnapStream picks
// GZIPInputStream or SnappyInputStream by the file name's suffix, as the server does when it
// loads it): the reference the auditor's decoders are checked against.
//
// java -cp zookeeper.jar SnapDecompress.java <snapshot.<zxid>.gz|.snappy> <out>

import java.io.File;
import java.io.FileOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import org.apache.zookeeper.server.persistence.SnapStream;

public class SnapDecompress {
    public static void main(String[] args) throws Exception {
        try (InputStream in = SnapStream.getInputStream(new File(args[0]));
             OutputStream out = new FileOutputStream(args[1])) {
            in.transferTo(out);
        }
    }
}
