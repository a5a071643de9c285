package io.streamrec.flink;

import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * The keys whose next window is due, by that window's end: what event-time timers held
 * for the window operator, one pending end per key (pure, no Flink).
 *
 * <p>Flink's timer service keeps one heap of every key's timers, so each registration
 * and each firing walked a heap of all active keys (a tenth of the job's Java time).
 * Every window end is a multiple of the slide, so the pending ends are few: a map from
 * end to the set of keys due then is a lookup per registration and a walk of a set per
 * firing. A key added again at the same end is held once; a key whose due end moved
 * stays behind in the older set, and its owner skips it there (a stale entry).
 *
 * @param <K> the key
 */
final class DueWindows<K> {
    private final TreeMap<Long, Set<K>> byEnd = new TreeMap<>();

    /** {@code key}'s window ending at {@code end} is due once the watermark reaches {@code end - 1}. */
    void add(K key, long end) {
        byEnd.computeIfAbsent(end, unused -> new HashSet<>()).add(key);
    }

    /**
     * The earliest end and its keys, removed, if a watermark of {@code watermark} closed
     * it (its end is at most one past the watermark); otherwise null.
     */
    Map.Entry<Long, Set<K>> pollClosed(long watermark) {
        if (byEnd.isEmpty() || byEnd.firstKey() - 1 > watermark) {
            return null;
        }
        return byEnd.pollFirstEntry();
    }

    /** How many entries are held (a key held at two ends counts twice). */
    int size() {
        int size = 0;
        for (Set<K> keys : byEnd.values()) {
            size += keys.size();
        }
        return size;
    }
}
