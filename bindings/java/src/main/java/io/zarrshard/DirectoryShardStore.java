package io.zarrshard;

import java.io.IOException;
import java.nio.file.FileSystemLoopException;
import java.nio.file.FileVisitOption;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;

/** {@link ShardStore#directory}: files under a root directory, read-write, listing. */
final class DirectoryShardStore implements ShardStore {
    private final Path root;

    DirectoryShardStore(Path root) {
        this.root = root;
    }

    @Override
    public ShardIO open(String key) throws IOException {
        return new DirectoryObjectIO(root.resolve(key));
    }

    @Override
    public List<String> list(String prefix) throws IOException {
        // The directory part of the prefix ("c/" of "c/1"), walked from there.
        String dir = prefix.substring(0, prefix.lastIndexOf('/') + 1);
        Path start = dir.isEmpty() ? root : root.resolve(dir);
        List<String> keys = new ArrayList<>();
        if (!Files.isDirectory(start)) {
            return keys; // missing, or a file where a directory would be: nothing stored
        }
        // FOLLOW_LINKS: the walk reports a link back into an ancestor (a cycle) as
        // FileSystemLoopException; a dangling link or a link loop arrives as a non-regular file.
        Files.walkFileTree(start, EnumSet.of(FileVisitOption.FOLLOW_LINKS), Integer.MAX_VALUE,
                new SimpleFileVisitor<Path>() {
                    @Override
                    public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) {
                        if (attrs.isRegularFile()) {
                            String key = dir + keyOf(start.relativize(file));
                            if (key.startsWith(prefix)) {
                                keys.add(key);
                            }
                        }
                        return FileVisitResult.CONTINUE;
                    }

                    @Override
                    public FileVisitResult visitFileFailed(Path file, IOException e)
                            throws IOException {
                        // Gone since its directory was read, or a cycle: no object there.
                        if (e instanceof FileSystemLoopException
                                || e instanceof NoSuchFileException
                                || e instanceof NotDirectoryException) {
                            return FileVisitResult.CONTINUE;
                        }
                        throw e;
                    }
                });
        return keys;
    }

    /** A relative path's names joined with '/', whatever the platform's separator. */
    private static String keyOf(Path relative) {
        StringBuilder key = new StringBuilder();
        for (Path name : relative) {
            if (key.length() > 0) {
                key.append('/');
            }
            key.append(name);
        }
        return key.toString();
    }
}
