package io.streamrec.flink;

import org.apache.flink.table.annotation.DataTypeHint;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.functions.ScalarFunction;

/**
 * {@code PARSE_BEHAVIOR_EVENT(body, max_bytes, max_future_skew_ms)}: the event's
 * fields and its packed form, or an error kind and text for the dead-letter topic.
 *
 * <p>The row is built in Flink's internal form ({@link RowData}): an external {@code Row}
 * was converted field by field after every call. The packed form ({@link #packed}) was
 * a SQL expression (a cast per number, a pad and six concatenations, each a new string
 * per event); built here it is one string.
 */
public class ParseBehaviorEvent extends ScalarFunction {
    /** Digits of the zero-padded event time: string order is time order (schemas/features.py). */
    static final int TS_DIGITS = 13;
    private static final String ZEROS = "0".repeat(TS_DIGITS);

    @DataTypeHint(value = "ROW<user_id BIGINT, item_id BIGINT, category_id BIGINT, "
            + "behavior STRING, ts BIGINT, packed STRING, error_kind STRING, error STRING>",
            bridgedTo = RowData.class)
    public RowData eval(byte[] body, Integer maxBytes, Long maxFutureSkewMs) {
        BehaviorEventParser.Result r =
                BehaviorEventParser.parseOnce(body, maxBytes, maxFutureSkewMs);
        if (!r.valid()) {
            return GenericRowData.of(null, null, null, null, null, null,
                    StringData.fromString(r.errorKind), StringData.fromString(r.error));
        }
        return GenericRowData.of(r.userId, r.itemId, r.categoryId,
                StringData.fromString(r.behavior), r.ts,
                StringData.fromString(packed(r.ts, r.itemId, r.categoryId, r.behavior)),
                null, null);
    }

    /**
     * {@code <ts>:<item>:<category>:<behavior>}, the time left-padded with zeros to
     * {@link #TS_DIGITS} and cut there if longer, as SQL's {@code LPAD} did.
     */
    static String packed(long ts, long item, long category, String behavior) {
        String time = Long.toString(ts);
        StringBuilder out = new StringBuilder(TS_DIGITS + 32);
        if (time.length() >= TS_DIGITS) {
            out.append(time, 0, TS_DIGITS);
        } else {
            out.append(ZEROS, 0, TS_DIGITS - time.length()).append(time);
        }
        return out.append(':').append(item).append(':').append(category).append(':')
                .append(behavior).toString();
    }

    @Override
    public boolean isDeterministic() {
        return false; // the clock-skew check reads the wall clock
    }
}
