# ZarrShard.jl example: read the interop fixture zarr-python wrote, check every inner chunk of
# every shard against fixture.raw, print one chunk; then write a rank-3 shard in memory and
# read it back; then read regions of the whole array through a store written in Julia
# (key -> ShardFile, the library's file I/O), write its kerchunk reference set as Parquet files
# into a store of MemoryShardIOs and into a directory, and as JSON text, verify it; and write
# regions through a store of MemoryShardIOs, verify them, damage one inner chunk and verify
# again; then walk a sparse array over a store that lists (DictStore), over one that cannot,
# and over one whose listing fails. Last, the library's own stores: the fixture opened by path
# in a DirectoryStore, a 3-D stack made under a group there, grown frame by frame with append!,
# resized, compacted and opened again (bindings/julia/run.sh has zarr-python read it), an
# array in a MemoryStore made from metadata_json, and a group and an array in a store written
# in Julia (a HostStore over a DictStore).
#
#     .venv/bin/python bindings/make_fixture.py /tmp/fx        # -> /tmp/fx/fixture.zarr, .raw
#     cargo build --release --lib
#     ZARRSHARD_LIBRARY=$PWD/target/release/libzarrshard.so \
#         julia --project=bindings/julia/ZarrShard bindings/julia/ZarrShard/example/example.jl /tmp/fx
#
# bindings/julia/calls.c makes exactly the C calls this script makes, in the same order, and
# its comments map each line here ([1], [2], ...) to those calls. Keep the two in step.
#
# Dimension order: the Julian layer shows every shape and coordinate reversed and 1-based, so
# a C-order chunk element [i][j] is A[j+1, i+1] and C shard c/0/1 is grid coordinate (2, 1).

using ZarrShard
using ZarrShard: LibZarrShard

# A bare sharding_indexed configuration (Zarr JSON: C order), one line so that calls.c can
# pass byte for byte the same text.
const CONFIG3 = """{"chunk_shape":[2,3,5],"codecs":[{"name":"bytes","configuration":{"endian":"little"}},{"name":"zstd","configuration":{"level":1,"checksum":false}}],"index_codecs":[{"name":"bytes","configuration":{"endian":"little"}},{"name":"crc32c"}],"index_location":"end"}"""

# A store whose listing fails (say the server refused it): walks over the stored shards throw
# a ZarrShardError (SHARD_ERR_IO) whose cause is the exception. Its objects are a DictStore's.
struct RefusingListing
    objects::DictStore
end
(s::RefusingListing)(key::String) = s.objects(key)
ZarrShard.list_keys(::RefusingListing, prefix::String) = error("listing refused")

function main(dir::AbstractString)
    array = joinpath(dir, "fixture.zarr")
    println("libzarrshard ", ZarrShard.version())                                   # [1]
    set_threads!(2)  # the library's worker threads (1: only the calling thread)         # [1a]
    threads() == 2 || error("threads() is not 2")                                    # [1b]

    # The array: 64x64 uint16, shards 32x32, inner chunks 16x16 (zarr.json is C order).
    codec = Codec(read(joinpath(array, "zarr.json"), String))                        # [2]
    shape = array_shape(codec)                                                       # [3]
    grid = grid_shape(codec)                                                         # [4]
    per_shard = chunks_per_shard(codec)                                              # [5]
    shard_dims = shard_shape(codec)                                                  # [6]
    inner = inner_chunk_shape(codec)                                                 # [7]

    # fixture.raw is the whole array, C order, little-endian: as a Julia array of the
    # reversed shape, expected[c+1, r+1] is the value at row r, column c.
    expected = reshape(ltoh.(reinterpret(UInt16, read(joinpath(dir, "fixture.raw")))), shape)

    checked = 0
    for s in CartesianIndices(grid)                  # Julia order: C's last index fastest
        key = shard_key(codec, s)                                                    # [8]
        open(codec, ShardFile(joinpath(array, key))) do shard                        # [9]
            for c in CartesianIndices(per_shard)
                A = read_chunk(shard, c)                                             # [10]
                origin = (Tuple(s) .- 1) .* shard_dims .+ (Tuple(c) .- 1) .* inner
                want = expected[map((o, n) -> o+1:o+n, origin, inner)...]
                A == want || error("shard $key, inner chunk $(Tuple(c)): values differ")
                checked += 1
            end
        end                                                                          # [11]
    end
    println("checked $checked inner chunks of $(length(grid)) shards against fixture.raw")

    # Shard c/0/1 is grid (2, 1); its inner chunk [0][1] (C) is (2, 1) here. It holds rows
    # 0..15 and columns 48..63 of the array: A[j+1, i+1] = value(row i, column 48 + j).
    open(codec, ShardFile(joinpath(array, shard_key(codec, (2, 1))))) do shard       # [12]
        A = read_chunk(shard, (2, 1))                                                # [13]
        A[2, 1] == UInt16((0 * 64 + 49) * 7) || error("A[2, 1] is not C element [0][1]")
        println("shard c/0/1, inner chunk [0][1] (C) = (2, 1) (Julia), ", summary(A),
                "; A[1:4, 1:3] (A[j, i] is row i-1, column 47+j):")
        show(stdout, "text/plain", A[1:4, 1:3])
        println()
        info = chunk_info(shard, (1, 1))             # top-left: all fill, not stored  # [14]
        info.empty || error("the top-left inner chunk should not be stored")
        err = try                                                                    # [15]
            read_chunk(shard, (3, 1))                # C [0][2]: outside the 2x2 chunk grid
            nothing
        catch e
            e
        end
        err isa ZarrShardError &&
            err.status == Int32(LibZarrShard.SHARD_ERR_INVALID_ARGUMENT) ||
            error("expected a ZarrShardError, got $(repr(err))")
        println("as expected: ", sprint(showerror, err))
    end                                                                              # [16]

    # A missing object reads as the fill value (the callbacks return SHARD_IO_NOT_FOUND).
    open(codec, MemoryShardIO()) do shard                                            # [17]
        all(iszero, read_chunk(shard, (1, 1))) || error("a missing shard reads as fill") # [18]
    end                                                                              # [19]

    # A rank-3 int32 shard in memory, from a bare sharding configuration. C shard shape
    # [4][6][10], inner chunks [2][3][5]; in Julia (10, 6, 4) and (5, 3, 2).
    codec3 = Codec(CONFIG3, "int32", (10, 6, 4), "-1")                                # [20]
    fill_value(codec3) == Int32(-1) || error("fill value")                           # [21]
    inner3 = inner_chunk_shape(codec3)                                               # [22]
    per3 = chunks_per_shard(codec3)                                                  # [23]
    # data[k+1, j+1, i+1] is C element [i][j][k] = 10000 i + 100 j + k.
    data = [Int32(10000i + 100j + k) for k in 0:9, j in 0:5, i in 0:3]
    part(c) = data[map((x, n) -> (x-1)*n+1:x*n, Tuple(c), inner3)...]

    mem = MemoryShardIO()
    open(codec3, mem; mode = :buffered) do shard                                     # [24]
        for c in CartesianIndices(per3)
            write_chunk(shard, c, part(c))                                           # [25]
        end
        erase_chunk(shard, (2, 1, 1))                # C inner chunk [0][0][1]        # [26]
        nbytes = finalize_shard!(shard)                                              # [27]
        println("wrote a rank-3 shard of $nbytes bytes in memory")
    end                                                                              # [28]

    open(codec3, mem) do shard                                                       # [29]
        for c in CartesianIndices(per3)
            A = read_chunk(shard, c)                                                 # [30]
            want = Tuple(c) == (2, 1, 1) ? fill(Int32(-1), inner3) : part(c)
            A == want || error("rank-3 inner chunk $(Tuple(c)): values differ")
        end
        isempty(read_chunk_raw(shard, (2, 1, 1))) || error("erased chunk is stored")  # [31]
        both = read_chunks(shard, [(1, 1, 1), (2, 2, 2)])                            # [32]
        both[:, :, :, 2] == part((2, 2, 2)) || error("read_chunks")
        println("rank 3: A[k, j, i] == C[i-1][j-1][k-1]; ", summary(both),
                " from read_chunks, A[5, 3, 2] = ", both[5, 3, 2, 1])
    end                                                                              # [33]
    close(codec3)                                                                    # [34]
    close(codec)                                                                     # [35]

    # The whole array over a store written in Julia: a function from key ("c/0/1") to the
    # object's storage, here the library's file I/O for it (a ShardFile).
    json = read(joinpath(array, "zarr.json"), String)
    arr = ShardArray(json, key -> ShardFile(joinpath(array, key)))                   # [36]
    # C start [10][20], shape [40][30] (rows 10..49, columns 20..49): all four shards.
    R = read_region(arr, (21, 11), (30, 40))                                         # [37]
    R == expected[21:50, 11:50] || error("region differs from fixture.raw")
    set_coalesce_gap!(arr, 0)  # only touching byte ranges merged                   # [37a]
    read_region(arr, (21, 11), (30, 40)) == R ||                                     # [37b]
        error("the region differs with another coalescing gap")
    all(iszero, read_region(arr, (1, 1), (16, 16))) ||                              # [38]
        error("the top-left inner chunk reads as the fill value")
    # A region past the 64x64 array is refused before anything is allocated for it.
    err = try                                                                        # [38a]
        read_region(arr, (1, 1), (2^20, 2^20))
        nothing
    catch e
        e
    end
    err isa ZarrShardError && err.status == Int32(LibZarrShard.SHARD_ERR_INVALID_ARGUMENT) ||
        error("expected SHARD_ERR_INVALID_ARGUMENT, got $(repr(err))")

    # Its kerchunk reference set in fsspec's Parquet layout (LazyReferenceMapper), written
    # through a store of MemoryShardIOs: 16 inner chunks, 3 rows per file -> 6 files.
    refs = Dict{String,MemoryShardIO}()
    url = "file://" * abspath(array)
    kerchunk_refs_parquet(arr, key -> get!(MemoryShardIO, refs, key), url;            # [38b]
                          name = "fixture", record_size = 3)
    sort!(collect(keys(refs))) == [".zmetadata"; ["fixture/refs.$n.parq" for n in 0:5]] ||
        error("reference files: $(sort!(collect(keys(refs))))")
    all(k -> contents(refs[k])[1:4] == b"PAR1", [k for k in keys(refs) if endswith(k, ".parq")]) ||
        error("a reference file is not Parquet")
    occursin("\"record_size\":3", String(contents(refs[".zmetadata"]))) || error(".zmetadata")
    err = try                                        # an empty name is refused        # [38c]
        kerchunk_refs_parquet(arr, key -> get!(MemoryShardIO, refs, key), url; name = "")
        nothing
    catch e
        e
    end
    err isa ZarrShardError && err.status == Int32(LibZarrShard.SHARD_ERR_INVALID_ARGUMENT) ||
        error("expected SHARD_ERR_INVALID_ARGUMENT, got $(repr(err))")
    println("kerchunk references: ", length(refs), " objects (Parquet, 3 rows per file)")
    # The same set written by the library itself into a local directory, as `zarrshard refs
    # --format parquet -o DIR` writes it: the files are the store's objects, byte for byte.
    pdir = joinpath(mktempdir(), "refs")            # not there yet: the library creates it
    kerchunk_refs_parquet(arr, pdir, url; name = "fixture", record_size = 3)          # [38d]
    readdir(pdir) == [".zmetadata", "fixture"] &&
        readdir(joinpath(pdir, "fixture")) == ["refs.$n.parq" for n in 0:5] ||
        error("reference files in $pdir: $(readdir(pdir))")
    all(k -> read(joinpath(pdir, k)) == contents(refs[k]), keys(refs)) ||
        error("the files in $pdir differ from the store's objects")
    err = try                                        # a directory that is not empty      # [38e]
        kerchunk_refs_parquet(arr, pdir, url; name = "fixture", record_size = 3)
        nothing
    catch e
        e
    end
    err isa ZarrShardError && err.status == Int32(LibZarrShard.SHARD_ERR_INVALID_ARGUMENT) ||
        error("expected SHARD_ERR_INVALID_ARGUMENT, got $(repr(err))")
    err = try                                        # a path under a regular file        # [38f]
        kerchunk_refs_parquet(arr, joinpath(dir, "fixture.raw", "refs"), url; name = "fixture")
        nothing
    catch e
        e
    end
    err isa ZarrShardError && err.status == Int32(LibZarrShard.SHARD_ERR_IO) &&
        (Sys.iswindows() || err.io_code == Libc.ENOTDIR) ||
        error("expected SHARD_ERR_IO with ENOTDIR, got $(repr(err))")
    println("kerchunk references: 7 files in ", pdir, " (the objects' bytes)")
    # The same set as kerchunk JSON, version 1 (the url is its template "u"): one C call that
    # reads each shard's index once and hands the text to a sink appending it to an IOBuffer.
    # 12 references: the stored inner chunks (each shard's top-left one is empty, left out).
    refs_json = kerchunk_refs(arr, url)                                              # [38g]
    startswith(refs_json, "{\"version\":1,") && occursin("\"u\":\"$url\"", refs_json) &&
        count("[\"{{u}}/c/", refs_json) == 12 || error("kerchunk JSON references: $refs_json")
    println("kerchunk references: ", sizeof(refs_json), " bytes of JSON, 12 inner chunks")
    # Every stored shard checked as `zarrshard verify` does: what zarr-python wrote is clean.
    isempty(verify(arr)) || error("verify: the fixture has problems")               # [38h]
    # The same text written to an IO as the shards are read (shard_array_refs_stream: the
    # library holds a batch of shard indexes, never the text), for sets too large to hold;
    # a file would do the same (open(io -> kerchunk_refs(io, arr, url), "refs.json", "w")).
    streamed = IOBuffer()
    kerchunk_refs(streamed, arr, url)                                                # [38i]
    String(take!(streamed)) == refs_json || error("kerchunk_refs(io, …) differs")
    close(arr)                                                                       # [39]

    # Regions written through a store of MemoryShardIOs read back as a model of the array.
    objects = Dict{String,MemoryShardIO}()
    open(ShardArray, json, key -> get!(MemoryShardIO, objects, key)) do marr         # [40]
        write_region(marr, (21, 11), R)                                              # [41]
        write_region(marr, (1, 33), fill(UInt16(9), 64, 32))  # C rows 32..63: shards c/1/*  # [42]
        model = zeros(UInt16, 64, 64)
        model[21:50, 11:50] = R
        model[:, 33:64] .= 9
        read_region(marr, (1, 1), (64, 64)) == model || error("written regions differ")  # [43]
        isempty(verify(marr)) || error("verify: the written array has problems")     # [43a]
        # Damage C inner chunk [0][1] of shard c/0/0 ((2, 1) here): its first byte, the start
        # of its zstd frame. verify reports it, in the Julian layer's coordinates.
        info = open(s -> chunk_info(s, (2, 1)), ZarrShard.codec(marr), objects["c/0/0"])  # [43b]
        d = contents(objects["c/0/0"])
        d[info.offset + 1] ⊻= 0xff
        objects["c/0/0"] = MemoryShardIO(d)          # what the store returns from now on
        problems = verify(marr)                                                      # [43c]
        length(problems) == 1 || error("verify after the damage: $problems")
        p = only(problems)
        p.key == "c/0/0" && p.chunk == [2, 1] &&
            p.status == Int32(LibZarrShard.SHARD_ERR_CORRUPT) &&
            startswith(p.message, "corrupt shard: inner chunk [0, 1]: ") ||
            error("verify after the damage: $p")
        println("verify: clean, then ", p.key, " inner chunk ", Tuple(p.chunk), ": ", p.message)
        println("regions: read 30x40 of fixture.raw, wrote and read back ",
                length(objects), " shards in memory")
    end                                                                              # [44]

    # A store that lists (DictStore has a list_keys method): walks over the stored shards
    # (verify, kerchunk_refs, kerchunk_refs_parquet) list once and open only the listed
    # shards, not every position of the 2x2 grid. One inner chunk written: C rows 0..15,
    # columns 48..63, inner chunk [0][1] of c/0/1, the only shard stored.
    sparse = DictStore()
    open(ShardArray, json, sparse) do sarr                                           # [45]
        write_region(sarr, (49, 1), fill(UInt16(5), 16, 16))                         # [46]
        list_keys(sparse, "c/") == ["c/0/1"] || error("listed: $(list_keys(sparse, "c/"))")
        isempty(verify(sarr)) || error("verify: the sparse array has problems")      # [47]
        count("[\"{{u}}/c/", kerchunk_refs(sarr, url)) == 1 ||                        # [48]
            error("kerchunk references of the sparse array")
    end                                                                              # [49]
    # The same objects through a plain function: it cannot list (list_keys' default returns
    # nothing, SHARD_STORE_CANNOT_LIST), so the library asks all 4 grid positions.
    open(ShardArray, json, key -> sparse(key)) do parr                               # [50]
        isempty(verify(parr)) || error("verify without listing")                     # [51]
    end                                                                              # [52]
    # A listing that fails fails the walk: SHARD_ERR_IO, the exception as cause.
    open(ShardArray, json, RefusingListing(sparse)) do rarr                          # [53]
        err = try                                                                    # [54]
            verify(rarr)
            nothing
        catch e
            e
        end
        err isa ZarrShardError && err.status == Int32(LibZarrShard.SHARD_ERR_IO) &&
            err.io_code == ZarrShard.IO_CODE_EXCEPTION && err.cause isa ErrorException ||
            error("expected SHARD_ERR_IO caused by the listing, got $(repr(err))")
    end                                                                              # [55]
    println("listing store: ", join(list_keys(sparse, "c/"), ", "), " stored of 4 grid positions")
    # The codec contexts and buffers the library keeps between calls, freed; then nothing left.
    freed = release_memory()                                                         # [56]
    freed.contexts >= 2 || error("release_memory freed $(freed.contexts) codec contexts")
    release_memory() == (bytes = 0, contexts = 0) || error("a second release freed memory")  # [57]

    # The library's own stores. The fixture, opened by path from its own zarr.json.
    fx = DirectoryStore(array)                                                       # [58]
    open(fx) do farr                                                                 # [59]
        size(farr) == (64, 64) || error("size of the fixture: $(size(farr))")        # [60]
        read_region(farr, (21, 11), (30, 40)) == expected[21:50, 11:50] ||           # [61]
            error("the fixture by path differs from fixture.raw")
    end                                                                              # [62]
    close(fx)                                                                        # [63]

    # A 3-D uint16 stack, Julia (x, y, t) = C [t][y][x], made under a group and grown frame by
    # frame: 40x24 frames, inner chunks 20x8x2, shards of 4 frames. frame(t)[x+1, y+1] is
    # 1000 t + 10 y + x (C element [t][y][x]).
    frame(t) = [UInt16(1000t + 10y + x) for x in 0:39, y in 0:23]
    root = joinpath(dir, "stack.zarr")
    rm(root; force = true, recursive = true)
    store = DirectoryStore(root; create = true)                                      # [64]
    create_group(store; attributes = """{"description":"frames"}""")                 # [65]
    stack = create(store, "0"; shape = (40, 24, 0), chunks = (20, 8, 2),              # [66]
                   shards = (40, 24, 4), dtype = UInt16, dimension_names = ("x", "y", "t"))
    for t in 0:4
        append!(stack, frame(t))                     # one frame: (40, 24) -> (40, 24, 1) # [67]
    end
    size(stack) == (40, 24, 5) || error("size after 5 frames: $(size(stack))")       # [68]
    read_region(stack, (1, 1, 5), (40, 24, 1)) == reshape(frame(4), 40, 24, 1) ||    # [69]
        error("a pending frame does not read back")
    flush(stack)                                     # frame 4's partial layer, the shape # [70]
    set_attributes!(stack, """{"unit":"ms"}""")                                      # [71]
    attributes(stack) == """{"unit":"ms"}""" || error("attributes: $(attributes(stack))") # [72]
    for t in 5:9
        append!(stack, frame(t))                                                     # [73]
    end
    resize!(stack, (40, 24, 7))                      # frames 7..9 gone               # [74]
    resize!(stack, (40, 24, 8))                      # frame 7 again: the fill value   # [75]
    all(iszero, read_region(stack, (1, 1, 8), (40, 24, 1))) ||                       # [76]
        error("a regrown frame shows old data")
    # Half an inner chunk rewritten: the shard grows by the new chunk (dead bytes) ...
    write_region(stack, (1, 1, 2), fill(UInt16(7), 20, 8, 1))                        # [77]
    c = compact!(stack)                              # ... which compaction frees       # [78]
    c.shards_rewritten == 1 && c.bytes_freed > 0 || error("compact!: $c")
    close(stack)                                                                     # [79]
    model = cat([frame(t) for t in 0:6]..., zeros(UInt16, 40, 24); dims = 3)
    model[1:20, 1:8, 2] .= 7
    open(store, "0") do s2                           # by path, from its zarr.json     # [80]
        size(s2) == (40, 24, 8) || error("size by path: $(size(s2))")                # [81]
        read_region(s2, (1, 1, 1), (40, 24, 8)) == model || error("the stack differs") # [82]
    end                                                                              # [83]
    for (bad, status) in (("0", LibZarrShard.SHARD_ERR_INVALID_STATE),      # exists  # [84]
                          ("../x", LibZarrShard.SHARD_ERR_INVALID_ARGUMENT)) # leaves the store
        err = try
            create(store, bad; shape = (1,), chunks = (1,), dtype = UInt8)
            nothing
        catch e
            e
        end
        err isa ZarrShardError && err.status == Int32(status) ||
            error("create at $(repr(bad)): expected $status, got $(repr(err))")
    end
    err = try                                        # nothing there                  # [85]
        open(store, "1")
        nothing
    catch e
        e
    end
    err isa ZarrShardError && err.status == Int32(LibZarrShard.SHARD_ERR_INVALID_METADATA) ||
        error("open of a missing array: $(repr(err))")
    close(store)                                                                     # [86]
    println("stack: 8 frames of 40x24 in ", root, " (", c.bytes_freed, " bytes compacted)")

    # In the library's memory store, from metadata text: int32, fill value -1.
    mem = MemoryStore()                                                              # [87]
    meta = metadata_json(; shape = (8, 4), chunks = (4, 2), shards = (8, 4),         # [88]
                         dtype = Int32, fill_value = -1)
    m = create(mem, "a", meta)                                                       # [89]
    write_region(m, (5, 3), Int32[1 2; 3 4])         # C start [2][4], shape [2][2]    # [90]
    want = fill(Int32(-1), 8, 4)
    want[5:6, 3:4] = [1 2; 3 4]
    read_region(m, (1, 1), (8, 4)) == want || error("the memory array differs")      # [91]
    close(m)                                                                         # [92]
    open(mem, "a") do m2                                                             # [93]
        read_region(m2, (1, 1), (8, 4)) == want || error("the memory array by path") # [94]
    end                                                                              # [95]
    close(mem)                                                                       # [96]
    println("memory store: an 8x4 int32 array at \"a\", read back by path")

    # Storage written in Julia (custom storage) takes the same calls: groups, create, open by
    # path. The HostStore's address is the table's userdata; the array keeps it.
    host = HostStore(DictStore())                                                    # [97]
    create_group(host, "img")                                                        # [98]
    h = create(host, "img/0"; shape = (4, 4), chunks = (2, 2), shards = (4, 4), dtype = UInt8)  # [99]
    small = UInt8[1 2 3 4; 5 6 7 8; 9 10 11 12; 13 14 15 16]
    write_region(h, (1, 1), small)                                                   # [100]
    close(h)                                                                         # [101]
    open(host, "img/0") do h2                                                        # [102]
        read_region(h2, (1, 1), (4, 4)) == small || error("the host store's array")  # [103]
    end                                                                              # [104]
    open(host, "img/0") do h2                                                        # [105]
        occursin("\"node_type\": \"array\"", metadata(h2)) || error("metadata: $(metadata(h2))")  # [106]
        set_index_cache!(forget_cached_indexes!(h2), 0)                              # [107]
    end                                                                              # [108]
    set_group_attributes!(host, "img", """{"kind":"image"}""")                       # [109]
    group_attributes(host, "img") == """{"kind":"image"}""" || error("group attributes")  # [110]
    list_keys(host.open, "img/") == ["img/0/c/0/0", "img/0/zarr.json", "img/zarr.json"] ||
        error("the host store holds $(list_keys(host.open, "img/"))")
    println("host store: ", join(list_keys(host.open, ""), ", "))
    println("ok")
end

main(length(ARGS) >= 1 ? ARGS[1] : "fixture")
