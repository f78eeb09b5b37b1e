-- wrk script: send one request per line of a file of pre-generated bodies (random line per request).
-- Used by the search benchmarks (S4, S5) so that Corvid and OpenSearch get exactly the same parameters.
--
-- Environment:
--   BENCH_PATH         request path, e.g. /databases/bench/queries or /versions/_search
--   BENCH_BODIES_FILE  one request body a line
--   BENCH_METHOD       default POST
--   BENCH_SEED         random seed base (default 1)
--
-- done() prints "WRK_JSON {...}" like wrk_docs.lua (bench/lib/measure.py parses it).

local path   = os.getenv("BENCH_PATH") or "/"
local method = os.getenv("BENCH_METHOD") or "POST"
local seed   = tonumber(os.getenv("BENCH_SEED") or "1")

local next_tid = 0
function setup(thread)
   thread:set("tid", next_tid)
   next_tid = next_tid + 1
end

local reqs = {}

function init(args)
   local headers = { ["Content-Type"] = "application/json" }
   for line in io.lines(os.getenv("BENCH_BODIES_FILE")) do
      if line ~= "" then table.insert(reqs, wrk.format(method, path, headers, line)) end
   end
   if #reqs == 0 then error("no bodies in " .. tostring(os.getenv("BENCH_BODIES_FILE"))) end
   math.randomseed(seed * 7919 + (tid or 0))
end

function request()
   return reqs[math.random(#reqs)]
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
