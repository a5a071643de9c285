package io.streamrec.flink;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

import org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.types.Row;

/**
 * The changelog records of one view, written as Kafka key and value bytes: the key
 * {@code <view>:<entity id>}, the value the JSON object the Python decoder reads
 * (schemas/features.py: the {@code view} tag, then the fields in declaration order,
 * compact, as msgspec and Flink's JSON format write it).
 *
 * <p>Written by hand because the rows leave the operator as bytes for a raw-format
 * sink: going through typed rows, the table conversion and Flink's JSON format cost
 * more than the windows themselves.
 *
 * <p>One writer per function instance, reused for every record ({@link #start}): the
 * buffers keep the size of the largest record so far, so a record costs its two final
 * copies only (growing a fresh buffer from 256 bytes for every 1.5 KB row was a third of
 * the fresh view's time). Not thread-safe, as a function instance is not.
 */
final class ChangelogRecord {
    /** The operator tables' columns: what the raw changelog sink takes. */
    static final TypeInformation<Row> TYPE = Types.ROW_NAMED(
            new String[] {"changelog_key", "changelog_value"},
            PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO,
            PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO);
    /** A byte array read as little-endian longs, for {@link #needsEscape}. */
    private static final VarHandle WORDS =
            MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
    private static final long ONES = 0x0101010101010101L;
    private static final long HIGHS = 0x8080808080808080L;

    private final byte[] keyPrefix;
    private final byte[] valuePrefix;
    private final Bytes key = new Bytes(32);
    private final Bytes json = new Bytes(256);

    /** The writer of {@code view}'s records. */
    ChangelogRecord(String view) {
        this.keyPrefix = (view + ":").getBytes(StandardCharsets.UTF_8);
        this.valuePrefix = ("{\"view\":\"" + view + "\"").getBytes(StandardCharsets.UTF_8);
    }

    /** A record of {@code view} for the entity id (user, item or category) it is keyed by. */
    static ChangelogRecord of(String view, long entity) {
        return new ChangelogRecord(view).start(entity);
    }

    /** Starts the next record, for the entity id it is keyed by; drops any record unfinished. */
    ChangelogRecord start(long entity) {
        key.length = 0;
        key.append(keyPrefix).digits(entity);
        json.length = 0;
        json.append(valuePrefix);
        return this;
    }

    ChangelogRecord field(String name, long value) {
        name(name);
        json.digits(value);
        return this;
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
        name(name);
        json.put((byte) '[');
        for (int i = 0; i < values.length; i++) {
            if (i > 0) {
                json.put((byte) ',');
            }
            quote(values[i]);
        }
        json.put((byte) ']');
        return this;
    }

    /** Behaviour counts, in the order of {@link KeyedFeatures#BEHAVIORS}. */
    ChangelogRecord counts(long[] counts) {
        for (int i = 0; i < counts.length; i++) {
            field(KeyedFeatures.BEHAVIORS[i], counts[i]);
        }
        return this;
    }

    /** The record as a row of its own key and value arrays; the writer may start the next. */
    Row row() {
        json.put((byte) '}');
        return Row.of(key.copy(), json.copy());
    }

    /** The JSON value so far, closed: for tests. */
    String json() {
        return new String(json.data, 0, json.length, StandardCharsets.UTF_8) + "}";
    }

    private void name(String name) {
        json.ascii(",\"").ascii(name).ascii("\":");
    }

    /**
     * A JSON string from its UTF-8 bytes: for the packed values (ASCII) one array copy.
     * Multi-byte UTF-8 sequences never hold a byte that needs escaping, and JSON takes
     * them as they are.
     */
    private void quote(byte[] utf8) {
        if (needsEscape(utf8)) {
            json.put((byte) '"');
            escaped(utf8);
            return;
        }
        json.room(utf8.length + 2);
        json.data[json.length++] = '"';
        json.append(utf8);
        json.data[json.length++] = '"';
    }

    /**
     * Whether a string's UTF-8 bytes hold a control character, a quote or a backslash.
     * Eight bytes at a time (a fresh view row checks 50 events of about 30 bytes, and a
     * byte loop was most of the row's cost): a word has a byte below 0x20 iff
     * {@code (x - 0x20 * ONES) & ~x & HIGHS} is not zero, and one equal to {@code c} iff
     * {@code x ^ (c * ONES)} has a zero byte (exact for bytes below 0x80; the bytes of
     * multi-byte sequences, 0x80 and up, match neither, as in JSON they need none).
     */
    static boolean needsEscape(byte[] utf8) {
        int at = 0;
        for (; at + Long.BYTES <= utf8.length; at += Long.BYTES) {
            long x = (long) WORDS.get(utf8, at);
            if (hasByteBelow(x, 0x20) || hasZeroByte(x ^ (ONES * '"'))
                    || hasZeroByte(x ^ (ONES * '\\'))) {
                return true;
            }
        }
        for (; at < utf8.length; at++) {
            byte b = utf8[at];
            if ((b >= 0 && b < 0x20) || b == '"' || b == '\\') {
                return true;
            }
        }
        return false;
    }

    private static boolean hasZeroByte(long x) {
        return ((x - ONES) & ~x & HIGHS) != 0;
    }

    /** For {@code n} up to 0x80 (Bit Twiddling Hacks, "hasless"). */
    private static boolean hasByteBelow(long x, int n) {
        return ((x - ONES * n) & ~x & HIGHS) != 0;
    }

    /** A string's UTF-8 bytes, escaped, and the closing quote. */
    private void escaped(byte[] utf8) {
        for (byte b : utf8) {
            if (b == '"' || b == '\\') {
                json.put((byte) '\\').put(b);
            } else if (b >= 0 && b < 0x20) {
                json.ascii(String.format("\\u%04x", (int) b));
            } else {
                json.put(b);
            }
        }
        json.put((byte) '"');
    }

    /** A growable byte buffer: the bytes are {@code data[0, length)}. */
    private static final class Bytes {
        byte[] data;
        int length;

        Bytes(int capacity) {
            data = new byte[capacity];
        }

        Bytes put(byte b) {
            room(1);
            data[length++] = b;
            return this;
        }

        Bytes append(byte[] bytes) {
            room(bytes.length);
            System.arraycopy(bytes, 0, data, length, bytes.length);
            length += bytes.length;
            return this;
        }

        /** Appends text known to be ASCII and to need no escaping (names, digits). */
        Bytes ascii(String text) {
            room(text.length());
            for (int i = 0; i < text.length(); i++) {
                data[length++] = (byte) text.charAt(i);
            }
            return this;
        }

        /** Appends a number in decimal, as {@link Long#toString} writes it, without a string. */
        Bytes digits(long value) {
            if (value == Long.MIN_VALUE) {
                return ascii(Long.toString(value));  // its magnitude has no long
            }
            long magnitude = Math.abs(value);
            int count = value < 0 ? 2 : 1;
            for (long rest = magnitude; rest >= 10; rest /= 10) {
                count++;
            }
            room(count);
            int at = length + count;
            length = at;
            do {
                data[--at] = (byte) ('0' + magnitude % 10);
                magnitude /= 10;
            } while (magnitude > 0);
            if (value < 0) {
                data[--at] = '-';
            }
            return this;
        }

        byte[] copy() {
            return Arrays.copyOf(data, length);
        }

        void room(int more) {
            if (length + more > data.length) {
                data = Arrays.copyOf(data, Math.max(data.length * 2, length + more));
            }
        }
    }
}
