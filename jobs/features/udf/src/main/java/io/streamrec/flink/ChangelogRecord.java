package io.streamrec.flink;

import java.nio.charset.StandardCharsets;

import org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.types.Row;

/**
 * One changelog record written as Kafka key and value bytes: the key
 * {@code <view>:<entity id>}, the value the JSON object the Python decoder reads
 * (schemas/features.py: the {@code view} tag, then the fields in declaration order,
 * compact, as msgspec and Flink's JSON format write it).
 *
 * <p>Written by hand because the rows leave the operator as bytes for a raw-format
 * sink: going through typed rows, the table conversion and Flink's JSON format cost
 * more than the windows themselves.
 */
final class ChangelogRecord {
    /** The operator tables' columns: what the raw changelog sink takes. */
    static final TypeInformation<Row> TYPE = Types.ROW_NAMED(
            new String[] {"changelog_key", "changelog_value"},
            PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO,
            PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO);

    private final byte[] key;
    private final StringBuilder json = new StringBuilder(256);

    private ChangelogRecord(String view, long entity) {
        this.key = (view + ":" + entity).getBytes(StandardCharsets.UTF_8);
        json.append("{\"view\":\"").append(view).append('"');
    }

    /** A record of {@code view} for the entity id (user, item or category) it is keyed by. */
    static ChangelogRecord of(String view, long entity) {
        return new ChangelogRecord(view, entity);
    }

    ChangelogRecord field(String name, long value) {
        name(name).append(value);
        return this;
    }

    ChangelogRecord field(String name, String[] values) {
        StringBuilder out = name(name).append('[');
        for (int i = 0; i < values.length; i++) {
            if (i > 0) {
                out.append(',');
            }
            quote(out, values[i]);
        }
        out.append(']');
        return this;
    }

    /** Behaviour counts, in the order of {@link KeyedFeatures#BEHAVIORS}. */
    ChangelogRecord counts(long[] counts) {
        for (int i = 0; i < counts.length; i++) {
            field(KeyedFeatures.BEHAVIORS[i], counts[i]);
        }
        return this;
    }

    Row row() {
        return Row.of(key, json.append('}').toString().getBytes(StandardCharsets.UTF_8));
    }

    private StringBuilder name(String name) {
        return json.append(",\"").append(name).append("\":");
    }

    /** A JSON string (the packed values are ASCII; anything else is escaped all the same). */
    static void quote(StringBuilder out, String value) {
        out.append('"');
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            if (c == '"' || c == '\\') {
                out.append('\\').append(c);
            } else if (c < 0x20) {
                out.append(String.format("\\u%04x", (int) c));
            } else {
                out.append(c);
            }
        }
        out.append('"');
    }
}
