package io.streamrec.flink;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple3;
import org.apache.flink.runtime.state.KeyedStateBackend;
import org.apache.flink.runtime.state.StateInitializationContext;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;
import org.apache.flink.streaming.api.operators.KeyedProcessOperator;
import org.apache.flink.types.Row;

/**
 * Runs a {@link SlicedWindowFunction}, and on a restore moves window state of the earlier
 * layout (a map state of slices by end and a value of the settled end, per key) into the
 * current one, so a checkpoint or savepoint taken before the change restores the windows
 * it holds instead of starting them empty. The timers need nothing: they fire at the same
 * points in both layouts.
 */
final class SlicedWindowOperator<K, S> extends KeyedProcessOperator<K, Row, Row> {
    private static final long serialVersionUID = 1L;
    static final String EARLIER_SETTLED = "settled-until";

    SlicedWindowOperator(SlicedWindowFunction<K, S> function) {
        super(function);
    }

    @SuppressWarnings("unchecked")  // the constructor takes only a SlicedWindowFunction<K, S>
    private SlicedWindowFunction<K, S> function() {
        return (SlicedWindowFunction<K, S>) userFunction;
    }

    @Override
    public void initializeState(StateInitializationContext context) throws Exception {
        super.initializeState(context);
        if (context.isRestored()) {
            moveEarlierLayout(getKeyedStateBackend());
        }
    }

    /** Each key of the earlier map state, moved into the key's value and cleared there. */
    private void moveEarlierLayout(KeyedStateBackend<K> backend) throws Exception {
        List<K> keys;
        // Collected first: a state's keys cannot be streamed while it is cleared.
        try (Stream<K> earlier = backend.getKeys(
                function().earlierSlicesDescriptor().getName(), VoidNamespace.INSTANCE)) {
            keys = earlier.collect(Collectors.toList());
        }
        if (keys.isEmpty()) {
            return;
        }
        MapState<Long, S> slices = backend.getPartitionedState(VoidNamespace.INSTANCE,
                VoidNamespaceSerializer.INSTANCE, function().earlierSlicesDescriptor());
        ValueState<Long> settled = backend.getPartitionedState(VoidNamespace.INSTANCE,
                VoidNamespaceSerializer.INSTANCE,
                new ValueStateDescriptor<>(EARLIER_SETTLED, Types.LONG));
        ValueState<Tuple3<long[], List<S>, Long>> current =
                backend.getPartitionedState(VoidNamespace.INSTANCE,
                        VoidNamespaceSerializer.INSTANCE, function().keySlicesDescriptor());
        Map<Long, S> bySliceEnd = new HashMap<>();
        for (K key : keys) {
            backend.setCurrentKey(key);
            bySliceEnd.clear();
            for (Map.Entry<Long, S> entry : slices.entries()) {
                bySliceEnd.put(entry.getKey(), entry.getValue());
            }
            if (!bySliceEnd.isEmpty()) {
                current.update(SlicedWindowFunction.keySlices(bySliceEnd, settled.value()));
            }
            slices.clear();
            settled.clear();
        }
    }
}
