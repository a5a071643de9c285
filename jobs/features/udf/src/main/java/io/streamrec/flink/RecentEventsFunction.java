package io.streamrec.flink;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple4;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.types.Row;
import org.apache.flink.util.Collector;

/**
 * The fresh view: on every event, the user's last {@code sequenceLength} arrivals
 * (packed, sorted, so in time order) and the newest event time among them. It waits
 * for no watermark, so a click is in the changelog as soon as it is read.
 *
 * <p>The same rows as the SQL {@code OVER (PARTITION BY user_id ORDER BY proctime ROWS
 * BETWEEN n - 1 PRECEDING AND CURRENT ROW)} it replaces: arrivals in the order this
 * subtask reads them.
 *
 * <p>A user idle for {@code stateTtlMs} of processing time starts afresh (0: never),
 * as the SQL job's state TTL did. The expiry is this function's own, not Flink's state
 * TTL: on the heap backend the TTL's incremental cleanup walks the state table on
 * every access, which was 46% of this operator's CPU. Here an idle user is read as
 * empty at once, and its state is freed by a processing-time timer at most
 * {@link #expiryGranuleMs} after the TTL (timers round up to it, so a user's events
 * within one granule share one timer).
 */
final class RecentEventsFunction extends KeyedProcessFunction<Long, Row, Row> {
    private static final TypeInformation<byte[][]> PACKED =
            Types.OBJECT_ARRAY(PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO);
    /**
     * Event times and packed events in arrival order, the same packed events sorted (kept
     * so, instead of sorting them for every row), and the newest arrival's processing time.
     * The packed events are kept as their UTF-8 bytes, which the row copies as they are
     * (encoding 50 strings for every row was a third of this operator's time); sorted by
     * those bytes, which is the order of their code points, as Python and Flink SQL sort.
     */
    private static final TypeInformation<Tuple4<long[], byte[][], byte[][], Long>> ARRIVALS =
            Types.TUPLE(Types.PRIMITIVE_ARRAY(Types.LONG), PACKED, PACKED, Types.LONG);
    /** The longest an expired user's state outlives its TTL. */
    static final long MAX_EXPIRY_GRANULE_MS = 60_000;

    private final int sequenceLength;
    private final long stateTtlMs;
    private final long expiryGranuleMs;
    private transient ValueState<Tuple4<long[], byte[][], byte[][], Long>> arrivals;
    private transient ChangelogRecord record;

    RecentEventsFunction(int sequenceLength, long stateTtlMs) {
        this.sequenceLength = sequenceLength;
        this.stateTtlMs = stateTtlMs;
        this.expiryGranuleMs = expiryGranule(stateTtlMs);
    }

    /** A tenth of the TTL, at least 1 ms and at most {@link #MAX_EXPIRY_GRANULE_MS}. */
    static long expiryGranule(long stateTtlMs) {
        return Math.max(1, Math.min(MAX_EXPIRY_GRANULE_MS, stateTtlMs / 10));
    }

    /** The first granule boundary at or after {@code at}: when the expiry timer fires. */
    static long expiryTimer(long at, long granuleMs) {
        return Math.floorDiv(at + granuleMs - 1, granuleMs) * granuleMs;
    }

    @Override
    public void open(OpenContext context) {
        record = new ChangelogRecord("user_recent");
        // Not the name of the earlier TTL-wrapped state: a checkpoint taken with it
        // restores the fresh view empty instead of failing on the changed serializer.
        arrivals = getRuntimeContext().getState(
                new ValueStateDescriptor<>("recent-events", ARRIVALS));
    }

    @Override
    public void processElement(Row event, Context context, Collector<Row> out) throws Exception {
        long now = context.timerService().currentProcessingTime();
        Tuple4<long[], byte[][], byte[][], Long> last = arrivals.value();
        if (last != null && expired(last.f3, now)) {
            last = null;  // idle past the TTL; its timer may not have fired yet
        }
        long[] times = last == null ? new long[0] : last.f0;
        byte[][] packed = last == null ? new byte[0][] : last.f1;
        byte[][] sorted = last == null ? new byte[0][] : last.f2;
        int keep = Math.min(times.length, sequenceLength - 1);
        long[] nextTimes = new long[keep + 1];
        byte[][] nextPacked = new byte[keep + 1][];
        System.arraycopy(times, times.length - keep, nextTimes, 0, keep);
        System.arraycopy(packed, packed.length - keep, nextPacked, 0, keep);
        nextTimes[keep] = event.<Long>getFieldAs(KeyedFeatures.TS);
        byte[] arrival = event.<String>getFieldAs(KeyedFeatures.PACKED)
                .getBytes(StandardCharsets.UTF_8);
        nextPacked[keep] = arrival;
        int leaving = packed.length - keep;  // one once the sequence is full
        for (int i = 0; i < leaving - 1; i++) {
            sorted = removed(sorted, packed[i]);  // only if the length was lowered
        }
        sorted = leaving > 0 ? replaced(sorted, packed[leaving - 1], arrival)
                : inserted(sorted, arrival);
        arrivals.update(Tuple4.of(nextTimes, nextPacked, sorted, now));
        if (stateTtlMs > 0) {
            long timer = expiryTimer(now + stateTtlMs, expiryGranuleMs);
            // The user's last arrival set this very timer, which has not fired (it is
            // later than now): registering it again is a lookup in the timer set per event.
            if (last == null || expiryTimer(last.f3 + stateTtlMs, expiryGranuleMs) != timer) {
                context.timerService().registerProcessingTimeTimer(timer);
            }
        }

        long latest = Long.MIN_VALUE;
        for (long ts : nextTimes) {
            latest = Math.max(latest, ts);
        }
        long user = context.getCurrentKey();
        out.collect(record.start(user).field("user_id", user)
                .field("latest_ts", latest).utf8Field("events", sorted).row());
    }

    /**
     * Where {@code value} goes in {@code sorted} (ascending, unsigned bytes). Events mostly
     * arrive in time order, and the packed value starts with the time: the last place is
     * tried first.
     */
    private static int insertionPoint(byte[][] sorted, byte[] value) {
        int n = sorted.length;
        if (n == 0 || Arrays.compareUnsigned(sorted[n - 1], value) <= 0) {
            return n;
        }
        int at = Arrays.binarySearch(sorted, 0, n - 1, value, Arrays::compareUnsigned);
        return at >= 0 ? at : -at - 1;
    }

    /** Where one copy of {@code value} is in {@code sorted}: the oldest arrival, often first. */
    private static int indexOf(byte[][] sorted, byte[] value) {
        if (sorted.length > 0 && Arrays.equals(sorted[0], value)) {
            return 0;
        }
        int at = Arrays.binarySearch(sorted, value, Arrays::compareUnsigned);
        if (at < 0) {
            throw new IllegalStateException("the sorted arrivals lost an event");
        }
        return at;
    }

    /** {@code sorted} (ascending, unsigned bytes) with {@code value} in its place. */
    static byte[][] inserted(byte[][] sorted, byte[] value) {
        int insert = insertionPoint(sorted, value);
        byte[][] next = new byte[sorted.length + 1][];
        System.arraycopy(sorted, 0, next, 0, insert);
        next[insert] = value;
        System.arraycopy(sorted, insert, next, insert + 1, sorted.length - insert);
        return next;
    }

    /** {@code sorted} (ascending, unsigned bytes) without one copy of {@code value}. */
    static byte[][] removed(byte[][] sorted, byte[] value) {
        int at = indexOf(sorted, value);
        byte[][] next = new byte[sorted.length - 1][];
        System.arraycopy(sorted, 0, next, 0, at);
        System.arraycopy(sorted, at + 1, next, at, sorted.length - at - 1);
        return next;
    }

    /** {@code sorted} with one copy of {@code leaving} out and {@code arriving} in: one copy. */
    static byte[][] replaced(byte[][] sorted, byte[] leaving, byte[] arriving) {
        int out = indexOf(sorted, leaving);
        int in = insertionPoint(sorted, arriving);  // in the array with leaving still there
        byte[][] next = new byte[sorted.length][];
        if (in > out) {
            // [0, out) stay, (out, in) move down one, arriving lands just before in.
            System.arraycopy(sorted, 0, next, 0, out);
            System.arraycopy(sorted, out + 1, next, out, in - out - 1);
            next[in - 1] = arriving;
            System.arraycopy(sorted, in, next, in, sorted.length - in);
        } else {
            // [0, in) stay, arriving at in, [in, out) move up one, (out, end) stay.
            System.arraycopy(sorted, 0, next, 0, in);
            next[in] = arriving;
            System.arraycopy(sorted, in, next, in + 1, out - in);
            System.arraycopy(sorted, out + 1, next, out + 1, sorted.length - out - 1);
        }
        return next;
    }

    /** Frees the user's state if no arrival since has renewed it (that one set a later timer). */
    @Override
    public void onTimer(long timestamp, OnTimerContext context, Collector<Row> out)
            throws Exception {
        Tuple4<long[], byte[][], byte[][], Long> last = arrivals.value();
        if (last != null && expired(last.f3, timestamp)) {
            arrivals.clear();
        }
    }

    private boolean expired(long lastArrival, long now) {
        return stateTtlMs > 0 && now - lastArrival >= stateTtlMs;
    }
}
