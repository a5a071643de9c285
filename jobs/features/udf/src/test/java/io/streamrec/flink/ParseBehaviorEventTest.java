package io.streamrec.flink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;

import org.apache.flink.table.data.RowData;
import org.junit.jupiter.api.Test;

/** The parser's row, with the packed form SQL's LPAD and concatenations gave before. */
class ParseBehaviorEventTest {
    @Test
    void thePackedFormPadsTheTimeToThirteenDigits() {
        // schemas.features.pack_event(1511544070000, 5, 7, "pv") and a short time.
        assertEquals("1511544070000:5:7:pv", ParseBehaviorEvent.packed(1511544070000L, 5, 7, "pv"));
        assertEquals("0000000000042:123456:2:cart",
                ParseBehaviorEvent.packed(42, 123456, 2, "cart"));
    }

    @Test
    void aLongerTimeIsCutAsLpadCutIt() {
        // LPAD('12345678901234', 13, '0') = '1234567890123'; SQL's behaviour kept exactly.
        assertEquals("1234567890123:1:2:buy", ParseBehaviorEvent.packed(12345678901234L, 1, 2, "buy"));
        assertEquals("00000000000-5:1:2:fav", ParseBehaviorEvent.packed(-5, 1, 2, "fav"));
    }

    @Test
    void aValidEventGivesItsFieldsAndPackedFormAnInvalidOneItsError() {
        long ts = System.currentTimeMillis();
        byte[] body = ("{\"user_id\":1,\"item_id\":2,\"category_id\":3,\"behavior\":\"fav\","
                + "\"ts\":" + ts + "}").getBytes(StandardCharsets.UTF_8);
        RowData row = new ParseBehaviorEvent().eval(body, 4096, 60_000L);
        assertEquals(8, row.getArity());
        assertEquals(2, row.getLong(1));
        assertEquals("fav", row.getString(3).toString());
        assertEquals(ts + ":2:3:fav", row.getString(5).toString());
        assertTrue(row.isNullAt(6) && row.isNullAt(7));

        RowData bad = new ParseBehaviorEvent().eval("{".getBytes(StandardCharsets.UTF_8),
                4096, 60_000L);
        assertTrue(bad.isNullAt(0) && bad.isNullAt(5));
        assertEquals("malformed", bad.getString(6).toString());
    }
}
