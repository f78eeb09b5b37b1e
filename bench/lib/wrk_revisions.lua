-- wrk script for the revisions benchmark: PUT over random ids <prefix><0..count-1> with a body that changes
-- on every request (a revision is kept only when the content changed).
-- Environment: BENCH_DB, BENCH_ID_PREFIX (default rev/), BENCH_ID_COUNT (default 10000), BENCH_DOC_BYTES
-- (default 500), BENCH_SEED. done() prints "WRK_JSON {...}" like wrk_docs.lua.

local db     = os.getenv("BENCH_DB") or "bench"
local prefix = os.getenv("BENCH_ID_PREFIX") or "rev/"
local count  = tonumber(os.getenv("BENCH_ID_COUNT") or "10000")
local size   = tonumber(os.getenv("BENCH_DOC_BYTES") or "500")
local seed   = tonumber(os.getenv("BENCH_SEED") or "1")

local threads = {}
local next_tid = 0

function setup(thread)
   thread:set("tid", next_tid)
   next_tid = next_tid + 1
   table.insert(threads, thread)
end

local headers, base, n, padding

function init(args)
   n = 0
   base = "/databases/" .. db .. "/docs?id="
   headers = { ["Content-Type"] = "application/json" }
   padding = string.rep("x", size)
   math.randomseed(seed * 7919 + (tid or 0))
end

function request()
   n = n + 1
   local body = '{"writer":' .. tid .. ',"n":' .. n .. ',"payload":"' .. padding .. '","@metadata":{"@collection":"Revs"}}'
   return wrk.format("PUT", base .. prefix .. math.random(0, count - 1), headers, body)
end

function done(summary, latency, requests)
   local errors = summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.status + summary.errors.timeout
   io.write(string.format('WRK_JSON {"requests":%d,"duration_us":%d,"errors":%d,"p50_us":%d,"p99_us":%d}\n',
      summary.requests, summary.duration, errors, latency:percentile(50), latency:percentile(99)))
end
