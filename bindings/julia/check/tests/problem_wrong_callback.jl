# verify passing the sink as the problem callback: a 3-argument function the library would
# call with shard_problem_fn's 6 arguments.
# sub: src/ZarrShard.jl | L.shard_array_verify(a, CB_PROBLEM[], | L.shard_array_verify(a, CB_SINK[],
# expect: wiring: shard_array_verify: argument 2 (on_problem) gets `CB_SINK[]`, expected CB_PROBLEM[]
# expect: wiring: no call of the raw layer passes a shard_problem_fn
