-- wrk script for single-document requests against Corvid / RavenDB.
--
-- Environment:
--   BENCH_MODE       put | get | update                  (default put; update = PUT over an existing
--                                                        random id <prefix><0..count-1>)
--   BENCH_DB         database name                       (default bench)
--   BENCH_BODY_FILE  put: file holding the document body  (required for put)
--   BENCH_ID_PREFIX  put: ids are <prefix><thread>-<n>; get: ids are <prefix><random 0..count-1>
--   BENCH_ID_COUNT   get: number of existing ids          (default 100000)
--   BENCH_SEED       get: random seed base                (default 1)
--
-- done() prints one line "WRK_JSON {...}" with totals, errors and latency percentiles
-- (microseconds), which bench/lib/measure.py parses.

local mode   = os.getenv("BENCH_MODE") or "put"
local db     = os.getenv("BENCH_DB") or "bench"
local prefix = os.getenv("BENCH_ID_PREFIX") or (mode == "put" and "bench/w-" or "bench/")
local count  = tonumber(os.getenv("BENCH_ID_COUNT") or "100000")
local seed   = tonumber(os.getenv("BENCH_SEED") or "1")

local threads = {}
local next_tid = 0

function setup(thread)
   thread:set("tid", next_tid)
   next_tid = next_tid + 1
   table.insert(threads, thread)
end

local body, headers, base, n
-- Random GET requests prebuilt per thread (uniform over the ids, as pgbench's `random`).
local gets, gets_prebuilt = {}, 65536

function init(args)
   n = 0
   base = "/databases/" .. db .. "/docs?id="
   if mode == "put" or mode == "update" then
      local path = os.getenv("BENCH_BODY_FILE")
      local f = assert(io.open(path, "rb"), "cannot open BENCH_BODY_FILE " .. tostring(path))
      body = f:read("*a")
      f:close()
      headers = { ["Content-Type"] = "application/json" }
      math.randomseed(seed * 7919 + (tid or 0))
   else
      headers = {}
      math.randomseed(seed * 7919 + (tid or 0))
      -- GET requests are built once here and cycled through: formatting each request in Lua cost wrk more
      -- CPU than pgbench spends per query, and the two share the server's cores.
      for i = 1, gets_prebuilt do
         gets[i] = wrk.format("GET", base .. prefix .. math.random(0, count - 1), headers)
      end
   end
end

function request()
   n = n + 1
   if mode == "put" then
      return wrk.format("PUT", base .. prefix .. tid .. "-" .. n, headers, body)
   elseif mode == "update" then
      return wrk.format("PUT", base .. prefix .. math.random(0, count - 1), headers, body)
   else
      return gets[(n - 1) % gets_prebuilt + 1]
   end
end

-- No response() callback on purpose: defining one makes wrk hand every reply to Lua,
-- which costs load-generator CPU on this 2-core machine. Non-2xx replies are counted in
-- err_status; run-s1.sh probes each step once with curl and logs the reply instead.

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
