/*
 * ome_pyramid: write an OME-Zarr 0.5 (NGFF) image from C with the library's own directory
 * store: a group whose attributes hold the `ome` metadata (multiscales, omero) and three
 * sharded uint16 arrays `0`, `1`, `2` under it, a pyramid halved in y and x at each level.
 *
 *     ome_pyramid OUT_DIR [Z Y X]
 *
 * OUT_DIR becomes the image (OUT_DIR/zarr.json, OUT_DIR/0/zarr.json, ...); an image already
 * there is replaced. The image is Z x Y x X (default 10 x 512 x 512) synthetic uint16 pixels;
 * Y and X must be multiples of 256 so every level splits into whole inner chunks of 64 x 64.
 * Each level is written plane by plane with shard_array_append along z, as a microscope
 * streams it: only one plane per level is held here, and the library writes each shard once,
 * whole, when its 4 planes are in. Level k + 1 is the floor of the mean of 2 x 2 blocks of
 * level k. tests/c/check_ome.py recomputes the same pyramid and reads it with ome-zarr.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zarrshard.h"

#define LEVELS 3
#define SHARD_Z 4      /* planes per shard */
#define SHARD_XY 256   /* shard side in y and x (less on a level smaller than that) */
#define CHUNK_XY 64    /* inner chunk side in y and x; inner chunks are one plane deep */
#define Z_STEP 2.0     /* level 0's voxel size in micrometer: z */
#define XY_STEP 0.5    /* and y, x */

/* The level-0 value at (z, y, x). Keep in sync with tests/c/check_ome.py. */
static uint16_t pixel(uint64_t z, uint64_t y, uint64_t x) {
    uint32_t h = ((uint32_t)y * 73856093u) ^ ((uint32_t)x * 19349663u) ^ ((uint32_t)z * 83492791u);
    return (uint16_t)(1000 + 500 * z + ((y * y + 3 * x) & 1023) + ((h >> 13) & 15));
}

/* Print a failed library call with the library's own message; returns 1 for `return`. */
static int lib_error(const char *what, shard_status st) {
    char msg[512];
    size_t n = 0;
    if (shard_last_error(msg, sizeof msg, &n) != SHARD_OK) msg[0] = '\0';
    fprintf(stderr, "ome_pyramid: %s: %s: %s\n", what, shard_status_str((uint32_t)st), msg);
    return 1;
}

/* The group's attributes: NGFF 0.5 puts everything under "ome"; the display window ends at
 * the largest value pixel() gives. Returns 0, or 1 when the text does not fit. */
static int ome_attributes(char *buf, size_t cap, uint64_t nz) {
    char datasets[1024];
    size_t used = 0;
    int i, n;
    for (i = 0; i < LEVELS; i++) {
        double xy = XY_STEP * (double)(1u << i);
        n = snprintf(datasets + used, sizeof datasets - used,
                     "%s{\"path\": \"%d\", \"coordinateTransformations\": "
                     "[{\"type\": \"scale\", \"scale\": [%.1f, %.1f, %.1f]}]}",
                     i ? ", " : "", i, Z_STEP, xy, xy);
        if (n < 0 || (size_t)n >= sizeof datasets - used) return 1;
        used += (size_t)n;
    }
    n = snprintf(buf, cap,
                 "{\"ome\": {\"version\": \"0.5\", \"multiscales\": [{"
                 "\"name\": \"synthetic\", "
                 "\"axes\": [{\"name\": \"z\", \"type\": \"space\", \"unit\": \"micrometer\"}, "
                 "{\"name\": \"y\", \"type\": \"space\", \"unit\": \"micrometer\"}, "
                 "{\"name\": \"x\", \"type\": \"space\", \"unit\": \"micrometer\"}], "
                 "\"datasets\": [%s], "
                 "\"type\": \"mean\", "
                 "\"metadata\": {\"description\": \"floor of the mean of 2 x 2 blocks in y and x "
                 "of the level before\"}}], "
                 "\"omero\": {\"channels\": [{\"label\": \"synthetic\", \"color\": \"FFFFFF\", "
                 "\"active\": true, \"coefficient\": 1.0, \"family\": \"linear\", "
                 "\"inverted\": false, \"window\": {\"min\": 0, \"max\": 65535, "
                 "\"start\": 1000, \"end\": %u}}], "
                 "\"rdefs\": {\"defaultT\": 0, \"defaultZ\": %u, \"model\": \"greyscale\"}}}}",
                 datasets, (unsigned)(1538 + 500 * nz), (unsigned)(nz / 2));
    return n < 0 || (size_t)n >= cap;
}

/* Level k + 1's plane from level k's: each value the floor of the mean of a 2 x 2 block. */
static void halve(const uint16_t *in, uint64_t ny, uint64_t nx, uint16_t *out) {
    uint64_t y, x;
    for (y = 0; y < ny / 2; y++)
        for (x = 0; x < nx / 2; x++) {
            const uint16_t *p = in + 2 * y * nx + 2 * x;
            out[y * (nx / 2) + x] = (uint16_t)(((uint32_t)p[0] + p[1] + p[nx] + p[nx + 1]) / 4);
        }
}

int main(int argc, char **argv) {
    static const char *const dims[3] = {"z", "y", "x"};
    shard_store_callbacks store;
    shard_array *arrays[LEVELS] = {NULL};
    uint16_t *planes[LEVELS] = {NULL};
    uint64_t ny[LEVELS], nx[LEVELS], nz = 10, z;
    char attrs[4096];
    shard_status st;
    int i, rc = 1;

    if (argc != 2 && argc != 5) {
        fprintf(stderr, "usage: ome_pyramid OUT_DIR [Z Y X]\n");
        return 2;
    }
    ny[0] = nx[0] = 512;
    if (argc == 5) {
        nz = strtoull(argv[2], NULL, 10);
        ny[0] = strtoull(argv[3], NULL, 10);
        nx[0] = strtoull(argv[4], NULL, 10);
    }
    if (nz == 0 || nz > 100 || ny[0] == 0 || nx[0] == 0 || ny[0] % SHARD_XY || nx[0] % SHARD_XY ||
        ny[0] > 16384 || nx[0] > 16384) {
        fprintf(stderr, "ome_pyramid: Z must be 1..100, Y and X multiples of %d up to 16384\n",
                SHARD_XY);
        return 2;
    }
    if (ome_attributes(attrs, sizeof attrs, nz) != 0) {
        fprintf(stderr, "ome_pyramid: attributes too long\n");
        return 1;
    }

    /* The image is the store's root: a group with the "ome" attributes, replacing any
     * earlier image (and its arrays) there. */
    st = shard_store_directory(argv[1], SHARD_STORE_CREATE, &store);
    if (st != SHARD_OK) return lib_error("shard_store_directory", st);
    st = shard_group_create(&store, "", attrs, strlen(attrs), SHARD_CREATE_OVERWRITE);
    if (st != SHARD_OK) {
        lib_error("shard_group_create", st);
        goto done;
    }

    /* One array per level, empty along z (appends grow it): sharded, zstd (the spec's
     * default), a crc32c over each shard index (the default), dimension names as the axes. */
    for (i = 0; i < LEVELS; i++) {
        shard_array_spec spec;
        char path[2]; /* "0", "1", "2" */
        uint64_t shape[3], shard[3], chunk[3];
        if (i > 0) {
            ny[i] = ny[i - 1] / 2;
            nx[i] = nx[i - 1] / 2;
        }
        shape[0] = 0;
        shape[1] = ny[i];
        shape[2] = nx[i];
        shard[0] = SHARD_Z;
        shard[1] = ny[i] < SHARD_XY ? ny[i] : SHARD_XY;
        shard[2] = nx[i] < SHARD_XY ? nx[i] : SHARD_XY;
        chunk[0] = 1;
        chunk[1] = chunk[2] = CHUNK_XY;
        st = shard_array_spec_init(&spec);
        if (st != SHARD_OK) {
            lib_error("shard_array_spec_init", st);
            goto done;
        }
        spec.rank = 3;
        spec.shape = shape;
        spec.shard_shape = shard;
        spec.chunk_shape = chunk;
        spec.data_type = "uint16";
        spec.dimension_names = dims;
        path[0] = (char)('0' + i);
        path[1] = '\0';
        st = shard_array_create_spec(&store, path, &spec, SHARD_CREATE_OVERWRITE, &arrays[i]);
        if (st != SHARD_OK) {
            lib_error("shard_array_create_spec", st);
            goto done;
        }
        planes[i] = (uint16_t *)malloc((size_t)(ny[i] * nx[i]) * sizeof(uint16_t));
        if (planes[i] == NULL) {
            fprintf(stderr, "ome_pyramid: out of memory\n");
            goto done;
        }
    }

    /* Plane by plane: level 0 from the formula, each further level from the one before. */
    for (z = 0; z < nz; z++) {
        uint64_t y, x;
        for (y = 0; y < ny[0]; y++)
            for (x = 0; x < nx[0]; x++) planes[0][y * nx[0] + x] = pixel(z, y, x);
        for (i = 0; i < LEVELS; i++) {
            uint64_t block[3];
            if (i > 0) halve(planes[i - 1], ny[i - 1], nx[i - 1], planes[i]);
            block[0] = 1;
            block[1] = ny[i];
            block[2] = nx[i];
            st = shard_array_append(arrays[i], 0, block, 3, (const uint8_t *)planes[i],
                                    (size_t)(ny[i] * nx[i]) * sizeof(uint16_t));
            if (st != SHARD_OK) {
                lib_error("shard_array_append", st);
                goto done;
            }
        }
    }

    /* Flush before close: close flushes too, but only flush reports an error. */
    for (i = 0; i < LEVELS; i++) {
        st = shard_array_flush(arrays[i]);
        if (st != SHARD_OK) {
            lib_error("shard_array_flush", st);
            goto done;
        }
    }
    for (i = 0; i < LEVELS; i++)
        printf("level %d: %llu x %llu x %llu uint16 at %s/%d\n", i, (unsigned long long)nz,
               (unsigned long long)ny[i], (unsigned long long)nx[i], argv[1], i);
    rc = 0;

done:
    for (i = 0; i < LEVELS; i++) {
        shard_array_close(arrays[i]);
        free(planes[i]);
    }
    shard_store_release(&store);
    return rc;
}
