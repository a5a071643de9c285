package io.streamrec.flink;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import java.util.function.LongPredicate;

import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple3;
import org.apache.flink.types.Row;

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
 * <p>A key's slices, in order of their ends, and the newest window end a firing passed
 * live in one keyed value ({@link #keySlicesDescriptor}; a map state of slices and a value of the
 * settled end took a state lookup per slice and firing: about a quarter of the window
 * operators' time). The key's next window to fire follows from that value alone
 * ({@link #due}), so a checkpoint of it is all a restore needs; {@link SlicedWindowOperator}
 * fires keys from an index of due ends. Events behind the watermark never reach this
 * function (the job sends them to the dead-letter topic first).
 *
 * @param <K> the key
 * @param <S> a slice's accumulator
 */
abstract class SlicedWindowFunction<K, S> implements Serializable {
    private static final long serialVersionUID = 1L;
    /** Before any firing: nothing of the key is settled. */
    static final long NOTHING_SETTLED = Long.MIN_VALUE;
    /** No window is due: the key holds no slice. */
    static final long NONE_DUE = Long.MAX_VALUE;
    /** An event left the key's due end where it was. */
    static final long DUE_UNMOVED = Long.MIN_VALUE;

    final Slicing slicing;
    final boolean changedOnly;
    private final TypeInformation<S> sliceType;
    private final String view;
    /** The writer of this view's rows, reused for each (see {@link ChangelogRecord}). */
    transient ChangelogRecord record;

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

    void open() {
        record = new ChangelogRecord(view);
    }

    /**
     * The state of a key's slices: their ends (ascending), the slices in that order, and
     * the newest window end a firing passed ({@link #NOTHING_SETTLED} before the first).
     * Cleared when no slice is left.
     */
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

    /** A key with no slice yet. */
    Tuple3<long[], List<S>, Long> emptyKey() {
        return Tuple3.of(new long[0], new ArrayList<>(2), NOTHING_SETTLED);
    }

    /**
     * Adds {@code event} to its slice of {@code key}; returns the key's due end if that
     * moved ({@link #due}; only a new slice can move it), else {@link #DUE_UNMOVED}.
     */
    long add(Tuple3<long[], List<S>, Long> key, Row event) {
        long sliceEnd = slicing.sliceEnd(event.<Long>getFieldAs(KeyedFeatures.TS));
        int at = Arrays.binarySearch(key.f0, sliceEnd);
        if (at >= 0) {
            key.f1.set(at, add(key.f1.get(at), event));
            return DUE_UNMOVED;
        }
        long before = due(key);
        at = -at - 1;
        long[] ends = new long[key.f0.length + 1];
        System.arraycopy(key.f0, 0, ends, 0, at);
        ends[at] = sliceEnd;
        System.arraycopy(key.f0, at, ends, at + 1, key.f0.length - at);
        key.f0 = ends;
        key.f1.add(at, add(emptySlice(), event));
        long after = due(key);
        return after == before ? DUE_UNMOVED : after;
    }

    /**
     * The end of the key's next window to fire, or {@link #NONE_DUE}: in the changed mode
     * its next change point after the settled end, in the every-window mode the next
     * window after the last fired one that holds a slice (the first is its oldest slice's).
     */
    long due(Tuple3<long[], List<S>, Long> key) {
        if (key.f0.length == 0) {
            return NONE_DUE;
        }
        if (changedOnly) {
            return slicing.nextChange(key.f0, key.f2);
        }
        long oldest = key.f0[0];
        return key.f2 == NOTHING_SETTLED ? oldest : Math.max(key.f2 + slicing.slideMs, oldest);
    }

    /**
     * Fires the key's window due at {@code end} (closed by {@code watermark}) into {@code out},
     * drops the slices no later window needs, and returns the key's next due end
     * ({@link #NONE_DUE}: no slice is left, the state can go).
     */
    long fire(K k, Tuple3<long[], List<S>, Long> key, long end, long watermark,
            Consumer<Row> out) {
        if (changedOnly) {
            fireChanged(k, key, watermark, out);
        } else {
            emit(k, end, held(key, end), out);
            dropSlices(key, sliceEnd -> slicing.spent(sliceEnd, end));
            key.f2 = end;
        }
        return due(key);
    }

    /**
     * Settles every change point up to the newest window the watermark closed: writes
     * the newest of them whose window holds events and drops the slices whose last change
     * point has passed. A slice stays until its leaving point is settled, so every change
     * point after the settled one can be told from the state.
     */
    private void fireChanged(K k, Tuple3<long[], List<S>, Long> key, long watermark,
            Consumer<Row> out) {
        // Past the settled end: the key was due at a change point after it (see due).
        long closed = slicing.newestClosedEnd(watermark);
        long end = slicing.newestChangeWithData(key.f0, key.f2, closed);
        if (end != Long.MIN_VALUE) {
            emit(k, end, held(key, end), out);
        }
        dropSlices(key, sliceEnd -> slicing.leavingEnd(sliceEnd) <= closed);
        key.f2 = closed;
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

    private void emit(K k, long end, List<S> held, Consumer<Row> out) {
        if (!held.isEmpty()) {
            out.accept(window(k, end - slicing.windowMs, end, held));
        }
    }
}
