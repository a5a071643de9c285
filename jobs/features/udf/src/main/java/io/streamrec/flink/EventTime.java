package io.streamrec.flink;

import org.apache.flink.table.functions.ScalarFunction;

/**
 * {@code EVENT_TIME(body, max_bytes, max_future_skew_ms)}: the event's time in
 * epoch ms when the whole event is valid, else 0. The source's watermark is
 * built on it, so one record stamped 2099 cannot make every later event late.
 */
public class EventTime extends ScalarFunction {
    public long eval(byte[] body, Integer maxBytes, Long maxFutureSkewMs) {
        BehaviorEventParser.Result r =
                BehaviorEventParser.parseOnce(body, maxBytes, maxFutureSkewMs);
        return r.valid() ? r.ts : 0L;
    }

    @Override
    public boolean isDeterministic() {
        return false;
    }
}
