package io.streamrec.flink;

import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.PrintStream;

/**
 * The feature job's event parser as a filter, for the parity tests: reads frames
 * (a 4-byte big-endian length, then the event's bytes) from stdin and writes one
 * line per frame: {@code ok <user> <item> <category> <behavior> <ts>} or the
 * error kind. Arguments: the byte limit, the allowed future skew (ms), "now" (ms).
 */
public final class ParserVerdicts {
    private ParserVerdicts() {}

    public static void main(String[] args) throws Exception {
        int maxBytes = Integer.parseInt(args[0]);
        long skewMs = Long.parseLong(args[1]);
        long nowMs = Long.parseLong(args[2]);
        DataInputStream in = new DataInputStream(System.in);
        PrintStream out = new PrintStream(new BufferedOutputStream(System.out), false, "UTF-8");
        while (true) {
            int length;
            try {
                length = in.readInt();
            } catch (EOFException end) {
                break;
            }
            byte[] body = new byte[length];
            in.readFully(body);
            BehaviorEventParser.Result r = BehaviorEventParser.parse(body, maxBytes, skewMs, nowMs);
            if (r.valid()) {
                out.println("ok " + r.userId + " " + r.itemId + " " + r.categoryId + " "
                        + r.behavior + " " + r.ts);
            } else {
                out.println(r.errorKind);
            }
            out.flush();
        }
    }
}
