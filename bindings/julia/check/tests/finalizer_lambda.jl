# A finalizer the checker cannot follow (an anonymous function) is refused, not trusted.
# sub: src/ZarrShard.jl | finalizer(_free_codec!, c) | finalizer(x -> _free_codec!(x), c)
# expect: finalizer: register a named function of the package
