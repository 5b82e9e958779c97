# cb_store_list rooting the listed value instead of the String whose bytes on_key reads.
# sub: io.jl |             GC.@preserve key begin | GC.@preserve k begin
# expect: preserve: `pointer(key)`: `key` is not among the preserved variables (k)
