package io.zarrshard;

import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/** A store in memory, key → {@link MemoryShardIO}, for tests and caches. Thread-safe. */
public final class MemoryShardStore implements ShardStore {
    private final ConcurrentHashMap<String, MemoryShardIO> objects = new ConcurrentHashMap<>();
    private final AtomicLong opens = new AtomicLong();

    /** The object at {@code key} (created, not existing, on first use). */
    @Override
    public MemoryShardIO open(String key) {
        opens.incrementAndGet();
        return objects.computeIfAbsent(key, k -> new MemoryShardIO());
    }

    /** The keys of the objects that exist, sorted. */
    public List<String> keys() {
        return objects.entrySet().stream().filter(e -> e.getValue().exists())
                .map(e -> e.getKey()).sorted().toList();
    }

    /** How many times {@link #open} was called (once per shard an array call touches). */
    public long opens() {
        return opens.get();
    }
}
