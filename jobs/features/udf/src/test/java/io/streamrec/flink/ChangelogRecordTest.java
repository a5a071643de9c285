package io.streamrec.flink;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;

import org.apache.flink.types.Row;
import org.junit.jupiter.api.Test;

/** The changelog JSON, written byte by byte: fields in order, strings escaped as JSON. */
class ChangelogRecordTest {
    @Test
    void aRecordIsItsKeyAndTheCompactJsonObject() {
        Row row = ChangelogRecord.of("user_window", 42).field("user_id", 42)
                .field("window_end", -5).field("events", new String[] {"a", "b"})
                .counts(new long[] {1, 0, 0, 2}).row();
        assertArrayEquals("user_window:42".getBytes(StandardCharsets.UTF_8),
                (byte[]) row.getField(0));
        assertEquals("{\"view\":\"user_window\",\"user_id\":42,\"window_end\":-5,"
                + "\"events\":[\"a\",\"b\"],\"pv\":1,\"cart\":0,\"fav\":0,\"buy\":2}",
                new String((byte[]) row.getField(1), StandardCharsets.UTF_8));
    }

    @Test
    void stringsAreEscapedAndNonAsciiIsUtf8() {
        ChangelogRecord record = ChangelogRecord.of("v", 1).field("s", new String[] {
            "plain", "q\"b\\s", "tab\there", "caf\u00e9 \"x\"", "\u4e2d", ""});
        assertEquals("{\"view\":\"v\",\"s\":[\"plain\",\"q\\\"b\\\\s\",\"tab\\u0009here\","
                + "\"caf\u00e9 \\\"x\\\"\",\"\u4e2d\",\"\"]}", record.json());
    }

    @Test
    void aLongRecordGrowsPastItsFirstBuffer() {
        String[] many = new String[100];
        java.util.Arrays.fill(many, "0000001700000000:123456:7890:pv");
        String json = ChangelogRecord.of("v", 1).field("e", many).json();
        // {"view":"v","e":[ then 100 quoted values and 99 commas, then ]}
        assertEquals(17 + 100 * 34 - 1 + 2, json.length(), json.substring(0, 40));
    }

    @Test
    void aReusedWriterStartsEachRecordAfresh() {
        ChangelogRecord record = new ChangelogRecord("v");
        String[] many = new String[100];
        java.util.Arrays.fill(many, "0000001700000000:123456:7890:pv");
        record.start(Long.MAX_VALUE).field("e", many).row();
        Row row = record.start(-3).field("n", Long.MIN_VALUE).field("z", 0).row();
        assertArrayEquals("v:-3".getBytes(StandardCharsets.UTF_8), (byte[]) row.getField(0));
        assertEquals("{\"view\":\"v\",\"n\":-9223372036854775808,\"z\":0}",
                new String((byte[]) row.getField(1), StandardCharsets.UTF_8));
        Row big = record.start(Long.MAX_VALUE).field("n", 1234567890123L).row();
        assertArrayEquals("v:9223372036854775807".getBytes(StandardCharsets.UTF_8),
                (byte[]) big.getField(0));
    }

    @Test
    void theWordAtATimeEscapeCheckAgreesWithTheByteLoop() {
        java.util.Random random = new java.util.Random(5);
        for (int trial = 0; trial < 200_000; trial++) {
            byte[] bytes = new byte[random.nextInt(24)];
            for (int i = 0; i < bytes.length; i++) {
                // Mostly plain text, with every byte value somewhere.
                bytes[i] = (byte) (random.nextInt(4) == 0 ? random.nextInt(256)
                        : 'a' + random.nextInt(26));
            }
            boolean expected = false;
            for (byte b : bytes) {
                expected |= (b >= 0 && b < 0x20) || b == '"' || b == '\\';
            }
            assertEquals(expected, ChangelogRecord.needsEscape(bytes),
                    java.util.Arrays.toString(bytes));
        }
    }
}
