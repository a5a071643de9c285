package io.streamrec.flink;

import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.KeyedStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.table.api.Table;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.types.Row;

/**
 * The keyed views: the fresh view ({@link RecentEventsFunction}) and the window views
 * (user, item, category) as keyed sliced-window functions (called from Python through
 * the gateway; see jobs/features/keyed.py).
 *
 * <p>Input: a table of valid events with the columns of {@link #EVENT_FIELDS} and
 * its rowtime attribute (whose watermarks close the windows). Each view is a table
 * of changelog records, key and value bytes ({@link ChangelogRecord}).
 */
public final class KeyedFeatures {
    /** The columns the input table must have, in this order. */
    public static final String[] EVENT_FIELDS = {
        "user_id", "item_id", "category_id", "behavior", "ts", "packed"};
    static final int USER = 0;
    static final int ITEM = 1;
    static final int CATEGORY = 2;
    static final int BEHAVIOR = 3;
    static final int TS = 4;
    static final int PACKED = 5;
    /** Behaviours in the order of the count columns. */
    static final String[] BEHAVIORS = {"pv", "cart", "fav", "buy"};
    /** Trend weight of each behaviour, in the order of {@link #BEHAVIORS}. */
    static final long[] TREND_WEIGHTS = {1, 3, 2, 4};

    private final StreamTableEnvironment tableEnv;
    private final DataStream<Row> events;
    private final Slicing slicing;
    private final boolean changedOnly;

    private KeyedFeatures(StreamTableEnvironment tableEnv, Table events, long windowMs,
            long slideMs, boolean changedOnly) {
        this.tableEnv = tableEnv;
        this.events = tableEnv.toDataStream(events);
        this.slicing = new Slicing(windowMs, slideMs);
        this.changedOnly = changedOnly;
    }

    /** The builder over {@code events}; {@code changedOnly}: see {@link SlicedWindowFunction}. */
    public static KeyedFeatures over(StreamTableEnvironment tableEnv, Table events,
            long windowMs, long slideMs, boolean changedOnly) {
        return new KeyedFeatures(tableEnv, events, windowMs, slideMs, changedOnly);
    }

    /** The fresh view: on every event, the user's last {@code sequenceLength} arrivals. */
    public Table recentEvents(int sequenceLength, long stateTtlMs) {
        return view(byUser(), new RecentEventsFunction(sequenceLength, stateTtlMs), "user recent");
    }

    /** A user's windows: the last {@code sequenceLength} events and the counts. */
    public Table userWindows(int sequenceLength) {
        return windows(byUser(), new UserWindowFunction(slicing, changedOnly, sequenceLength),
                "user windows");
    }

    /** An item's windows (per category): the counts. */
    public Table itemWindows() {
        KeyedStream<Row, Tuple2<Long, Long>> byItem = events.keyBy(
                row -> Tuple2.of(row.<Long>getFieldAs(ITEM), row.<Long>getFieldAs(CATEGORY)),
                Types.TUPLE(Types.LONG, Types.LONG));
        return windows(byItem, new ItemWindowFunction(slicing, changedOnly), "item windows");
    }

    /** A category's windows: the counts and the top {@code topItems} items, best first. */
    public Table categoryWindows(int topItems) {
        KeyedStream<Row, Long> byCategory =
                events.keyBy(row -> row.<Long>getFieldAs(CATEGORY), Types.LONG);
        return windows(byCategory, new CategoryWindowFunction(slicing, changedOnly, topItems),
                "category windows");
    }

    private KeyedStream<Row, Long> byUser() {
        return events.keyBy(row -> row.<Long>getFieldAs(USER), Types.LONG);
    }

    /**
     * The table of a view's changelog records. The uid ("streamrec-" and the name, dashed)
     * is fixed, so a checkpoint finds the function's state again after the job is rebuilt.
     */
    private <K> Table view(KeyedStream<Row, K> keyed, KeyedProcessFunction<K, Row, Row> function,
            String name) {
        return table(keyed.process(function, ChangelogRecord.TYPE), name);
    }

    /** {@link #view} for a window function, whose operator also restores earlier layouts. */
    private <K, S> Table windows(KeyedStream<Row, K> keyed, SlicedWindowFunction<K, S> function,
            String name) {
        return table(keyed.transform(name, ChangelogRecord.TYPE,
                new SlicedWindowOperator<>(function)), name);
    }

    private Table table(SingleOutputStreamOperator<Row> rows, String name) {
        return tableEnv.fromDataStream(rows.uid("streamrec-" + name.replace(' ', '-')).name(name));
    }

    static int behaviorIndex(String behavior) {
        for (int i = 0; i < BEHAVIORS.length; i++) {
            if (BEHAVIORS[i].equals(behavior)) {
                return i;
            }
        }
        throw new IllegalArgumentException("unknown behaviour " + behavior);
    }
}
