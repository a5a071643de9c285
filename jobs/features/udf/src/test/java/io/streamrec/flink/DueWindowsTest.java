package io.streamrec.flink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.Map;
import java.util.Set;

import org.junit.jupiter.api.Test;

class DueWindowsTest {
    @Test
    void aWindowIsClosedOnceTheWatermarkReachesItsLastInstant() {
        DueWindows<String> due = new DueWindows<>();
        due.add("a", 20);
        assertNull(due.pollClosed(18));
        Map.Entry<Long, Set<String>> closed = due.pollClosed(19);
        assertEquals(20L, closed.getKey());
        assertEquals(Set.of("a"), closed.getValue());
        assertNull(due.pollClosed(Long.MAX_VALUE), "taken once");
    }

    @Test
    void endsComeEarliestFirstAndAKeyOncePerEnd() {
        DueWindows<String> due = new DueWindows<>();
        due.add("a", 30);
        due.add("b", 10);
        due.add("a", 10);
        due.add("a", 10);
        assertEquals(3, due.size());
        assertEquals(Map.entry(10L, Set.of("a", "b")), due.pollClosed(100));
        assertEquals(Map.entry(30L, Set.of("a")), due.pollClosed(100));
        assertNull(due.pollClosed(100));
        assertEquals(0, due.size());
    }
}
