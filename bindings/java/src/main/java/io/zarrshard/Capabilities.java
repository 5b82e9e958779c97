package io.zarrshard;

import java.nio.ByteBuffer;

/** Which optional {@link ShardIO} methods a class overrides (cached per class). */
final class Capabilities {
    private Capabilities() {}

    private static final ClassValue<Integer> CAPS = new ClassValue<>() {
        @Override
        protected Integer computeValue(Class<?> type) {
            int caps = 0;
            if (overrides(type, "readSuffix", ByteBuffer.class)) {
                caps |= Native.CAP_READ_SUFFIX;
            }
            if (overrides(type, "truncate", long.class)) {
                caps |= Native.CAP_TRUNCATE;
            }
            if (overrides(type, "remove")) {
                caps |= Native.CAP_REMOVE;
            }
            // The new-object methods go together: all four, or the table has none.
            if (overrides(type, "beginNew")
                    && overrides(type, "writeNew", long.class, ByteBuffer.class)
                    && overrides(type, "commitNew", long.class)
                    && overrides(type, "discardNew")) {
                caps |= Native.CAP_NEW_OBJECTS;
            }
            return caps;
        }
    };

    static int of(ShardIO io) {
        return CAPS.get(io.getClass());
    }

    private static boolean overrides(Class<?> type, String name, Class<?>... params) {
        try {
            return type.getMethod(name, params).getDeclaringClass() != ShardIO.class;
        } catch (NoSuchMethodException e) {
            return false;
        }
    }
}
