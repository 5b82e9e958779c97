# version is uint32_t: UInt64 would shift every later field.
# sub: LibZarrShard.jl | version::UInt32\n    userdata | version::UInt64\n    userdata
# expect: struct: field version (`uint32_t`): `uint32_t` is UInt32/Cuint, not UInt64
