-- wrk script for S2 patches: PATCH /databases/<db>/docs?id=... with a JavaScript patch.
-- A fraction BENCH_BADGE_PCT of the requests push a badge onto a random user (users/1..BENCH_USERS);
-- the others push a comment onto a random post (posts/1..BENCH_POSTS) and bump its CommentCount.
-- done() prints "WRK_JSON {...}" (parsed by bench/lib/measure.py wrk) plus the PATCH status counts.
local db     = os.getenv("BENCH_DB") or "s2"
local users  = tonumber(os.getenv("BENCH_USERS") or "200000")
local posts  = tonumber(os.getenv("BENCH_POSTS") or "1000000")
local badge_pct = tonumber(os.getenv("BENCH_BADGE_PCT") or "25")
local seed   = tonumber(os.getenv("BENCH_SEED") or "1")

local threads = {}
local next_tid = 0
function setup(thread)
   thread:set("tid", next_tid)
   next_tid = next_tid + 1
   table.insert(threads, thread)
end

local headers = { ["Content-Type"] = "application/json" }
local comment_script = "this.Comments = this.Comments || []; this.Comments.push(args.c); this.CommentCount = (this.CommentCount||0)+1;"
local badge_script = "this.Badges.push(args.b);"
local n = 0
function init(args)
   math.randomseed(seed * 7919 + (tid or 0))
end

function request()
   n = n + 1
   if math.random(1, 100) <= badge_pct then
      local id = math.random(1, users)
      local body = '{"Patch":{"Script":"' .. badge_script .. '","Values":{"b":{"Name":"Nice Answer","Class":"Bronze","Date":"2024-05-01T12:00:00.000Z","Seq":' .. n .. '}}}}'
      return wrk.format("PATCH", "/databases/" .. db .. "/docs?id=users/" .. id, headers, body)
   else
      local id = math.random(1, posts)
      local body = '{"Patch":{"Script":"' .. comment_script .. '","Values":{"c":{"UserId":"users/' .. math.random(1, users) ..
         '","Score":0,"CreationDate":"2024-05-01T12:00:00.000Z","Text":"Have you tried calling flush before closing the stream? The buffer is only written when it is full or flushed explicitly."}}}}'
      return wrk.format("PATCH", "/databases/" .. db .. "/docs?id=posts/" .. id, headers, body)
   end
end

function done(summary, latency, requests)
   local e = summary.errors
   local out = string.format(
      '{"requests":%d,"duration_us":%d,"bytes":%d,' ..
      '"err_connect":%d,"err_read":%d,"err_write":%d,"err_status":%d,"err_timeout":%d,' ..
      '"lat_mean_us":%.1f,"lat_max_us":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,"p999_us":%d}',
      summary.requests, summary.duration, summary.bytes,
      e.connect, e.read, e.write, e.status, e.timeout,
      latency.mean, latency.max,
      latency:percentile(50), latency:percentile(90), latency:percentile(99), latency:percentile(99.9))
   io.write("WRK_JSON " .. out .. "\n")
end
