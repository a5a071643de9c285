package io.streamrec.flink;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.api.java.tuple.Tuple3;
import org.apache.flink.runtime.state.KeyedStateBackend;
import org.apache.flink.runtime.state.StateInitializationContext;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.InternalTimer;
import org.apache.flink.streaming.api.operators.InternalTimerService;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.api.operators.Triggerable;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.types.Row;

/**
 * Runs a {@link SlicedWindowFunction} on a keyed stream: keeps each key's slices in keyed
 * state and fires the keys whose window a watermark closed, from an index of due ends
 * ({@link DueWindows}) instead of event-time timers.
 *
 * <p>The index is not in the checkpoint: a key's due end follows from its state
 * ({@link SlicedWindowFunction#due}), so a restore rebuilds the index from the keyed
 * state, which Flink has already split by key group for the subtask (a rescaled job
 * included). A key fires before the watermark that closed its window is forwarded, in
 * order of window ends, as timers fired.
 *
 * <p>Checkpoints of earlier layouts restore too: window state kept as a map of slices by
 * end and a value of the settled end is moved into the one value, and the event-time
 * timers of the operator before the index are moved into it (in the every-window mode
 * the earliest timer is the only record of which windows already fired).
 */
final class SlicedWindowOperator<K, S> extends AbstractStreamOperator<Row>
        implements OneInputStreamOperator<Row, Row>, Triggerable<K, VoidNamespace> {
    private static final long serialVersionUID = 1L;
    static final String EARLIER_SETTLED = "settled-until";
    /** The event-time timers of the earlier operator (Flink's KeyedProcessOperator). */
    static final String EARLIER_TIMERS = "user-timers";

    private final SlicedWindowFunction<K, S> function;
    private transient ValueState<Tuple3<long[], List<S>, Long>> keySlices;
    private transient DueWindows<K> due;
    private transient StreamRecord<Row> reused;

    SlicedWindowOperator(SlicedWindowFunction<K, S> function) {
        this.function = function;
    }

    @Override
    public void initializeState(StateInitializationContext context) throws Exception {
        super.initializeState(context);
        keySlices = getKeyedStateStore().getState(function.keySlicesDescriptor());
        if (context.isRestored()) {
            moveEarlierLayout(getKeyedStateBackend());
        }
    }

    @Override
    public void open() throws Exception {
        super.open();
        function.open();
        reused = new StreamRecord<>(null);
        due = new DueWindows<>();
        // Created under the earlier operator's name so that its restored timers are found.
        InternalTimerService<VoidNamespace> timers =
                getInternalTimerService(EARLIER_TIMERS, VoidNamespaceSerializer.INSTANCE, this);
        Map<K, Long> earliestTimer = takeTimers(timers);
        for (K key : keysWithSlices()) {
            setCurrentKey(key);
            Tuple3<long[], List<S>, Long> slices = keySlices.value();
            Long timer = earliestTimer.get(key);
            if (!function.changedOnly && timer != null) {
                slices.f2 = timer + 1 - function.slicing.slideMs;  // fired up to the one before
                keySlices.update(slices);
            }
            due.add(key, function.due(slices));
        }
    }

    @Override
    public void processElement(StreamRecord<Row> element) throws Exception {
        Tuple3<long[], List<S>, Long> slices = keySlices.value();
        if (slices == null) {
            slices = function.emptyKey();
        }
        long moved = function.add(slices, element.getValue());
        if (moved != SlicedWindowFunction.DUE_UNMOVED) {
            // Most events join a slice, or one after the key's due end: no index write.
            due.add(currentKey(), moved);
        }
        keySlices.update(slices);
    }

    @Override
    public void processWatermark(Watermark mark) throws Exception {
        fireClosed(mark.getTimestamp());
        super.processWatermark(mark);
    }

    /**
     * Fires every key whose due window {@code watermark} closed, earliest end first; a
     * key's next window, if also closed, fires in the same call. An entry whose key is
     * now due elsewhere (or gone) is stale and skipped.
     */
    private void fireClosed(long watermark) throws Exception {
        Map.Entry<Long, Set<K>> closed;
        while ((closed = due.pollClosed(watermark)) != null) {
            long end = closed.getKey();
            reused.setTimestamp(end - 1);  // the time a timer for the window carried
            for (K key : closed.getValue()) {
                setCurrentKey(key);
                Tuple3<long[], List<S>, Long> slices = keySlices.value();
                if (slices == null || function.due(slices) != end) {
                    continue;
                }
                long next = function.fire(key, slices, end, watermark,
                        row -> output.collect(reused.replace(row)));
                if (next == SlicedWindowFunction.NONE_DUE) {
                    keySlices.clear();
                } else {
                    keySlices.update(slices);
                    due.add(key, next);
                }
            }
        }
    }

    /** The earliest earlier timer of each key, all of them deleted. */
    private Map<K, Long> takeTimers(InternalTimerService<VoidNamespace> timers) throws Exception {
        List<Tuple2<K, Long>> found = new ArrayList<>();
        timers.forEachEventTimeTimer(
                (namespace, timestamp) -> found.add(Tuple2.of(currentKey(), timestamp)));
        Map<K, Long> earliest = new HashMap<>();
        for (Tuple2<K, Long> timer : found) {
            earliest.merge(timer.f0, timer.f1, Math::min);
            setCurrentKey(timer.f0);
            timers.deleteEventTimeTimer(VoidNamespace.INSTANCE, timer.f1);
        }
        return earliest;
    }

    @SuppressWarnings("unchecked")  // the keyed backend's key is K
    private K currentKey() {
        return (K) getCurrentKey();
    }

    /** The keys that hold slices (collected: a state's keys cannot be streamed while written). */
    private List<K> keysWithSlices() throws Exception {
        try (Stream<K> keys = this.<K>getKeyedStateBackend().getKeys(
                function.keySlicesDescriptor().getName(), VoidNamespace.INSTANCE)) {
            return keys.collect(Collectors.toList());
        }
    }

    /** The index replaced the timers; an earlier one left over is moved at open, never fired. */
    @Override
    public void onEventTime(InternalTimer<K, VoidNamespace> timer) {
    }

    @Override
    public void onProcessingTime(InternalTimer<K, VoidNamespace> timer) {
    }

    /** Each key of the earlier map state, moved into the key's value and cleared there. */
    private void moveEarlierLayout(KeyedStateBackend<K> backend) throws Exception {
        List<K> keys;
        // Collected first: a state's keys cannot be streamed while it is cleared.
        try (Stream<K> earlier = backend.getKeys(
                function.earlierSlicesDescriptor().getName(), VoidNamespace.INSTANCE)) {
            keys = earlier.collect(Collectors.toList());
        }
        if (keys.isEmpty()) {
            return;
        }
        MapState<Long, S> slices = backend.getPartitionedState(VoidNamespace.INSTANCE,
                VoidNamespaceSerializer.INSTANCE, function.earlierSlicesDescriptor());
        ValueState<Long> settled = backend.getPartitionedState(VoidNamespace.INSTANCE,
                VoidNamespaceSerializer.INSTANCE,
                new ValueStateDescriptor<>(EARLIER_SETTLED, Types.LONG));
        Map<Long, S> bySliceEnd = new HashMap<>();
        for (K key : keys) {
            backend.setCurrentKey(key);
            bySliceEnd.clear();
            for (Map.Entry<Long, S> entry : slices.entries()) {
                bySliceEnd.put(entry.getKey(), entry.getValue());
            }
            if (!bySliceEnd.isEmpty()) {
                keySlices.update(SlicedWindowFunction.keySlices(bySliceEnd, settled.value()));
            }
            slices.clear();
            settled.clear();
        }
    }
}
