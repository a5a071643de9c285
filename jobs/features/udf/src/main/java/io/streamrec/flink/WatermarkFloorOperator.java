package io.streamrec.flink;

import java.util.List;

import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.runtime.state.StateInitializationContext;
import org.apache.flink.runtime.state.StateSnapshotContext;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;

/**
 * Passes records and watermarks through unchanged, and keeps the watermark in
 * the checkpoint.
 *
 * <p>Flink does not checkpoint watermarks: a restored job starts with none, so an
 * event that was late before the restore would be accepted again and re-fire a
 * window that had already fired (its state is gone from the checkpoint). This
 * operator stores the last watermark it forwarded; after a restore it emits that
 * watermark before anything else and holds back the lower ones the source
 * regenerates while it replays, so downstream lateness is what it was at the
 * checkpoint.
 *
 * <p>Union list state: on restore every subtask sees every subtask's watermark and
 * takes the lowest, which no subtask had passed, so a rescaled job is never
 * stricter than the job it was restored from.
 */
public class WatermarkFloorOperator<T> extends AbstractStreamOperator<T>
        implements OneInputStreamOperator<T, T> {
    private static final ListStateDescriptor<Long> STATE =
            new ListStateDescriptor<>("watermark-floor", Types.LONG);

    private transient ListState<Long> state;
    private transient long forwarded;
    private transient long restored;

    @Override
    public void initializeState(StateInitializationContext context) throws Exception {
        super.initializeState(context);
        state = context.getOperatorStateStore().getUnionListState(STATE);
        forwarded = Long.MIN_VALUE;
        restored = Long.MIN_VALUE;
        if (context.isRestored()) {
            restored = lowest(state.get());
        }
    }

    static long lowest(Iterable<Long> watermarks) {
        long low = Long.MAX_VALUE;
        boolean any = false;
        for (Long watermark : watermarks) {
            low = Math.min(low, watermark);
            any = true;
        }
        return any ? low : Long.MIN_VALUE;
    }

    @Override
    public void processElement(StreamRecord<T> element) throws Exception {
        emitRestored();
        output.collect(element);
    }

    @Override
    public void processWatermark(Watermark mark) throws Exception {
        emitRestored();
        if (mark.getTimestamp() > forwarded) {
            forwarded = mark.getTimestamp();
            super.processWatermark(mark);
        }
    }

    /**
     * The restored watermark, once, ahead of the first record or watermark (not in
     * open(): an idle channel drops watermarks, and the source only turns active
     * when it has something to send).
     */
    private void emitRestored() throws Exception {
        if (restored > forwarded) {
            forwarded = restored;
            super.processWatermark(new Watermark(restored));
        }
        restored = Long.MIN_VALUE;
    }

    @Override
    public void snapshotState(StateSnapshotContext context) throws Exception {
        super.snapshotState(context);
        // Not yet emitted after a restore: still the floor to keep.
        state.update(List.of(Math.max(forwarded, restored)));
    }
}
