package io.streamrec.flink;

import java.io.IOException;
import java.util.Set;

import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.core.JsonFactory;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.core.JsonParser;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.core.JsonProcessingException;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.core.JsonToken;

/**
 * Decodes and validates one behaviour event, rule for rule like the Python
 * codec (schemas/codec.py and schemas/records.py): size, JSON, object, each
 * field's type and range, clock skew. Unknown fields are skipped.
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

    private BehaviorEventParser() {}

    static Result parse(byte[] body, int maxBytes, long maxFutureSkewMs, long nowMs) {
        Result result = new Result();
        byte[] bytes = body == null ? new byte[0] : body;
        if (bytes.length > maxBytes) {
            return fail(result, "oversized", "BehaviorEvent of " + bytes.length
                    + " bytes exceeds the " + maxBytes + "-byte limit");
        }
        try (JsonParser parser = JSON.createParser(bytes)) {
            JsonToken first = parser.nextToken();
            if (first == null) {
                return fail(result, "malformed", "not valid JSON: Input data was truncated");
            }
            if (first != JsonToken.START_OBJECT) {
                parser.skipChildren();
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

    /** Reads the object's fields; returns the first schema violation, or null. */
    private static String readFields(JsonParser parser, Result result) throws IOException {
        boolean[] seen = new boolean[FIELDS.length];
        String error = null;
        while (parser.nextToken() == JsonToken.FIELD_NAME) {
            String name = parser.currentName();
            JsonToken value = parser.nextToken();
            int index = indexOf(name);
            if (index < 0) {
                parser.skipChildren();
                continue;
            }
            seen[index] = true;
            String problem = readField(index, value, parser, result);
            if (error == null) {
                error = problem;
            }
            parser.skipChildren();
        }
        for (int i = 0; i < FIELDS.length && error == null; i++) {
            if (!seen[i]) {
                error = "Object missing required field `" + FIELDS[i] + "`";
            }
        }
        return error;
    }

    private static String readField(int index, JsonToken value, JsonParser parser, Result result)
            throws IOException {
        String at = " - at `$." + FIELDS[index] + "`";
        if (index == 3) {
            if (value != JsonToken.VALUE_STRING) {
                return "Expected `str`, got " + value + at;
            }
            String behavior = parser.getText();
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
