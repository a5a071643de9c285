package io.streamrec.flink;

import java.util.List;

import org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.types.Row;

/** An item's windows (keyed by item and category, as the SQL groups them): counts by behaviour. */
final class ItemWindowFunction extends SlicedWindowFunction<Tuple2<Long, Long>, long[]> {

    ItemWindowFunction(Slicing slicing, boolean changedOnly) {
        super("item_window", slicing, changedOnly,
                PrimitiveArrayTypeInfo.LONG_PRIMITIVE_ARRAY_TYPE_INFO);
    }

    @Override
    long[] emptySlice() {
        return new long[KeyedFeatures.BEHAVIORS.length];
    }

    @Override
    long[] add(long[] slice, Row event) {
        slice[KeyedFeatures.behaviorIndex(event.getFieldAs(KeyedFeatures.BEHAVIOR))]++;
        return slice;
    }

    @Override
    Row window(Tuple2<Long, Long> key, long start, long end, List<long[]> slices) {
        long[] counts = new long[KeyedFeatures.BEHAVIORS.length];
        for (long[] slice : slices) {
            for (int i = 0; i < counts.length; i++) {
                counts[i] += slice[i];
            }
        }
        return record.start(key.f0).field("item_id", key.f0)
                .field("category_id", key.f1).field("window_start", start)
                .field("window_end", end).counts(counts).row();
    }
}
