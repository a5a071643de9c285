package io.streamrec.flink;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.types.Row;
import org.apache.flink.util.Collector;

/**
 * Event-time sliding windows per key, kept as slices: each event is added to one
 * slice (its slide), and a window is the merge of its slices when it fires.
 *
 * <p>Two ways to emit, chosen per job ({@code latestOnly}):
 * <ul>
 *   <li><b>every window</b>: each window that holds an event fires once, as Flink's
 *       HOP windows do (the SQL engine's output, row for row);
 *   <li><b>the latest window</b>: of the windows of one key that close in the same
 *       watermark advance, only the newest is emitted. The online store keeps the
 *       newest window per key, so what it holds after the advance is the same; what
 *       is left out is rows it would have overwritten at once. A backfill or a
 *       catch-up, where the watermark jumps over many slides, writes one row per
 *       key instead of one per slide; at live rates, where the watermark crosses one
 *       slide at a time, every window is still emitted.
 * </ul>
 *
 * <p>The slices live in keyed map state and the firings are event-time timers, so a
 * checkpoint holds both. Events behind the watermark never reach this function (the
 * job sends them to the dead-letter topic first).
 *
 * @param <K> the key
 * @param <S> a slice's accumulator
 */
abstract class SlicedWindowFunction<K, S> extends KeyedProcessFunction<K, Row, Row> {
    final Slicing slicing;
    final boolean latestOnly;
    private final TypeInformation<S> sliceType;
    private transient MapState<Long, S> slices;
    private transient ValueState<Long> lastEmitted;

    SlicedWindowFunction(Slicing slicing, boolean latestOnly, TypeInformation<S> sliceType) {
        this.slicing = slicing;
        this.latestOnly = latestOnly;
        this.sliceType = sliceType;
    }

    /** A slice with nothing in it yet. */
    abstract S emptySlice();

    /** Adds one event (a row of {@link KeyedFeatures#EVENT_FIELDS}); returns the slice. */
    abstract S add(S slice, Row event);

    /** The output row of the window ending at {@code end}, merged from its slices. */
    abstract Row window(K key, long start, long end, List<S> slices);

    @Override
    public void open(OpenContext context) throws Exception {
        slices = getRuntimeContext().getMapState(
                new MapStateDescriptor<>("slices", Types.LONG, sliceType));
        lastEmitted = getRuntimeContext().getState(
                new ValueStateDescriptor<>("last-emitted-end", Types.LONG));
    }

    @Override
    public void processElement(Row event, Context context, Collector<Row> out) throws Exception {
        long sliceEnd = slicing.sliceEnd(event.<Long>getFieldAs(KeyedFeatures.TS));
        S slice = slices.get(sliceEnd);
        if (slice == null) {
            slice = emptySlice();
            // The first window that holds the slice; each firing sets the next one.
            context.timerService().registerEventTimeTimer(sliceEnd - 1);
        }
        slices.put(sliceEnd, add(slice, event));
    }

    /**
     * Fires the window ending at {@code timestamp + 1}, or in the latest mode the newest
     * window the watermark has closed, then sets the timer of the next window that
     * holds a slice (one pending timer per key and slice run, not one per window).
     */
    @Override
    public void onTimer(long timestamp, OnTimerContext context, Collector<Row> out)
            throws Exception {
        long end = timestamp + 1;
        if (latestOnly) {
            // The watermark of this advance: every window up to it closes now.
            long watermark = context.timerService().currentWatermark();
            end = slicing.newestClosedWithData(slices.keys(), watermark);
            Long emitted = lastEmitted.value();
            if (end == Long.MIN_VALUE || (emitted != null && end <= emitted)) {
                return;  // an earlier firing of this advance wrote the newest window
            }
        }
        List<S> held = new ArrayList<>();
        long nextSlice = Long.MAX_VALUE;
        Iterator<Map.Entry<Long, S>> entries = slices.iterator();
        while (entries.hasNext()) {
            Map.Entry<Long, S> entry = entries.next();
            long sliceEnd = entry.getKey();
            if (slicing.holds(end, sliceEnd)) {
                held.add(entry.getValue());
            }
            if (slicing.spent(sliceEnd, end)) {
                entries.remove();
            } else {
                nextSlice = Math.min(nextSlice, sliceEnd);
            }
        }
        if (!held.isEmpty()) {
            out.collect(window(context.getCurrentKey(), end - slicing.windowMs, end, held));
        }
        if (nextSlice <= end + slicing.slideMs) {
            context.timerService().registerEventTimeTimer(end + slicing.slideMs - 1);
        }
        if (latestOnly) {
            if (nextSlice == Long.MAX_VALUE) {
                lastEmitted.clear();
            } else {
                lastEmitted.update(end);
            }
        }
    }
}
