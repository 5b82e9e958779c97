# A failing erase would go unnoticed: the status must reach @check (or be looked at).
# expect: raw-call: shard_erase_chunk: the shard_status it returns is thrown away
function erase_unchecked(s, coords)
    cc = c_coords(3, coords)
    L.shard_erase_chunk(s, cc, length(cc))
    return nothing
end
