package io.streamrec.flink;

import java.io.Serializable;

/**
 * The arithmetic of sliding windows cut into slices (pure, no Flink).
 *
 * <p>A window of {@code windowMs} sliding every {@code slideMs} is the union of
 * {@code windowMs / slideMs} consecutive slices of one slide each, aligned to the
 * epoch like Flink's HOP windows. A slice is named by its end; the windows that
 * hold it end at the slice's end and at each slide after, up to one window length
 * minus a slide later. Windows are named by their end too: a window ending at
 * {@code E} holds the events with {@code E - windowMs <= ts < E} and fires once the
 * watermark reaches {@code E - 1}.
 */
final class Slicing implements Serializable {
    private static final long serialVersionUID = 1L;

    final long windowMs;
    final long slideMs;

    Slicing(long windowMs, long slideMs) {
        if (slideMs <= 0 || windowMs <= 0 || windowMs % slideMs != 0) {
            throw new IllegalArgumentException("the window (" + windowMs
                    + " ms) must be a positive multiple of the slide (" + slideMs + " ms)");
        }
        this.windowMs = windowMs;
        this.slideMs = slideMs;
    }

    /** The end of the slice that holds {@code ts}. */
    long sliceEnd(long ts) {
        return Math.floorDiv(ts, slideMs) * slideMs + slideMs;
    }

    /** The end of the last window that holds the slice ending at {@code sliceEnd}. */
    long lastWindowEnd(long sliceEnd) {
        return sliceEnd + windowMs - slideMs;
    }

    /** The end of the newest window a watermark has closed. */
    long newestClosedEnd(long watermark) {
        // The end of input's watermark (Long.MAX_VALUE) closes every window.
        return watermark == Long.MAX_VALUE
                ? Long.MAX_VALUE : Math.floorDiv(watermark + 1, slideMs) * slideMs;
    }

    /** The end of the first window after the slice ending at {@code sliceEnd} that lacks it. */
    long leavingEnd(long sliceEnd) {
        return sliceEnd + windowMs;
    }

    /**
     * The end of the newest window in {@code (after, closed]} at a change point of the
     * slices (ends given: a slice enters the window ending at its end and leaves the one
     * ending at {@link #leavingEnd}) that holds any of them, or {@code Long.MIN_VALUE}.
     */
    long newestChangeWithData(long[] sliceEnds, long after, long closed) {
        long newest = Long.MIN_VALUE;
        for (long slice : sliceEnds) {
            newest = newerWithData(slice, newest, sliceEnds, after, closed);
            newest = newerWithData(leavingEnd(slice), newest, sliceEnds, after, closed);
        }
        return newest;
    }

    private long newerWithData(long point, long newest, long[] sliceEnds, long after,
            long closed) {
        return point > after && point <= closed && point > newest && holdsAny(point, sliceEnds)
                ? point : newest;
    }

    /** The first change point of the slices after {@code closed}, or {@code Long.MAX_VALUE}. */
    long nextChange(long[] sliceEnds, long closed) {
        long next = Long.MAX_VALUE;
        for (long slice : sliceEnds) {
            if (slice > closed) {
                next = Math.min(next, slice);
            } else if (leavingEnd(slice) > closed) {
                next = Math.min(next, leavingEnd(slice));
            }
        }
        return next;
    }

    private boolean holdsAny(long windowEnd, long[] sliceEnds) {
        for (long slice : sliceEnds) {
            if (holds(windowEnd, slice)) {
                return true;
            }
        }
        return false;
    }

    /** Whether the slice ending at {@code sliceEnd} belongs to the window ending at {@code windowEnd}. */
    boolean holds(long windowEnd, long sliceEnd) {
        return sliceEnd <= windowEnd && sliceEnd > windowEnd - windowMs;
    }

    /** Whether no window after the one ending at {@code windowEnd} holds the slice. */
    boolean spent(long sliceEnd, long windowEnd) {
        return lastWindowEnd(sliceEnd) <= windowEnd;
    }
}
