package io.zarrshard;

import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/** A store in memory, key → {@link MemoryShardIO}, for tests and caches. Thread-safe. */
public final class MemoryShardStore implements ShardStore {
    /** An empty store. */
    public MemoryShardStore() {}

    private final ConcurrentHashMap<String, MemoryShardIO> objects = new ConcurrentHashMap<>();
    private final AtomicLong opens = new AtomicLong();

    /**
     * The object at {@code key} (created, not existing, on first use). Thread-safe.
     *
     * @param key the object's key
     * @return the same MemoryShardIO for every call with this key
     */
    @Override
    public MemoryShardIO open(String key) {
        opens.incrementAndGet();
        return objects.computeIfAbsent(key, k -> new MemoryShardIO());
    }

    /**
     * The keys of the objects that exist, sorted. Thread-safe.
     *
     * @return a new, unmodifiable list
     */
    public List<String> keys() {
        return objects.entrySet().stream().filter(e -> e.getValue().exists())
                .map(e -> e.getKey()).sorted().toList();
    }

    /**
     * The keys of the objects that exist and start with {@code prefix}, sorted (objects
     * {@link #open} created but nothing wrote are not listed). Thread-safe.
     *
     * @param prefix the start of the keys, e.g. {@code "c/"}; may be empty
     * @return a new, unmodifiable list
     */
    @Override
    public List<String> list(String prefix) {
        return keys().stream().filter(k -> k.startsWith(prefix)).toList();
    }

    /**
     * How many times {@link #open} was called (once per shard an array call touches).
     *
     * @return the count so far
     */
    public long opens() {
        return opens.get();
    }
}
