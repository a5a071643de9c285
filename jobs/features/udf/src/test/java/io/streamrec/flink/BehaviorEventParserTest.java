package io.streamrec.flink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.nio.charset.StandardCharsets;

import org.junit.jupiter.api.Test;

/** Parsing each event once for the event-time column and the classifying view. */
class BehaviorEventParserTest {
    private static final int MAX_BYTES = 4096;
    private static final long SKEW = 60_000;

    private static byte[] event(long user) {
        long ts = System.currentTimeMillis();
        return ("{\"user_id\":" + user + ",\"item_id\":2,\"category_id\":3,\"behavior\":\"pv\","
                + "\"ts\":" + ts + "}").getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void theSecondCallForTheSameEventReusesTheFirstsResultOnce() {
        byte[] body = event(1);
        BehaviorEventParser.Result first = BehaviorEventParser.parseOnce(body, MAX_BYTES, SKEW);
        assertEquals(1, first.userId);
        assertSame(first, BehaviorEventParser.parseOnce(body.clone(), MAX_BYTES, SKEW));
        // A third call is another record with the same bytes: parsed again.
        assertNotSame(first, BehaviorEventParser.parseOnce(body, MAX_BYTES, SKEW));
    }

    @Test
    void aBufferRefilledInPlaceIsNotTakenForTheEventBefore() {
        byte[] buffer = event(1);
        BehaviorEventParser.parseOnce(buffer, MAX_BYTES, SKEW);
        byte[] next = event(7);
        System.arraycopy(next, 0, buffer, 0, Math.min(next.length, buffer.length));
        assertEquals(7, BehaviorEventParser.parseOnce(buffer, MAX_BYTES, SKEW).userId);
    }

    @Test
    void anotherThreadsEventIsParsedAgain() throws Exception {
        byte[] body = event(1);
        BehaviorEventParser.Result[] theirs = new BehaviorEventParser.Result[1];
        Thread other = new Thread(() ->
                theirs[0] = BehaviorEventParser.parseOnce(body, MAX_BYTES, SKEW));
        other.start();
        other.join();
        assertNotSame(theirs[0], BehaviorEventParser.parseOnce(body, MAX_BYTES, SKEW));
    }

    @Test
    void otherLimitsAreAnotherVerdict() {
        byte[] body = event(1);
        assertEquals(null, BehaviorEventParser.parseOnce(body, MAX_BYTES, SKEW).errorKind);
        BehaviorEventParser.Result small = BehaviorEventParser.parseOnce(body, 10, SKEW);
        assertFalse(small.valid());
        assertEquals("oversized", small.errorKind);
    }
}
