# kerchunk_refs(io, …) rooting the caller's IO instead of the Ref{IO} box whose address is the
# sink's userdata: the GC may free the box while the library calls the sink.
# sub: src/ZarrShard.jl |     GC.@preserve box begin |     GC.@preserve io begin
# expect: preserve: `pointer_from_objref(box)`: `box` is not among the preserved variables (io)
