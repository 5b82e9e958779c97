# Not Julia: the checker must refuse to judge a file it cannot parse.
# expect: parse: parse error
function broken(x
    x + * 2
end
