package io.streamrec.flink;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.api.java.tuple.Tuple3;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.operators.KeyedProcessOperator;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.apache.flink.types.Row;
import org.apache.flink.util.Collector;
import org.junit.jupiter.api.Test;

/**
 * The window functions' firings on Flink's operator harness: a 30 ms window sliding
 * every 10 ms, one item with events at 5 and 15 (slices ending at 10 and 20).
 */
class SlicedWindowFunctionTest {
    private static final Pattern END_AND_VIEWS =
            Pattern.compile("\"window_end\":(-?\\d+),\"pv\":(\\d+)");

    private static final Slicing SLICING = new Slicing(30, 10);

    private static KeyedOneInputStreamOperatorTestHarness<Tuple2<Long, Long>, Row, Row> harness(
            boolean changedOnly, OperatorSubtaskState restored) throws Exception {
        return harness(new SlicedWindowOperator<>(new ItemWindowFunction(SLICING, changedOnly)),
                restored);
    }

    private static KeyedOneInputStreamOperatorTestHarness<Tuple2<Long, Long>, Row, Row> harness(
            OneInputStreamOperator<Row, Row> operator,
            OperatorSubtaskState restored) throws Exception {
        var harness = new KeyedOneInputStreamOperatorTestHarness<>(operator,
                row -> Tuple2.of(row.<Long>getFieldAs(KeyedFeatures.ITEM),
                        row.<Long>getFieldAs(KeyedFeatures.CATEGORY)),
                Types.TUPLE(Types.LONG, Types.LONG));
        if (restored != null) {
            harness.initializeState(restored);
        }
        harness.open();
        return harness;
    }

    private static Row event(long ts) {
        return Row.of(7L, 1L, 2L, "pv", ts, "p");
    }

    /** Each row as "end=views". */
    private static List<String> windows(
            KeyedOneInputStreamOperatorTestHarness<Tuple2<Long, Long>, Row, Row> harness) {
        List<String> rows = new ArrayList<>();
        for (Row row : harness.extractOutputValues()) {
            Matcher m = END_AND_VIEWS.matcher(
                    new String((byte[]) row.getField(1), StandardCharsets.UTF_8));
            if (m.find()) {
                rows.add(m.group(1) + "=" + m.group(2));
            }
        }
        return rows;
    }

    private static void run(KeyedOneInputStreamOperatorTestHarness<?, Row, Row> harness,
            long... watermarks) throws Exception {
        for (long watermark : watermarks) {
            harness.processWatermark(watermark);
        }
    }

    @Test
    void everyWindowThatHoldsAnEventFiresOnce() throws Exception {
        var harness = harness(false, null);
        harness.processElement(new StreamRecord<>(event(5), 5));
        harness.processElement(new StreamRecord<>(event(15), 15));
        run(harness, 9, 19, 29, 39, 49, 59);
        assertEquals(List.of("10=1", "20=2", "30=2", "40=1"), windows(harness));
        assertEquals(0, harness.numKeyedStateEntries(), "the key's state is freed");
    }

    @Test
    void changedWindowsAreWrittenWhereEventsEnterOrLeave() throws Exception {
        var harness = harness(true, null);
        harness.processElement(new StreamRecord<>(event(5), 5));
        harness.processElement(new StreamRecord<>(event(15), 15));
        run(harness, 9, 19, 29, 39, 49, 59);
        assertEquals(List.of("10=1", "20=2", "40=1"), windows(harness));
        assertEquals(0, harness.numKeyedStateEntries(), "the key's state is freed");
    }

    @Test
    void oneWatermarkJumpWritesOnlyTheNewestChange() throws Exception {
        var harness = harness(true, null);
        harness.processElement(new StreamRecord<>(event(5), 5));
        harness.processElement(new StreamRecord<>(event(15), 15));
        run(harness, 45);
        assertEquals(List.of("40=1"), windows(harness));
        assertEquals(1, harness.numKeyedStateEntries(), "the slice ending at 20 leaves at 50");
    }

    @Test
    void aKeyWhoseDueWindowMovedFiresOnceAtTheNewEnd() throws Exception {
        // The slice ending at 20 comes first (due 20), then the one ending at 10 (due 10):
        // the jump to 45 settles both, and the entry left at 20 must not fire again.
        var harness = harness(true, null);
        harness.processElement(new StreamRecord<>(event(15), 15));
        harness.processElement(new StreamRecord<>(event(5), 5));
        run(harness, 45, 49, 59);
        assertEquals(List.of("40=1"), windows(harness));
        assertEquals(0, harness.numKeyedStateEntries(), "the key's state is freed");
    }

    @Test
    void aSliceOlderThanTheDueOneMovesTheKeysNextWindow() throws Exception {
        // After the windows of the slice ending at 10 fired, the key waits for its slice
        // ending at 50; an event at 35 opens the one ending at 40, due first.
        var harness = harness(false, null);
        harness.processElement(new StreamRecord<>(event(5), 5));
        harness.processElement(new StreamRecord<>(event(45), 45));
        run(harness, 29);
        harness.processElement(new StreamRecord<>(event(35), 35));
        run(harness, 39, 49, 59, 69, 79);
        assertEquals(List.of("10=1", "20=1", "30=1", "40=1", "50=2", "60=2", "70=1"),
                windows(harness));
        assertEquals(0, harness.numKeyedStateEntries(), "the key's state is freed");
    }

    @Test
    void aWatermarkForwardedComesAfterTheWindowsItClosed() throws Exception {
        var harness = harness(false, null);
        harness.processElement(new StreamRecord<>(event(5), 5));
        run(harness, 19);
        List<Object> output = new ArrayList<>(harness.getOutput());
        assertEquals(3, output.size());
        assertEquals(new Watermark(19), output.get(2), "the rows of 10 and 20, then the mark");
        assertEquals(19L, ((StreamRecord<?>) output.get(1)).getTimestamp(),
                "a row carries its window's last instant, as its timer did");
    }

    @Test
    void aRestoredFunctionFiresWhatTheFirstWouldHave() throws Exception {
        for (boolean changedOnly : new boolean[] {false, true}) {
            var first = harness(changedOnly, null);
            first.processElement(new StreamRecord<>(event(5), 5));
            run(first, 9);
            first.processElement(new StreamRecord<>(event(15), 15));
            OperatorSubtaskState snapshot = first.snapshot(1, 1);
            List<String> before = windows(first);
            first.close();

            var restored = harness(changedOnly, snapshot);
            run(restored, 19, 29, 39, 49, 59);
            List<String> rows = new ArrayList<>(before);
            rows.addAll(windows(restored));
            assertEquals(changedOnly ? List.of("10=1", "20=2", "40=1")
                    : List.of("10=1", "20=2", "30=2", "40=1"), rows);
        }
    }

    /** The item windows' state as the job wrote it before the one-value layout. */
    private static final class EarlierLayout
            extends KeyedProcessFunction<Tuple2<Long, Long>, Row, Row> {
        private final Long settled;
        private transient MapState<Long, long[]> slices;
        private transient ValueState<Long> settledUntil;

        EarlierLayout(Long settled) {
            this.settled = settled;
        }

        @Override
        public void open(OpenContext context) {
            slices = getRuntimeContext().getMapState(new MapStateDescriptor<>("slices",
                    Types.LONG, PrimitiveArrayTypeInfo.LONG_PRIMITIVE_ARRAY_TYPE_INFO));
            settledUntil = getRuntimeContext().getState(
                    new ValueStateDescriptor<>(SlicedWindowOperator.EARLIER_SETTLED, Types.LONG));
        }

        @Override
        public void processElement(Row event, Context context, Collector<Row> out)
                throws Exception {
            long end = SLICING.sliceEnd(event.<Long>getFieldAs(KeyedFeatures.TS));
            long[] slice = slices.get(end);
            if (slice == null) {
                slice = new long[4];
                context.timerService().registerEventTimeTimer(end - 1);
            }
            slice[0]++;
            slices.put(end, slice);
            if (settled != null) {
                settledUntil.update(settled);
            }
        }
    }

    @Test
    void aCheckpointOfTheEarlierLayoutRestoresItsWindows() throws Exception {
        // Unsettled: every change point is still to come. Settled up to 10: the window
        // ending at 10 was written before the checkpoint.
        for (Long settled : new Long[] {null, 10L}) {
            var earlier = harness(new KeyedProcessOperator<>(new EarlierLayout(settled)), null);
            earlier.processElement(new StreamRecord<>(event(5), 5));
            earlier.processElement(new StreamRecord<>(event(15), 15));
            OperatorSubtaskState snapshot = earlier.snapshot(1, 1);
            earlier.close();

            var restored = harness(true, snapshot);
            assertEquals(1, restored.numKeyedStateEntries(), "one value, the earlier states gone");
            run(restored, 9, 19, 29, 39, 49, 59);
            assertEquals(settled == null ? List.of("10=1", "20=2", "40=1")
                    : List.of("20=2", "40=1"), windows(restored), "settled at " + settled);
            assertEquals(0, restored.numKeyedStateEntries());
        }
    }
    /**
     * The item windows' state as the operator wrote it while it fired from event-time
     * timers: the one value, settled up to {@code settled}, and the given pending timers.
     */
    private static final class TimerLayout
            extends KeyedProcessFunction<Tuple2<Long, Long>, Row, Row> {
        private final long settled;
        private final long[] timers;
        private transient ValueState<Tuple3<long[], List<long[]>, Long>> keySlices;

        TimerLayout(long settled, long... timers) {
            this.settled = settled;
            this.timers = timers;
        }

        @Override
        public void open(OpenContext context) {
            keySlices = getRuntimeContext().getState(
                    new ItemWindowFunction(SLICING, false).keySlicesDescriptor());
        }

        @Override
        public void processElement(Row event, Context context, Collector<Row> out)
                throws Exception {
            ItemWindowFunction function = new ItemWindowFunction(SLICING, false);
            Tuple3<long[], List<long[]>, Long> key = keySlices.value();
            if (key == null) {
                key = function.emptyKey();
                key.f2 = settled;
                for (long timer : timers) {
                    context.timerService().registerEventTimeTimer(timer);
                }
            }
            function.add(key, event);
            keySlices.update(key);
        }
    }

    @Test
    void aCheckpointWithTimersRestoresWithoutFiringAgain() throws Exception {
        // Window 10 fired before the checkpoint: the every-window operator's pending timer
        // (19) was the only record of it; the changed one had settled up to 10.
        for (boolean changedOnly : new boolean[] {false, true}) {
            long settled = changedOnly ? 10 : SlicedWindowFunction.NOTHING_SETTLED;
            var earlier = harness(new KeyedProcessOperator<>(new TimerLayout(settled, 19, 29)),
                    null);
            earlier.processElement(new StreamRecord<>(event(5), 5));
            earlier.processElement(new StreamRecord<>(event(15), 15));
            OperatorSubtaskState snapshot = earlier.snapshot(1, 1);
            earlier.close();

            var restored = harness(changedOnly, snapshot);
            assertEquals(0, restored.numEventTimeTimers(), "the timers moved into the index");
            run(restored, 19, 29, 39, 49, 59);
            assertEquals(changedOnly ? List.of("20=2", "40=1") : List.of("20=2", "30=2", "40=1"),
                    windows(restored), changedOnly ? "changed" : "every");
            assertEquals(0, restored.numKeyedStateEntries());
        }
    }
}
