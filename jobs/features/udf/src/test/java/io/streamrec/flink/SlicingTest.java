package io.streamrec.flink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * The window arithmetic worked by hand: a 30-minute window sliding every 5 minutes
 * (the job's default), so a window holds six slices.
 */
class SlicingTest {
    private static final long MIN = 60_000L;
    private final Slicing slicing = new Slicing(30 * MIN, 5 * MIN);

    @Test
    void aSliceIsNamedByItsEndAndHoldsItsStartButNotItsEnd() {
        assertEquals(5 * MIN, slicing.sliceEnd(0));
        assertEquals(5 * MIN, slicing.sliceEnd(5 * MIN - 1));
        assertEquals(10 * MIN, slicing.sliceEnd(5 * MIN));
        // Before the epoch too: floor, not truncation toward zero.
        assertEquals(0, slicing.sliceEnd(-1));
    }

    @Test
    void aSliceBelongsToSixWindowsFromItsEndOn() {
        long slice = 10 * MIN;
        assertTrue(slicing.holds(10 * MIN, slice));
        assertTrue(slicing.holds(35 * MIN, slice));
        assertFalse(slicing.holds(40 * MIN, slice));
        assertFalse(slicing.holds(5 * MIN, slice));
        assertEquals(35 * MIN, slicing.lastWindowEnd(slice));
        assertEquals(40 * MIN, slicing.leavingEnd(slice));
        assertTrue(slicing.spent(slice, 35 * MIN));
        assertFalse(slicing.spent(slice, 30 * MIN));
    }

    @Test
    void aWatermarkClosesTheWindowsEndingAtOrBeforeItPlusOne() {
        // A window ending at E fires once the watermark reaches E - 1.
        assertEquals(5 * MIN, slicing.newestClosedEnd(5 * MIN - 1));
        assertEquals(0, slicing.newestClosedEnd(5 * MIN - 2));
        assertEquals(Long.MAX_VALUE, slicing.newestClosedEnd(Long.MAX_VALUE));
    }

    @Test
    void theNewestChangeWithDataIsWhereASliceEntersOrLeaves() {
        long[] slices = {10 * MIN, 20 * MIN};
        // Change points: 10 and 20 (entering), 40 and 50 (leaving). The window ending at
        // 50 holds neither slice (20 leaves it), so it has no data to write.
        assertEquals(20 * MIN, slicing.newestChangeWithData(slices, 0, 35 * MIN));
        assertEquals(40 * MIN, slicing.newestChangeWithData(slices, 20 * MIN, 45 * MIN));
        assertEquals(40 * MIN, slicing.newestChangeWithData(slices, 0, Long.MAX_VALUE));
        assertEquals(Long.MIN_VALUE, slicing.newestChangeWithData(slices, 40 * MIN, 60 * MIN));
        assertEquals(Long.MIN_VALUE, slicing.newestChangeWithData(slices, 20 * MIN, 35 * MIN));
    }

    @Test
    void theNextChangeAfterAWatermarkIsTheNearestEntryOrExit() {
        long[] slices = {10 * MIN, 20 * MIN};
        assertEquals(10 * MIN, slicing.nextChange(slices, 5 * MIN));
        assertEquals(20 * MIN, slicing.nextChange(slices, 10 * MIN));
        assertEquals(40 * MIN, slicing.nextChange(slices, 20 * MIN));
        assertEquals(50 * MIN, slicing.nextChange(slices, 40 * MIN));
        assertEquals(Long.MAX_VALUE, slicing.nextChange(slices, 50 * MIN));
    }

    @Test
    void aWindowThatIsNoMultipleOfItsSlideIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> new Slicing(30 * MIN, 7 * MIN));
        assertThrows(IllegalArgumentException.class, () -> new Slicing(30 * MIN, 0));
    }
}
