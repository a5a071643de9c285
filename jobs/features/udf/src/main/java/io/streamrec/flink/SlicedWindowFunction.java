package io.streamrec.flink;

import java.util.ArrayList;
import java.util.HashMap;
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
 * <p>Two ways to emit, chosen per job ({@code changedOnly}):
 * <ul>
 *   <li><b>every window</b>: each window that holds an event fires once, as Flink's
 *       HOP windows do (the SQL engine's output, row for row);
 *   <li><b>changed windows</b>: a key's window is written only where events enter
 *       or leave it, at a <i>change point</i>: the end of a slice with events (they
 *       enter the window ending there) or a window length after it (they leave).
 *       Between two change points every window holds the same slices, so the same
 *       row but for its bounds; the online store keeps the first of them, and its
 *       {@code window_end} says since when the content holds. Of the change points
 *       one watermark advance passes, only the newest whose window holds events is
 *       written: the store would overwrite the others at once. So at live rates a
 *       key with events in one slide writes one row (and one more when they leave,
 *       if newer events remain) instead of one per slide of the window, and a
 *       backfill, where the watermark jumps over many slides, one row per key.
 * </ul>
 *
 * <p>What the store holds after any watermark is, per key, the newest window with
 * events, with the bounds of the newest change point's window at or before it;
 * every row written is a row the every-window mode writes too.
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
    final boolean changedOnly;
    private final TypeInformation<S> sliceType;
    private transient MapState<Long, S> slices;
    /** Changed mode: the newest window end an earlier firing already settled. */
    private transient ValueState<Long> settledUntil;

    SlicedWindowFunction(Slicing slicing, boolean changedOnly, TypeInformation<S> sliceType) {
        this.slicing = slicing;
        this.changedOnly = changedOnly;
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
        settledUntil = getRuntimeContext().getState(
                new ValueStateDescriptor<>("settled-until", Types.LONG));
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

    @Override
    public void onTimer(long timestamp, OnTimerContext context, Collector<Row> out)
            throws Exception {
        if (changedOnly) {
            fireChanged(context, out);
        } else {
            fireEvery(timestamp + 1, context, out);
        }
    }

    /**
     * Fires the window ending at {@code end}, then sets the timer of the next window
     * that holds a slice (one pending timer per key and slice run, not one per window).
     */
    private void fireEvery(long end, OnTimerContext context, Collector<Row> out)
            throws Exception {
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
        emit(context, out, end, held);
        if (nextSlice <= end + slicing.slideMs) {
            context.timerService().registerEventTimeTimer(end + slicing.slideMs - 1);
        }
    }

    /**
     * Settles every change point up to the newest window the watermark closed: writes
     * the newest of them whose window holds events, drops the slices whose last change
     * point has passed, and sets the timer of the next change point. A slice stays until
     * its leaving point is settled, so every change point after the settled one can be
     * told from the state.
     */
    private void fireChanged(OnTimerContext context, Collector<Row> out) throws Exception {
        long closed = slicing.newestClosedEnd(context.timerService().currentWatermark());
        Long settled = settledUntil.value();
        long after = settled == null ? Long.MIN_VALUE : settled;
        if (closed <= after) {
            return;  // an earlier firing of this advance settled it
        }
        // One read of the key's state; the slices are few (a window's worth and the next).
        Map<Long, S> stored = new HashMap<>();
        for (Map.Entry<Long, S> entry : slices.entries()) {
            stored.put(entry.getKey(), entry.getValue());
        }
        List<Long> ends = new ArrayList<>(stored.keySet());
        long end = slicing.newestChangeWithData(ends, after, closed);
        if (end != Long.MIN_VALUE) {
            List<S> held = new ArrayList<>();
            for (long sliceEnd : ends) {
                if (slicing.holds(end, sliceEnd)) {
                    held.add(stored.get(sliceEnd));
                }
            }
            emit(context, out, end, held);
        }
        for (long sliceEnd : ends) {
            if (slicing.leavingEnd(sliceEnd) <= closed) {
                slices.remove(sliceEnd);
            }
        }
        long next = slicing.nextChange(ends, closed);
        if (next == Long.MAX_VALUE) {
            settledUntil.clear();
        } else {
            settledUntil.update(closed);
            context.timerService().registerEventTimeTimer(next - 1);
        }
    }

    private void emit(OnTimerContext context, Collector<Row> out, long end, List<S> held) {
        if (!held.isEmpty()) {
            out.collect(window(context.getCurrentKey(), end - slicing.windowMs, end, held));
        }
    }
}
