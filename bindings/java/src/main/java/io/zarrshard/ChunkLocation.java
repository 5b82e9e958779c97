package io.zarrshard;

/**
 * Where an inner chunk is stored ({@code shard_chunk_location}).
 *
 * @param offset byte offset in the shard object (meaningless when {@code empty}; 0 for chunks
 *     a buffered writer holds until finalize)
 * @param nbytes encoded size in bytes (0 when {@code empty})
 * @param empty the chunk is not stored and reads as the fill value
 */
public record ChunkLocation(long offset, long nbytes, boolean empty) {}
