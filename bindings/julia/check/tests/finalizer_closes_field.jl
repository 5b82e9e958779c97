# The array's finalizer closing the array's Codec as well: the codec may still be referenced
# (`c = codec(a)`) and in use on another thread when `a` is collected (a use after free).
# sub: src/ZarrShard.jl | function _close_array!(a::ShardArray)\n    p = a.ptr | function _close_array!(a::ShardArray)\n    c = a.codec\n    c === nothing || close(c)\n    p = a.ptr
# expect: finalizer: _close_array! (ZarrShard/src/ZarrShard.jl
