package io.streamrec.flink;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.table.api.Table;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.types.Row;

/**
 * The window views (user, item, category) as keyed sliced-window functions
 * (called from Python through the gateway; see jobs/features/windows.py).
 *
 * <p>Input: a table of valid events with the columns of {@link #EVENT_FIELDS} and
 * its rowtime attribute (whose watermarks close the windows). Each view is a table
 * with the columns its changelog sink takes, less the key and the view tag.
 */
public final class WindowFeatures {
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
    private final boolean latestOnly;

    private WindowFeatures(StreamTableEnvironment tableEnv, Table events, long windowMs,
            long slideMs, boolean latestOnly) {
        this.tableEnv = tableEnv;
        this.events = tableEnv.toDataStream(events);
        this.slicing = new Slicing(windowMs, slideMs);
        this.latestOnly = latestOnly;
    }

    /** The builder over {@code events}; {@code latestOnly}: see {@link SlicedWindowFunction}. */
    public static WindowFeatures over(StreamTableEnvironment tableEnv, Table events,
            long windowMs, long slideMs, boolean latestOnly) {
        return new WindowFeatures(tableEnv, events, windowMs, slideMs, latestOnly);
    }

    /** user_id, window_start, window_end, events (the last {@code sequenceLength}), counts. */
    public Table userWindows(int sequenceLength) {
        DataStream<Row> rows = events
                .keyBy(row -> row.<Long>getFieldAs(USER), Types.LONG)
                .process(new UserWindowFunction(slicing, latestOnly, sequenceLength),
                        UserWindowFunction.OUTPUT)
                .uid("streamrec-user-windows")
                .name("user windows");
        return tableEnv.fromDataStream(rows);
    }

    /** item_id, category_id, window_start, window_end, counts. */
    public Table itemWindows() {
        DataStream<Row> rows = events
                .keyBy(row -> Tuple2.of(row.<Long>getFieldAs(ITEM), row.<Long>getFieldAs(CATEGORY)),
                        Types.TUPLE(Types.LONG, Types.LONG))
                .process(new ItemWindowFunction(slicing, latestOnly), ItemWindowFunction.OUTPUT)
                .uid("streamrec-item-windows")
                .name("item windows");
        return tableEnv.fromDataStream(rows);
    }

    /** category_id, window_start, window_end, counts, top_items (best first). */
    public Table categoryWindows(int topItems) {
        DataStream<Row> rows = events
                .keyBy(row -> row.<Long>getFieldAs(CATEGORY), Types.LONG)
                .process(new CategoryWindowFunction(slicing, latestOnly, topItems),
                        CategoryWindowFunction.OUTPUT)
                .uid("streamrec-category-windows")
                .name("category windows");
        return tableEnv.fromDataStream(rows);
    }

    static int behaviorIndex(String behavior) {
        for (int i = 0; i < BEHAVIORS.length; i++) {
            if (BEHAVIORS[i].equals(behavior)) {
                return i;
            }
        }
        throw new IllegalArgumentException("unknown behaviour " + behavior);
    }

    /** Output type: the given leading columns, then the window bounds and the four counts. */
    static TypeInformation<Row> windowRow(String[] names, TypeInformation<?>[] types,
            String trailingName, TypeInformation<?> trailingType) {
        int lead = names.length;
        int total = lead + 2 + BEHAVIORS.length + (trailingName == null ? 0 : 1);
        String[] allNames = new String[total];
        TypeInformation<?>[] allTypes = new TypeInformation<?>[total];
        System.arraycopy(names, 0, allNames, 0, lead);
        System.arraycopy(types, 0, allTypes, 0, lead);
        allNames[lead] = "window_start";
        allNames[lead + 1] = "window_end";
        allTypes[lead] = Types.LONG;
        allTypes[lead + 1] = Types.LONG;
        for (int i = 0; i < BEHAVIORS.length; i++) {
            allNames[lead + 2 + i] = BEHAVIORS[i];
            allTypes[lead + 2 + i] = Types.LONG;
        }
        if (trailingName != null) {
            allNames[total - 1] = trailingName;
            allTypes[total - 1] = trailingType;
        }
        return Types.ROW_NAMED(allNames, allTypes);
    }

    /** A window row: the leading values, the bounds, the counts, then the trailing value. */
    static Row windowValues(Object[] leading, long start, long end, long[] counts,
            Object trailing) {
        int lead = leading.length;
        Row row = new Row(lead + 2 + BEHAVIORS.length + (trailing == null ? 0 : 1));
        for (int i = 0; i < lead; i++) {
            row.setField(i, leading[i]);
        }
        row.setField(lead, start);
        row.setField(lead + 1, end);
        for (int i = 0; i < BEHAVIORS.length; i++) {
            row.setField(lead + 2 + i, counts[i]);
        }
        if (trailing != null) {
            row.setField(row.getArity() - 1, trailing);
        }
        return row;
    }
}
