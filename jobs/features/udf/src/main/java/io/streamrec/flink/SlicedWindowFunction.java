package io.streamrec.flink;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.function.LongPredicate;

import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple3;
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
 * <p>A key's slices, in order of their ends, and how far its windows are settled live in
 * one keyed value, read and written once per event and once per firing (a map state of
 * slices and a value of the settled end took a state lookup per slice and firing:
 * about a quarter of the window operators' time). The firings are event-time timers,
 * so a checkpoint holds both. Events behind the watermark never reach this function (the
 * job sends them to the dead-letter topic first).
 *
 * @param <K> the key
 * @param <S> a slice's accumulator
 */
abstract class SlicedWindowFunction<K, S> extends KeyedProcessFunction<K, Row, Row> {
    /** Before any firing: nothing of the key is settled. */
    private static final long NOTHING_SETTLED = Long.MIN_VALUE;

    final Slicing slicing;
    final boolean changedOnly;
    private final TypeInformation<S> sliceType;
    private final String view;
    /** The writer of this view's rows, reused for each (see {@link ChangelogRecord}). */
    transient ChangelogRecord record;
    /**
     * The key's slice ends (ascending), its slices in that order, and in the changed mode
     * the newest window end a firing already settled; cleared when no slice is left.
     */
    private transient ValueState<Tuple3<long[], List<S>, Long>> keySlices;

    SlicedWindowFunction(String view, Slicing slicing, boolean changedOnly,
            TypeInformation<S> sliceType) {
        this.view = view;
        this.slicing = slicing;
        this.changedOnly = changedOnly;
        this.sliceType = sliceType;
    }

    /** A slice with nothing in it yet. */
    abstract S emptySlice();

    /** Adds one event (a row of {@link KeyedFeatures#EVENT_FIELDS}); returns the slice. */
    abstract S add(S slice, Row event);

    /** The row of the window ending at {@code end}, merged from its slices, by {@link #record}. */
    abstract Row window(K key, long start, long end, List<S> slices);

    @Override
    public void open(OpenContext context) throws Exception {
        record = new ChangelogRecord(view);
        // A checkpoint of the earlier layout is moved into this one on restore
        // (SlicedWindowOperator).
        keySlices = getRuntimeContext().getState(keySlicesDescriptor());
    }

    /** The state of a key's slices (see {@link #keySlices}). */
    ValueStateDescriptor<Tuple3<long[], List<S>, Long>> keySlicesDescriptor() {
        return new ValueStateDescriptor<>("key-slices",
                Types.TUPLE(Types.PRIMITIVE_ARRAY(Types.LONG), Types.LIST(sliceType), Types.LONG));
    }

    /** The state of a key's slices before it held them in one value, by slice end. */
    MapStateDescriptor<Long, S> earlierSlicesDescriptor() {
        return new MapStateDescriptor<>("slices", Types.LONG, sliceType);
    }

    /** The key's slices from the earlier layout (ends unordered), settled up to {@code settled}. */
    static <S> Tuple3<long[], List<S>, Long> keySlices(Map<Long, S> bySliceEnd, Long settled) {
        long[] ends = new long[bySliceEnd.size()];
        int at = 0;
        for (long end : bySliceEnd.keySet()) {
            ends[at++] = end;
        }
        Arrays.sort(ends);
        List<S> slices = new ArrayList<>(ends.length);
        for (long end : ends) {
            slices.add(bySliceEnd.get(end));
        }
        return Tuple3.of(ends, slices, settled == null ? NOTHING_SETTLED : settled);
    }

    @Override
    public void processElement(Row event, Context context, Collector<Row> out) throws Exception {
        long sliceEnd = slicing.sliceEnd(event.<Long>getFieldAs(KeyedFeatures.TS));
        Tuple3<long[], List<S>, Long> key = keySlices.value();
        if (key == null) {
            key = Tuple3.of(new long[0], new ArrayList<>(2), NOTHING_SETTLED);
        }
        int at = Arrays.binarySearch(key.f0, sliceEnd);
        if (at < 0) {
            at = -at - 1;
            long[] ends = new long[key.f0.length + 1];
            System.arraycopy(key.f0, 0, ends, 0, at);
            ends[at] = sliceEnd;
            System.arraycopy(key.f0, at, ends, at + 1, key.f0.length - at);
            key.f0 = ends;
            key.f1.add(at, emptySlice());
            // The first window that holds the slice; each firing sets the next one.
            context.timerService().registerEventTimeTimer(sliceEnd - 1);
        }
        key.f1.set(at, add(key.f1.get(at), event));
        keySlices.update(key);
    }

    @Override
    public void onTimer(long timestamp, OnTimerContext context, Collector<Row> out)
            throws Exception {
        Tuple3<long[], List<S>, Long> key = keySlices.value();
        if (key == null) {
            return;  // no slice left: a firing before this one emptied the key
        }
        if (changedOnly) {
            fireChanged(key, context, out);
        } else {
            fireEvery(key, timestamp + 1, context, out);
        }
    }

    /**
     * Fires the window ending at {@code end}, then sets the timer of the next window
     * that holds a slice (one pending timer per key and slice run, not one per window).
     */
    private void fireEvery(Tuple3<long[], List<S>, Long> key, long end, OnTimerContext context,
            Collector<Row> out) throws Exception {
        emit(context, out, end, held(key, end));
        dropSlices(key, sliceEnd -> slicing.spent(sliceEnd, end));
        if (key.f0.length == 0) {
            keySlices.clear();
            return;
        }
        keySlices.update(key);
        if (key.f0[0] <= end + slicing.slideMs) {
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
    private void fireChanged(Tuple3<long[], List<S>, Long> key, OnTimerContext context,
            Collector<Row> out) throws Exception {
        long closed = slicing.newestClosedEnd(context.timerService().currentWatermark());
        if (closed <= key.f2) {
            return;  // an earlier firing of this advance settled it
        }
        long end = slicing.newestChangeWithData(key.f0, key.f2, closed);
        if (end != Long.MIN_VALUE) {
            emit(context, out, end, held(key, end));
        }
        long next = slicing.nextChange(key.f0, closed);
        dropSlices(key, sliceEnd -> slicing.leavingEnd(sliceEnd) <= closed);
        if (next == Long.MAX_VALUE) {
            keySlices.clear();  // no slice is left: none has a change point to come
        } else {
            key.f2 = closed;
            keySlices.update(key);
            context.timerService().registerEventTimeTimer(next - 1);
        }
    }

    /** The slices of the window ending at {@code end}. */
    private List<S> held(Tuple3<long[], List<S>, Long> key, long end) {
        List<S> held = new ArrayList<>(key.f0.length);
        for (int i = 0; i < key.f0.length; i++) {
            if (slicing.holds(end, key.f0[i])) {
                held.add(key.f1.get(i));
            }
        }
        return held;
    }

    /** Removes the slices whose end {@code gone} accepts (ends and slices stay in step). */
    private static <S> void dropSlices(Tuple3<long[], List<S>, Long> key,
            LongPredicate gone) {
        int kept = 0;
        for (int i = 0; i < key.f0.length; i++) {
            if (!gone.test(key.f0[i])) {
                key.f0[kept] = key.f0[i];
                key.f1.set(kept, key.f1.get(i));
                kept++;
            }
        }
        if (kept < key.f0.length) {
            key.f0 = Arrays.copyOf(key.f0, kept);
            key.f1.subList(kept, key.f1.size()).clear();
        }
    }

    private void emit(OnTimerContext context, Collector<Row> out, long end, List<S> held) {
        if (!held.isEmpty()) {
            out.collect(window(context.getCurrentKey(), end - slicing.windowMs, end, held));
        }
    }
}
