-- SPDX-License-Identifier: BSD-3-Clause
-- wrk script for the products service: GET /products/{id} with a mix of
-- ids that exist (1..N, as seeded) and ids that do not (drawn from
-- N+1 .. N+10^12, so they practically never repeat).
--
--   wrk -t2 -c32 -d10s -s load.lua http://127.0.0.1:8080 -- [N [EXISTING_PCT [SEED]]]
--
-- or through the environment: LOAD_PRODUCTS (N, default 1000000),
-- LOAD_EXISTING_PCT (default 3), LOAD_SEED (default 1). Arguments after
-- "--" win over the environment.
--
-- done() prints one machine-readable line that examples/products/demo.sh
-- reads (latencies in microseconds):
--   LOAD requests=R duration_us=D rps=X p50_us=A p95_us=B p99_us=C
--        status_200=.. status_404=.. status_other=.. errors=..
-- Status counts are of responses received; "errors" are wrk's socket
-- errors (connect, read, write, timeout).

local products = tonumber(os.getenv("LOAD_PRODUCTS") or "1000000")
local existing_pct = tonumber(os.getenv("LOAD_EXISTING_PCT") or "3")
local seed = tonumber(os.getenv("LOAD_SEED") or "1")
local ABSENT_RANGE = 1e12

local threads = {}
local counter = 0

function setup(thread)
   counter = counter + 1
   thread:set("thread_no", counter)
   table.insert(threads, thread)
end

function init(args)
   if args[1] then products = tonumber(args[1]) end
   if args[2] then existing_pct = tonumber(args[2]) end
   if args[3] then seed = tonumber(args[3]) end
   if not products or products < 1 or not existing_pct or existing_pct < 0
      or existing_pct > 100 then
      error("load.lua: want N >= 1 and 0 <= EXISTING_PCT <= 100")
   end
   math.randomseed(seed * 1000003 + thread_no)
   status_200, status_404, status_other = 0, 0, 0
   existing_frac = existing_pct / 100
end

function request()
   local id
   if math.random() < existing_frac then
      id = math.random(1, products)
   else
      id = products + 1 + math.floor(math.random() * ABSENT_RANGE)
   end
   return wrk.format("GET", string.format("/products/%.0f", id))
end

function response(status, headers, body)
   if status == 200 then
      status_200 = status_200 + 1
   elseif status == 404 then
      status_404 = status_404 + 1
   else
      status_other = status_other + 1
   end
end

function done(summary, latency, requests)
   local s200, s404, sother = 0, 0, 0
   for _, t in ipairs(threads) do
      s200 = s200 + t:get("status_200")
      s404 = s404 + t:get("status_404")
      sother = sother + t:get("status_other")
   end
   local e = summary.errors
   local errors = e.connect + e.read + e.write + e.timeout
   io.write(string.format(
      "LOAD requests=%d duration_us=%d rps=%.1f p50_us=%d p95_us=%d p99_us=%d " ..
      "status_200=%d status_404=%d status_other=%d errors=%d\n",
      summary.requests, summary.duration, summary.requests / (summary.duration / 1e6),
      latency:percentile(50), latency:percentile(95), latency:percentile(99),
      s200, s404, sother, errors))
end
