package io.streamrec.flink;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CoderResult;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Set;

import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.core.JsonFactory;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.core.JsonParser;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.core.JsonProcessingException;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.core.JsonToken;

/**
 * Decodes and validates one behaviour event, rule for rule like the Python
 * codec (schemas/codec.py and schemas/records.py): size, UTF-8, JSON, object,
 * each field's type and range, clock skew. Unknown fields are skipped.
 *
 * <p>The verdict is the codec's on every input (tests/jobs/features/test_parser_parity.py
 * fuzzes both): a value that is not UTF-8, or not JSON anywhere (an escaped lone
 * surrogate in any string or key included), is malformed; only a well-formed
 * document gets a schema verdict, its first violation in document order.
 */
final class BehaviorEventParser {
    static final long MAX_SAFE_INT = 9_007_199_254_740_991L;
    static final long MIN_EPOCH_MS = 631_152_000_000L;
    static final long MAX_EPOCH_MS = 4_102_444_800_000L;
    private static final Set<String> BEHAVIORS = Set.of("pv", "cart", "fav", "buy");
    private static final String[] FIELDS = {"user_id", "item_id", "category_id", "behavior", "ts"};
    private static final JsonFactory JSON = new JsonFactory();

    /** The outcome: the fields when valid, else the error kind and text. */
    static final class Result {
        long userId;
        long itemId;
        long categoryId;
        String behavior;
        long ts;
        String errorKind;
        String error;

        boolean valid() {
            return errorKind == null;
        }
    }

    /**
     * The last event parsed, kept for one more call by the same thread: the source's
     * event-time column ({@link EventTime}) and the classifying view
     * ({@link ParseBehaviorEvent}) each need every event parsed, one after the other in
     * the same task thread, and the parse was a quarter of that thread's time. One
     * shared slot rather than a ThreadLocal, whose lookups in a task thread's crowded map
     * cost a third of what they saved; subtasks of one JVM overwrite each other's slot,
     * which costs a parse, never a wrong answer (the slot is immutable and owner-checked).
     */
    private static final class Memo {
        final Thread owner = Thread.currentThread();
        final byte[] body;
        final int maxBytes;
        final long maxFutureSkewMs;
        final Result result;

        Memo(byte[] body, int maxBytes, long maxFutureSkewMs, Result result) {
            this.body = body;
            this.maxBytes = maxBytes;
            this.maxFutureSkewMs = maxFutureSkewMs;
            this.result = result;
        }

        boolean holds(byte[] other, int otherMaxBytes, long otherSkewMs) {
            return owner == Thread.currentThread() && maxBytes == otherMaxBytes
                    && maxFutureSkewMs == otherSkewMs && Arrays.equals(body, other);
        }
    }

    private static volatile Memo last;

    private BehaviorEventParser() {}

    /**
     * {@link #parse} at the current time, or the result of this thread's previous call if
     * it was for equal bytes and limits and has not been reused yet. A hit is used once,
     * so a repeated event is parsed again; the clock it was checked against is the
     * previous call's, microseconds earlier.
     */
    static Result parseOnce(byte[] body, int maxBytes, long maxFutureSkewMs) {
        Memo memo = last;
        if (memo != null && memo.holds(body, maxBytes, maxFutureSkewMs)) {
            last = null;
            return memo.result;
        }
        Result result = parse(body, maxBytes, maxFutureSkewMs, System.currentTimeMillis());
        // A copy: the caller's array may be a buffer the runtime refills for the next record.
        last = new Memo(body == null ? null : body.clone(), maxBytes, maxFutureSkewMs, result);
        return result;
    }

    static Result parse(byte[] body, int maxBytes, long maxFutureSkewMs, long nowMs) {
        Result result = new Result();
        byte[] bytes = body == null ? new byte[0] : body;
        if (bytes.length > maxBytes) {
            return fail(result, "oversized", "BehaviorEvent of " + bytes.length
                    + " bytes exceeds the " + maxBytes + "-byte limit");
        }
        int notUtf8 = firstInvalidUtf8(bytes);
        if (notUtf8 >= 0) {
            return fail(result, "malformed", "not valid JSON: not UTF-8 at byte " + notUtf8);
        }
        if (bytes.length >= 3 && bytes[0] == (byte) 0xEF && bytes[1] == (byte) 0xBB
                && bytes[2] == (byte) 0xBF) {
            // Jackson skips a byte order mark; JSON has none (RFC 8259), nor does msgspec.
            return fail(result, "malformed", "not valid JSON: starts with a byte order mark");
        }
        try (JsonParser parser = JSON.createParser(bytes)) {
            JsonToken first = parser.nextToken();
            if (first == null) {
                return fail(result, "malformed", "not valid JSON: Input data was truncated");
            }
            if (first != JsonToken.START_OBJECT) {
                skipValue(parser, first);
                requireEnd(parser);
                return fail(result, "schema", "BehaviorEvent: Expected `object`, got " + first);
            }
            String schemaError = readFields(parser, result);
            requireEnd(parser);
            if (schemaError != null) {
                return fail(result, "schema", "BehaviorEvent: " + schemaError);
            }
        } catch (JsonProcessingException e) {
            return fail(result, "malformed", "not valid JSON: " + e.getOriginalMessage());
        } catch (IOException e) {
            return fail(result, "malformed", "not valid JSON: " + e.getMessage());
        }
        if (result.ts > nowMs + maxFutureSkewMs) {
            return fail(result, "timestamp", "ts=" + result.ts + " is "
                    + (result.ts - nowMs) / 1000 + " s ahead of the consumer's clock (at most "
                    + maxFutureSkewMs / 1000 + " s allowed)");
        }
        return result;
    }

    /**
     * Reads the object's fields to its end (a syntax error anywhere throws); returns
     * the first schema violation, or null.
     */
    private static String readFields(JsonParser parser, Result result) throws IOException {
        boolean[] seen = new boolean[FIELDS.length];
        String error = null;
        while (parser.nextToken() == JsonToken.FIELD_NAME) {
            String name = checkText(parser.currentName());
            JsonToken value = parser.nextToken();
            int index = indexOf(name);
            if (index < 0 || error != null) {
                skipValue(parser, value);
                continue;
            }
            seen[index] = true;
            error = readField(index, value, parser, result);
            if (error != null) {
                skipValue(parser, value);
            }
        }
        for (int i = 0; i < FIELDS.length && error == null; i++) {
            if (!seen[i]) {
                error = "Object missing required field `" + FIELDS[i] + "`";
            }
        }
        return error;
    }

    /** Skips a value, decoding its strings and keys as msgspec does (lone surrogates). */
    private static void skipValue(JsonParser parser, JsonToken value) throws IOException {
        if (value == JsonToken.VALUE_STRING) {
            checkText(parser.getText());
            return;
        }
        if (value != JsonToken.START_OBJECT && value != JsonToken.START_ARRAY) {
            return;
        }
        int depth = 1;
        while (depth > 0) {
            JsonToken token = parser.nextToken();
            if (token == null) {
                throw new IOException("Input data was truncated");
            }
            switch (token) {
                case START_OBJECT, START_ARRAY -> depth++;
                case END_OBJECT, END_ARRAY -> depth--;
                case FIELD_NAME -> checkText(parser.currentName());
                case VALUE_STRING -> checkText(parser.getText());
                default -> { }
            }
        }
    }

    /** The text, unless it holds a surrogate without its pair (JSON escapes allow one). */
    static String checkText(String text) throws IOException {
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (Character.isHighSurrogate(c) && i + 1 < text.length()
                    && Character.isLowSurrogate(text.charAt(i + 1))) {
                i++;
            } else if (Character.isSurrogate(c)) {
                throw new IOException("invalid utf-16 surrogate pair");
            }
        }
        return text;
    }

    /** The index of the first byte that is not well-formed UTF-8, or -1. */
    static int firstInvalidUtf8(byte[] bytes) {
        int i = 0;
        while (i < bytes.length && bytes[i] >= 0) {
            i++;  // ASCII, nearly every event: no decoder, no buffer
        }
        if (i == bytes.length) {
            return -1;
        }
        CharsetDecoder decoder = StandardCharsets.UTF_8.newDecoder()
                .onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT);
        ByteBuffer in = ByteBuffer.wrap(bytes);
        CharBuffer out = CharBuffer.allocate(bytes.length);
        CoderResult verdict = decoder.decode(in, out, true);
        return verdict.isError() ? in.position() : -1;
    }

    private static String readField(int index, JsonToken value, JsonParser parser, Result result)
            throws IOException {
        String at = " - at `$." + FIELDS[index] + "`";
        if (index == 3) {
            if (value != JsonToken.VALUE_STRING) {
                return "Expected `str`, got " + value + at;
            }
            String behavior = checkText(parser.getText());
            if (!BEHAVIORS.contains(behavior)) {
                return "Invalid enum value '" + behavior + "'" + at;
            }
            result.behavior = behavior;
            return null;
        }
        if (value != JsonToken.VALUE_NUMBER_INT
                || parser.getNumberType() == JsonParser.NumberType.BIG_INTEGER) {
            return "Expected `int`, got " + value + at;
        }
        long number = parser.getLongValue();
        long low = index == 4 ? MIN_EPOCH_MS : 1;
        long high = index == 4 ? MAX_EPOCH_MS : MAX_SAFE_INT;
        if (number < low || number > high) {
            return "Expected `int` in [" + low + ", " + high + "]" + at;
        }
        switch (index) {
            case 0 -> result.userId = number;
            case 1 -> result.itemId = number;
            case 2 -> result.categoryId = number;
            default -> result.ts = number;
        }
        return null;
    }

    private static void requireEnd(JsonParser parser) throws IOException {
        if (parser.nextToken() != null) {
            throw new IOException("trailing characters after the document");
        }
    }

    private static int indexOf(String name) {
        for (int i = 0; i < FIELDS.length; i++) {
            if (FIELDS[i].equals(name)) {
                return i;
            }
        }
        return -1;
    }

    private static Result fail(Result result, String kind, String error) {
        result.errorKind = kind;
        result.error = error;
        return result;
    }
}
