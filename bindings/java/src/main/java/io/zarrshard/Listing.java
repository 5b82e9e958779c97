package io.zarrshard;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * {@link ShardStore#list} for the JNI shim (its {@code shard_store_callbacks.list}
 * trampoline): the prefix arrives as the library's UTF-8 bytes and the keys leave as UTF-8,
 * encoded here by {@link String#getBytes} rather than by JNI's modified UTF-8 (which spells a
 * supplementary character as two 3-byte surrogates, not valid UTF-8). Packed into two arrays
 * so the shim holds two local references however many keys there are.
 */
final class Listing {
    private Listing() {}

    /** A listing whose keys, as UTF-8, do not fit in one Java array. */
    static final String TOO_LARGE = "ShardStore.list: the keys' UTF-8 exceeds a Java array";

    /**
     * {@code store.list(prefix)} as {@code {byte[] keys, int[] lengths}}: the keys' UTF-8
     * concatenated and the byte length of each; null when the store cannot list.
     *
     * @throws IOException (or any other exception) what {@code list} threw; a
     *     NullPointerException for a null key; an IllegalArgumentException when the keys do not
     *     fit in one array
     */
    static Object[] of(ShardStore store, byte[] prefix) throws IOException {
        List<String> keys = store.list(new String(prefix, StandardCharsets.UTF_8));
        if (keys == null) {
            return null;
        }
        List<byte[]> utf8 = new ArrayList<>(keys.size());
        long total = 0;
        for (String key : keys) {
            if (key == null) {
                throw new NullPointerException("ShardStore.list returned a null key");
            }
            byte[] k = key.getBytes(StandardCharsets.UTF_8);
            utf8.add(k);
            total += k.length;
        }
        if (total > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException(TOO_LARGE);
        }
        int[] lengths = new int[utf8.size()];
        byte[] packed = new byte[(int) total];
        int at = 0;
        for (int i = 0; i < lengths.length; i++) {
            byte[] k = utf8.get(i);
            System.arraycopy(k, 0, packed, at, k.length);
            lengths[i] = k.length;
            at += k.length;
        }
        return new Object[] {packed, lengths};
    }
}
