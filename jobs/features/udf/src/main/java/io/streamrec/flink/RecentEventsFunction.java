package io.streamrec.flink;

import java.time.Duration;
import java.util.Arrays;

import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.StateTtlConfig;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple2;
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
 * subtask reads them. A user idle for {@code stateTtlMs} of processing time starts
 * afresh (0: never), as the SQL job's state TTL did.
 */
final class RecentEventsFunction extends KeyedProcessFunction<Long, Row, Row> {
    private static final TypeInformation<Tuple2<long[], String[]>> ARRIVALS =
            Types.TUPLE(Types.PRIMITIVE_ARRAY(Types.LONG), Types.OBJECT_ARRAY(Types.STRING));

    private final int sequenceLength;
    private final long stateTtlMs;
    private transient ValueState<Tuple2<long[], String[]>> arrivals;

    RecentEventsFunction(int sequenceLength, long stateTtlMs) {
        this.sequenceLength = sequenceLength;
        this.stateTtlMs = stateTtlMs;
    }

    @Override
    public void open(OpenContext context) {
        ValueStateDescriptor<Tuple2<long[], String[]>> descriptor =
                new ValueStateDescriptor<>("recent-arrivals", ARRIVALS);
        if (stateTtlMs > 0) {
            descriptor.enableTimeToLive(StateTtlConfig.newBuilder(Duration.ofMillis(stateTtlMs))
                    .setUpdateType(StateTtlConfig.UpdateType.OnCreateAndWrite)
                    .setStateVisibility(StateTtlConfig.StateVisibility.NeverReturnExpired)
                    .build());
        }
        arrivals = getRuntimeContext().getState(descriptor);
    }

    @Override
    public void processElement(Row event, Context context, Collector<Row> out) throws Exception {
        Tuple2<long[], String[]> last = arrivals.value();
        long[] times = last == null ? new long[0] : last.f0;
        String[] packed = last == null ? new String[0] : last.f1;
        int keep = Math.min(times.length, sequenceLength - 1);
        long[] nextTimes = new long[keep + 1];
        String[] nextPacked = new String[keep + 1];
        System.arraycopy(times, times.length - keep, nextTimes, 0, keep);
        System.arraycopy(packed, packed.length - keep, nextPacked, 0, keep);
        nextTimes[keep] = event.<Long>getFieldAs(KeyedFeatures.TS);
        nextPacked[keep] = event.getFieldAs(KeyedFeatures.PACKED);
        arrivals.update(Tuple2.of(nextTimes, nextPacked));

        long latest = Long.MIN_VALUE;
        for (long ts : nextTimes) {
            latest = Math.max(latest, ts);
        }
        String[] sorted = nextPacked.clone();
        Arrays.sort(sorted);
        long user = context.getCurrentKey();
        out.collect(ChangelogRecord.of("user_recent", user).field("user_id", user)
                .field("latest_ts", latest).field("events", sorted).row());
    }
}
