package io.streamrec.flink;

import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.typeutils.MapTypeInfo;
import org.apache.flink.types.Row;

/**
 * A category's windows: its counts by behaviour and its top items by trend score
 * (packed {@code score:item}, zero-padded, best first; ties go to the larger item id).
 * A slice holds each item's counts, since an item's score is over the whole window.
 */
final class CategoryWindowFunction extends SlicedWindowFunction<Long, Map<Long, long[]>> {
    static final int SCORE_DIGITS = 10;
    static final int ITEM_DIGITS = 16;

    private final int topItems;

    CategoryWindowFunction(Slicing slicing, boolean changedOnly, int topItems) {
        super("category_window", slicing, changedOnly, new MapTypeInfo<>(
                Types.LONG, PrimitiveArrayTypeInfo.LONG_PRIMITIVE_ARRAY_TYPE_INFO));
        this.topItems = topItems;
    }

    @Override
    Map<Long, long[]> emptySlice() {
        return new HashMap<>();
    }

    @Override
    Map<Long, long[]> add(Map<Long, long[]> slice, Row event) {
        long[] counts = slice.computeIfAbsent(
                event.<Long>getFieldAs(KeyedFeatures.ITEM),
                item -> new long[KeyedFeatures.BEHAVIORS.length]);
        counts[KeyedFeatures.behaviorIndex(event.getFieldAs(KeyedFeatures.BEHAVIOR))]++;
        return slice;
    }

    @Override
    Row window(Long category, long start, long end, List<Map<Long, long[]>> slices) {
        Map<Long, Long> scores = new HashMap<>();
        long[] counts = new long[KeyedFeatures.BEHAVIORS.length];
        for (Map<Long, long[]> slice : slices) {
            for (Map.Entry<Long, long[]> item : slice.entrySet()) {
                long score = 0;
                for (int i = 0; i < counts.length; i++) {
                    counts[i] += item.getValue()[i];
                    score += KeyedFeatures.TREND_WEIGHTS[i] * item.getValue()[i];
                }
                scores.merge(item.getKey(), score, Long::sum);
            }
        }
        String[] packed = new String[scores.size()];
        int at = 0;
        for (Map.Entry<Long, Long> item : scores.entrySet()) {
            packed[at++] = pad(item.getValue(), SCORE_DIGITS) + ":" + pad(item.getKey(), ITEM_DIGITS);
        }
        Arrays.sort(packed, Collections.reverseOrder());
        String[] top = Arrays.copyOf(packed, Math.min(topItems, packed.length));
        return record.start(category).field("category_id", category)
                .field("window_start", start).field("window_end", end).counts(counts)
                .field("top_items", top).row();
    }

    /** Zero-padded to {@code digits}, as the SQL's LPAD (which cuts a longer value). */
    static String pad(long value, int digits) {
        String text = Long.toString(value);
        if (text.length() >= digits) {
            return text.substring(0, digits);
        }
        return "0".repeat(digits - text.length()) + text;
    }
}
