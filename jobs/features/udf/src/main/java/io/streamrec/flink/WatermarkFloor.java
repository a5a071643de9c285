package io.streamrec.flink;

import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.table.api.Schema;
import org.apache.flink.table.api.Table;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.types.Row;

/**
 * Routes a table with a rowtime attribute through {@link WatermarkFloorOperator}
 * (called from Python through the gateway; SQL has no place for an operator).
 */
public final class WatermarkFloor {
    /** Fixed, so a checkpoint finds the operator's state again after the job is rebuilt. */
    public static final String UID = "streamrec-watermark-floor";

    private WatermarkFloor() {}

    /**
     * {@code events} with its watermark kept across restores: the same columns, the
     * same rowtime column (the source's watermarks, floored), plus a processing-time
     * column {@code proctimeColumn}.
     */
    public static Table keep(
            StreamTableEnvironment tableEnv, Table events, String rowtimeColumn,
            String proctimeColumn) {
        DataStream<Row> stream = tableEnv.toDataStream(events);
        DataStream<Row> floored = stream
                .transform("watermark floor", stream.getType(), new WatermarkFloorOperator<Row>())
                .uid(UID);
        Schema schema = Schema.newBuilder()
                .watermark(rowtimeColumn, "SOURCE_WATERMARK()")
                .columnByExpression(proctimeColumn, "PROCTIME()")
                .build();
        return tableEnv.fromDataStream(floored, schema);
    }
}
