package io.streamrec.flink;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

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
    private byte[] json = new byte[256];
    private int length;

    private ChangelogRecord(String view, long entity) {
        this.key = (view + ":" + entity).getBytes(StandardCharsets.UTF_8);
        ascii("{\"view\":\"").ascii(view).put((byte) '"');
    }

    /** A record of {@code view} for the entity id (user, item or category) it is keyed by. */
    static ChangelogRecord of(String view, long entity) {
        return new ChangelogRecord(view, entity);
    }

    ChangelogRecord field(String name, long value) {
        return name(name).ascii(Long.toString(value));
    }

    ChangelogRecord field(String name, String[] values) {
        byte[][] utf8 = new byte[values.length][];
        for (int i = 0; i < values.length; i++) {
            utf8[i] = values[i].getBytes(StandardCharsets.UTF_8);
        }
        return utf8Field(name, utf8);
    }

    /** Strings given as their UTF-8 bytes: copied as they are unless one needs escaping. */
    ChangelogRecord utf8Field(String name, byte[][] values) {
        name(name).put((byte) '[');
        for (int i = 0; i < values.length; i++) {
            if (i > 0) {
                put((byte) ',');
            }
            quote(values[i]);
        }
        return put((byte) ']');
    }

    /** Behaviour counts, in the order of {@link KeyedFeatures#BEHAVIORS}. */
    ChangelogRecord counts(long[] counts) {
        for (int i = 0; i < counts.length; i++) {
            field(KeyedFeatures.BEHAVIORS[i], counts[i]);
        }
        return this;
    }

    Row row() {
        put((byte) '}');
        return Row.of(key, Arrays.copyOf(json, length));
    }

    /** The JSON value so far, closed: for tests. */
    String json() {
        return new String(json, 0, length, StandardCharsets.UTF_8) + "}";
    }

    private ChangelogRecord name(String name) {
        return ascii(",\"").ascii(name).ascii("\":");
    }

    /** Appends text known to be ASCII and to need no escaping (names, digits). */
    private ChangelogRecord ascii(String text) {
        room(text.length());
        for (int i = 0; i < text.length(); i++) {
            json[length++] = (byte) text.charAt(i);
        }
        return this;
    }

    /**
     * A JSON string from its UTF-8 bytes: for the packed values (ASCII) one array copy.
     * Multi-byte UTF-8 sequences never hold a byte that needs escaping, and JSON takes
     * them as they are.
     */
    void quote(byte[] utf8) {
        for (byte b : utf8) {
            if ((b >= 0 && b < 0x20) || b == '"' || b == '\\') {
                put((byte) '"').escaped(utf8);
                return;
            }
        }
        room(utf8.length + 2);
        json[length++] = '"';
        System.arraycopy(utf8, 0, json, length, utf8.length);
        length += utf8.length;
        json[length++] = '"';
    }

    /** A string's UTF-8 bytes, escaped, and the closing quote. */
    private void escaped(byte[] utf8) {
        for (byte b : utf8) {
            if (b == '"' || b == '\\') {
                put((byte) '\\').put(b);
            } else if (b >= 0 && b < 0x20) {
                ascii(String.format("\\u%04x", (int) b));
            } else {
                put(b);
            }
        }
        put((byte) '"');
    }

    private ChangelogRecord put(byte b) {
        room(1);
        json[length++] = b;
        return this;
    }

    private void room(int more) {
        if (length + more > json.length) {
            json = Arrays.copyOf(json, Math.max(json.length * 2, length + more));
        }
    }
}
