# with_spec rooting the pointer vector but not the buffer of dimension names it points into:
# the GC may free the names while the library reads them.
# sub: src/stores.jl | GC.@preserve cshape cchunks cshards dt fv comp namebuf ptrs begin | GC.@preserve cshape cchunks cshards dt fv comp ptrs begin
# expect: preserve: `pointer(namebuf, offsets[k])`: `namebuf` is not among the preserved variables
