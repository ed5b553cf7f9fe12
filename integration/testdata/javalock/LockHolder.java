import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;

/**
 * Takes the lock of a state directory as Kafka Streams' StateDirectory does (FileChannel.tryLock on
 * state.dir/application.id/.lock, opened with CREATE and WRITE), prints "held" or "refused", and
 * holds the lock until its standard input closes. Run with `java LockHolder.java <lock file>`.
 */
public class LockHolder {
    public static void main(String[] args) throws Exception {
        try (FileChannel ch = FileChannel.open(Paths.get(args[0]), StandardOpenOption.CREATE, StandardOpenOption.WRITE)) {
            FileLock lock = ch.tryLock();
            if (lock == null) {
                System.out.println("refused");
                System.out.flush();
                return;
            }
            System.out.println("held");
            System.out.flush();
            while (System.in.read() >= 0) {
                // hold the lock until the test closes our standard input
            }
            lock.release();
        }
    }
}
