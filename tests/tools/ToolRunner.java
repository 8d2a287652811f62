// Runs Kafka's command-line tools one after another in one JVM, so a test pays the JVM start once.
//
// Each line read from stdin is one invocation: the tool's main class, then its arguments, separated by
// \u0001. For each, this writes to stdout "EXIT <status> <stdout bytes> <stderr bytes>\n" followed by
// the tool's stdout and stderr. Kafka's tools end through org.apache.kafka.common.utils.Exit, whose
// exit procedure is replaced here by an exception carrying the status (and what the tool would print after
// exiting is dropped, as the JVM would have stopped); a main that returns is status 0.
// A tool whose argument parser rejects its arguments may call System.exit itself (argparse4j does), which
// ends this JVM: the caller then sees no answer. Launched as a single source file:
// java -cp <kafka tools> ToolRunner.java

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

public class ToolRunner {
    static final class ToolExit extends RuntimeException {
        final int status;

        ToolExit(int status) {
            super("exit " + status, null, false, false);
            this.status = status;
        }
    }

    // System.out and System.err for the whole run: Scala's Console keeps the stream it first sees,
    // so the streams stay and what they write to is switched per invocation.
    static final class Switch extends OutputStream {
        volatile OutputStream target = OutputStream.nullOutputStream();

        @Override
        public void write(int b) throws java.io.IOException {
            target.write(b);
        }

        @Override
        public void write(byte[] b, int off, int len) throws java.io.IOException {
            target.write(b, off, len);
        }
    }

    static final Switch out = new Switch();
    static final Switch err = new Switch();
    static volatile Integer exited;

    static void exit(int status) {
        if (exited == null) {
            exited = status;
            out.target = OutputStream.nullOutputStream();
            err.target = OutputStream.nullOutputStream();
        }
        throw new ToolExit(status);
    }

    public static void main(String[] ignored) throws Exception {
        PrintStream protocol = System.out;
        System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
        System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
        org.apache.kafka.common.utils.Exit.setExitProcedure((status, message) -> exit(status));
        org.apache.kafka.common.utils.Exit.setHaltProcedure((status, message) -> exit(status));
        BufferedReader input = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = input.readLine()) != null) {
            String[] parts = line.split("\u0001", -1);
            ByteArrayOutputStream stdout = new ByteArrayOutputStream();
            ByteArrayOutputStream stderr = new ByteArrayOutputStream();
            out.target = stdout;
            err.target = stderr;
            exited = null;
            int status = run(parts[0], Arrays.copyOfRange(parts, 1, parts.length), stderr);
            System.out.flush();
            System.err.flush();
            if (exited != null) {
                status = exited;
            }
            out.target = OutputStream.nullOutputStream();
            err.target = OutputStream.nullOutputStream();
            byte[] o = stdout.toByteArray();
            byte[] e = stderr.toByteArray();
            protocol.print("EXIT " + status + " " + o.length + " " + e.length + "\n");
            protocol.write(o);
            protocol.write(e);
            protocol.flush();
        }
    }

    static int run(String mainClass, String[] args, ByteArrayOutputStream stderr) {
        try {
            Class.forName(mainClass).getMethod("main", String[].class).invoke(null, (Object) args);
            return 0;
        } catch (InvocationTargetException wrapped) {
            Throwable cause = wrapped.getCause();
            if (cause instanceof ToolExit || exited != null) {
                return exited != null ? exited : ((ToolExit) cause).status;
            }
            cause.printStackTrace(new PrintStream(stderr, true, StandardCharsets.UTF_8));
            return 1;
        } catch (ReflectiveOperationException missing) {
            missing.printStackTrace(new PrintStream(stderr, true, StandardCharsets.UTF_8));
            return 2;
        }
    }
}
