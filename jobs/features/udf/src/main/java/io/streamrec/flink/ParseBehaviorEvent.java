package io.streamrec.flink;

import org.apache.flink.table.annotation.DataTypeHint;
import org.apache.flink.table.functions.ScalarFunction;
import org.apache.flink.types.Row;

/**
 * {@code PARSE_BEHAVIOR_EVENT(body, max_bytes, max_future_skew_ms)}: the event's
 * fields, or an error kind and text for the dead-letter topic.
 */
public class ParseBehaviorEvent extends ScalarFunction {
    @DataTypeHint("ROW<user_id BIGINT, item_id BIGINT, category_id BIGINT, behavior STRING, "
            + "ts BIGINT, error_kind STRING, error STRING>")
    public Row eval(byte[] body, Integer maxBytes, Long maxFutureSkewMs) {
        BehaviorEventParser.Result r =
                BehaviorEventParser.parseOnce(body, maxBytes, maxFutureSkewMs);
        if (!r.valid()) {
            return Row.of(null, null, null, null, null, r.errorKind, r.error);
        }
        return Row.of(r.userId, r.itemId, r.categoryId, r.behavior, r.ts, null, null);
    }

    @Override
    public boolean isDeterministic() {
        return false; // the clock-skew check reads the wall clock
    }
}
