package io.streamrec.flink;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.stream.Collectors;

import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.operators.KeyedProcessOperator;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.apache.flink.types.Row;
import org.junit.jupiter.api.Test;

/** The fresh view's rows and its expiry, on Flink's operator harness (heap state, test clock). */
class RecentEventsFunctionTest {
    private static final long TTL = 10_000;

    private static KeyedOneInputStreamOperatorTestHarness<Long, Row, Row> harness(int length)
            throws Exception {
        KeyedOneInputStreamOperatorTestHarness<Long, Row, Row> harness =
                new KeyedOneInputStreamOperatorTestHarness<>(
                        new KeyedProcessOperator<>(new RecentEventsFunction(length, TTL)),
                        row -> row.<Long>getFieldAs(KeyedFeatures.USER), Types.LONG);
        harness.open();
        return harness;
    }

    private static Row event(long user, long ts, String packed) {
        return Row.of(user, 1L, 2L, "pv", ts, packed);
    }

    private static List<String> values(KeyedOneInputStreamOperatorTestHarness<Long, Row, Row> h) {
        return h.extractOutputValues().stream()
                .map(row -> new String((byte[]) row.getField(1), StandardCharsets.UTF_8))
                .collect(Collectors.toList());
    }

    @Test
    void eachEventWritesTheUsersLastArrivalsSorted() throws Exception {
        var harness = harness(2);
        harness.processElement(new StreamRecord<>(event(7, 20, "b")));
        harness.processElement(new StreamRecord<>(event(7, 10, "a")));
        harness.processElement(new StreamRecord<>(event(7, 30, "c")));
        assertEquals(List.of(
                "{\"view\":\"user_recent\",\"user_id\":7,\"latest_ts\":20,\"events\":[\"b\"]}",
                "{\"view\":\"user_recent\",\"user_id\":7,\"latest_ts\":20,\"events\":[\"a\",\"b\"]}",
                "{\"view\":\"user_recent\",\"user_id\":7,\"latest_ts\":30,\"events\":[\"a\",\"c\"]}"),
                values(harness));
    }

    @Test
    void outOfOrderAndRepeatedEventsLeaveInArrivalOrder() throws Exception {
        var harness = harness(3);
        for (String packed : new String[] {"c", "a", "c", "b", "a", "a"}) {
            harness.processElement(new StreamRecord<>(event(7, 1, packed)));
        }
        List<String> events = values(harness).stream()
                .map(json -> json.substring(json.indexOf("\"events\":") + 9, json.length() - 1))
                .collect(Collectors.toList());
        assertEquals(List.of("[\"c\"]", "[\"a\",\"c\"]", "[\"a\",\"c\",\"c\"]",
                "[\"a\",\"b\",\"c\"]", "[\"a\",\"b\",\"c\"]", "[\"a\",\"a\",\"b\"]"), events);
    }

    @Test
    void aUserIdleForTheTtlStartsAfreshAndItsStateIsFreed() throws Exception {
        var harness = harness(5);
        harness.setProcessingTime(0);
        harness.processElement(new StreamRecord<>(event(7, 1, "a")));
        harness.processElement(new StreamRecord<>(event(8, 1, "x")));
        harness.setProcessingTime(TTL - 1);
        harness.processElement(new StreamRecord<>(event(8, 2, "y")));  // renews user 8 only
        assertEquals(2, harness.numKeyedStateEntries());
        harness.setProcessingTime(TTL + RecentEventsFunction.expiryGranule(TTL));
        assertEquals(1, harness.numKeyedStateEntries(), "user 7 freed, user 8 kept");
        harness.processElement(new StreamRecord<>(event(7, 3, "b")));
        harness.processElement(new StreamRecord<>(event(8, 3, "z")));
        List<String> rows = values(harness);
        assertEquals(true, rows.get(3).endsWith("\"events\":[\"b\"]}"), rows.get(3));
        assertEquals(true, rows.get(4).endsWith("\"events\":[\"x\",\"y\",\"z\"]}"), rows.get(4));
    }

    @Test
    void anExpiredUserReadsEmptyBeforeItsTimerFires() throws Exception {
        var harness = harness(5);
        harness.setProcessingTime(0);
        harness.processElement(new StreamRecord<>(event(7, 1, "a")));
        // Past the TTL but before the granule boundary: the timer has not fired.
        harness.getProcessingTimeService().setCurrentTime(TTL);
        harness.processElement(new StreamRecord<>(event(7, 2, "b")));
        assertEquals(true, values(harness).get(1).endsWith("\"events\":[\"b\"]}"));
    }

    @Test
    void expiryTimersRoundUpToTheGranule() {
        assertEquals(1_000, RecentEventsFunction.expiryGranule(TTL));
        assertEquals(60_000, RecentEventsFunction.expiryGranule(6 * 3_600_000));
        assertEquals(1, RecentEventsFunction.expiryGranule(5));
        assertEquals(11_000, RecentEventsFunction.expiryTimer(10_001, 1_000));
        assertEquals(10_000, RecentEventsFunction.expiryTimer(10_000, 1_000));
    }

    @Test
    void aUsersArrivalsWithinOneGranuleShareOneTimer() throws Exception {
        var harness = harness(5);
        harness.setProcessingTime(1);  // both arrivals' timers round up to TTL + granule
        harness.processElement(new StreamRecord<>(event(7, 1, "a")));
        harness.getProcessingTimeService().setCurrentTime(10);
        harness.processElement(new StreamRecord<>(event(7, 2, "b")));
        harness.processElement(new StreamRecord<>(event(8, 2, "x")));
        assertEquals(2, harness.numProcessingTimeTimers(), "one per user");
        long granule = RecentEventsFunction.expiryGranule(TTL);
        harness.getProcessingTimeService().setCurrentTime(granule + 1);
        harness.processElement(new StreamRecord<>(event(7, 3, "c")));
        assertEquals(3, harness.numProcessingTimeTimers(), "the next granule's timer");
    }

    @Test
    void aReplacementIsARemovalThenAnInsertion() {
        java.util.Random random = new java.util.Random(17);
        for (int trial = 0; trial < 20_000; trial++) {
            int n = 1 + random.nextInt(8);
            byte[][] sorted = new byte[n][];
            for (int i = 0; i < n; i++) {
                sorted[i] = new byte[] {(byte) random.nextInt(6), (byte) (random.nextInt(3) - 1)};
            }
            java.util.Arrays.sort(sorted, java.util.Arrays::compareUnsigned);
            byte[] leaving = sorted[random.nextInt(n)].clone();
            byte[] arriving = {(byte) random.nextInt(6), (byte) (random.nextInt(3) - 1)};
            byte[][] expected = RecentEventsFunction.inserted(
                    RecentEventsFunction.removed(sorted, leaving), arriving);
            byte[][] replaced = RecentEventsFunction.replaced(sorted, leaving, arriving);
            assertEquals(java.util.Arrays.deepToString(expected),
                    java.util.Arrays.deepToString(replaced));
        }
    }
}
