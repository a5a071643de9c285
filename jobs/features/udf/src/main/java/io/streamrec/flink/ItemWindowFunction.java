package io.streamrec.flink;

import java.util.List;

import org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.types.Row;

/** An item's windows (keyed by item and category, as the SQL groups them): counts by behaviour. */
final class ItemWindowFunction extends SlicedWindowFunction<Tuple2<Long, Long>, long[]> {
    static final TypeInformation<Row> OUTPUT = WindowFeatures.windowRow(
            new String[] {"item_id", "category_id"},
            new TypeInformation<?>[] {Types.LONG, Types.LONG}, null, null);

    ItemWindowFunction(Slicing slicing, boolean latestOnly) {
        super(slicing, latestOnly, PrimitiveArrayTypeInfo.LONG_PRIMITIVE_ARRAY_TYPE_INFO);
    }

    @Override
    long[] emptySlice() {
        return new long[WindowFeatures.BEHAVIORS.length];
    }

    @Override
    long[] add(long[] slice, Row event) {
        slice[WindowFeatures.behaviorIndex(event.getFieldAs(WindowFeatures.BEHAVIOR))]++;
        return slice;
    }

    @Override
    Row window(Tuple2<Long, Long> key, long start, long end, List<long[]> slices) {
        long[] counts = new long[WindowFeatures.BEHAVIORS.length];
        for (long[] slice : slices) {
            for (int i = 0; i < counts.length; i++) {
                counts[i] += slice[i];
            }
        }
        return WindowFeatures.windowValues(new Object[] {key.f0, key.f1}, start, end, counts, null);
    }
}
