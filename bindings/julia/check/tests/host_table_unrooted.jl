# with_table handing the library a host store's table without rooting the HostStore whose
# address is its userdata.
# sub: src/stores.jl |     r = GC.@preserve s begin\n        table = store_table(pointer_from_objref(s)) |     r = GC.@preserve f begin\n        table = store_table(pointer_from_objref(s))
# expect: preserve: `pointer_from_objref(s)`: `s` is not among the preserved variables (f)
