package io.streamrec.flink;

import java.util.Arrays;
import java.util.List;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.types.Row;

/**
 * A user's windows: the last {@code sequenceLength} events (packed, sorted, so in
 * time order) and the counts by behaviour. A slice keeps its own last events only:
 * the window's last N are among the union of its slices' last N.
 */
final class UserWindowFunction extends SlicedWindowFunction<Long, Tuple2<long[], String[]>> {
    private static final TypeInformation<Tuple2<long[], String[]>> SLICE =
            Types.TUPLE(Types.PRIMITIVE_ARRAY(Types.LONG), Types.OBJECT_ARRAY(Types.STRING));

    private final int sequenceLength;

    UserWindowFunction(Slicing slicing, boolean changedOnly, int sequenceLength) {
        super("user_window", slicing, changedOnly, SLICE);
        this.sequenceLength = sequenceLength;
    }

    @Override
    Tuple2<long[], String[]> emptySlice() {
        return Tuple2.of(new long[KeyedFeatures.BEHAVIORS.length], new String[0]);
    }

    @Override
    Tuple2<long[], String[]> add(Tuple2<long[], String[]> slice, Row event) {
        slice.f0[KeyedFeatures.behaviorIndex(event.getFieldAs(KeyedFeatures.BEHAVIOR))]++;
        slice.f1 = keepLargest(slice.f1, event.getFieldAs(KeyedFeatures.PACKED), sequenceLength);
        return slice;
    }

    /** {@code sorted} (ascending, at most {@code limit}) with {@code value} in, the smallest out. */
    static String[] keepLargest(String[] sorted, String value, int limit) {
        if (sorted.length >= limit && value.compareTo(sorted[0]) <= 0) {
            return sorted;
        }
        int at = Arrays.binarySearch(sorted, value);
        int insert = at >= 0 ? at : -at - 1;
        boolean full = sorted.length >= limit;
        String[] next = new String[full ? limit : sorted.length + 1];
        int drop = full ? 1 : 0;
        System.arraycopy(sorted, drop, next, 0, insert - drop);
        next[insert - drop] = value;
        System.arraycopy(sorted, insert, next, insert - drop + 1, sorted.length - insert);
        return next;
    }

    @Override
    Row window(Long user, long start, long end, List<Tuple2<long[], String[]>> slices) {
        long[] counts = new long[KeyedFeatures.BEHAVIORS.length];
        int total = 0;
        for (Tuple2<long[], String[]> slice : slices) {
            for (int i = 0; i < counts.length; i++) {
                counts[i] += slice.f0[i];
            }
            total += slice.f1.length;
        }
        String[] all = new String[total];
        int at = 0;
        for (Tuple2<long[], String[]> slice : slices) {
            System.arraycopy(slice.f1, 0, all, at, slice.f1.length);
            at += slice.f1.length;
        }
        Arrays.sort(all);
        String[] last = Arrays.copyOfRange(all, Math.max(0, total - sequenceLength), total);
        return record.start(user).field("user_id", user)
                .field("window_start", start).field("window_end", end).field("events", last)
                .counts(counts).row();
    }
}
