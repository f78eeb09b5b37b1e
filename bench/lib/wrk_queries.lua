-- wrk script for Corvid / RavenDB queries: POST /databases/<db>/queries with random parameters.
--
-- Environment:
--   BENCH_QUERY        eq | range | sorted | name | page      (the shapes of bench/lib/users.py SHAPES)
--   BENCH_DB           database name                          (default bench)
--   BENCH_VALUES_FILE  eq/sorted: file with the City values, one a line
--   BENCH_COUNT        page: documents in the collection; offsets are uniform in 0..count/2
--   BENCH_SEED         random seed base                       (default 1)
--
-- done() prints "WRK_JSON {...}" like wrk_docs.lua (bench/lib/measure.py parses it).

local shape  = os.getenv("BENCH_QUERY") or "eq"
local db     = os.getenv("BENCH_DB") or "bench"
local count  = tonumber(os.getenv("BENCH_COUNT") or "100000")
local seed   = tonumber(os.getenv("BENCH_SEED") or "1")

local threads = {}
local next_tid = 0

function setup(thread)
   thread:set("tid", next_tid)
   next_tid = next_tid + 1
   table.insert(threads, thread)
end

local values = {}
local path, headers

function init(args)
   path = "/databases/" .. db .. "/queries"
   headers = { ["Content-Type"] = "application/json" }
   local vf = os.getenv("BENCH_VALUES_FILE")
   if vf then
      for line in io.lines(vf) do
         if line ~= "" then table.insert(values, line) end
      end
   end
   math.randomseed(seed * 7919 + (tid or 0))
end

local function body(q, params)
   return '{"Query":"' .. q .. '","QueryParameters":' .. params .. ',"WaitForNonStaleResults":false}'
end

function request()
   local b
   if shape == "eq" then
      b = body("from Users where City = $p0", '{"p0":"' .. values[math.random(#values)] .. '"}')
   elseif shape == "range" then
      local lo = math.random(0, 95)
      b = body("from Users where Age between $p0 and $p1 limit 30",
               '{"p0":' .. lo .. ',"p1":' .. (lo + math.random(0, 4)) .. '}')
   elseif shape == "sorted" then
      b = body("from Users where City = $p0 order by Score as double desc limit 30",
               '{"p0":"' .. values[math.random(#values)] .. '"}')
   elseif shape == "name" then
      b = body("from Users order by Name limit 30", "{}")
   elseif shape == "page" then
      b = body("from Users order by Age as long limit 30 offset $p0",
               '{"p0":' .. math.random(0, math.floor(count / 2)) .. '}')
   else
      error("unknown BENCH_QUERY " .. shape)
   end
   return wrk.format("POST", path, headers, b)
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
