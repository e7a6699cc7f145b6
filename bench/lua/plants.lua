-- wrk's request script for `pnpm bench` (bench/src/wrk-runner.ts starts wrk with it):
--   wrk -t1 -c<n> -d<s>s --timeout 10s -s bench/lua/plants.lua <url> -- <kind> <token> <seed> ...
-- It builds the requests bench/src/scenarios.ts builds for autocannon, and in done() prints one
-- line `plantstore-wrk-result {json}` that the runner reads back.
--   insert <token> <seed> sequential|random <idBase>   POST /plants, a new id per request
--   read <token> <seed> <maxId>                         GET /plants/{random id in [1, maxId]}
--   list <token> <seed> <limit> <maxAfter>              GET /plants?limit=<limit>&after=<random in [0, maxAfter]>
--   update <token> <seed> <etagFile>                    PATCH /plants/{id} with If-Match, over the
--                                                       plants in etagFile (lines "<id> <etag>")
--   ... <stopAfter>: an optional last argument: stop once that many responses came back (--requests)
-- Each request is written by hand rather than with wrk.format, which rebuilds every header per
-- call: the point of wrk here is a load generator that costs little per request.

local kind, prefix, stopAfter
local nextRequest
local responses = 0
-- Counts read by done() through the thread (done runs in wrk's main Lua state, not this one).
ok200, non2xx, mismatches = 0, 0, 0
-- Set for update only: whether a 200 named its plant and carried an ETag (it then frees the plant).
local checkAnswer

-- The plant name and tag scenarios.ts sends (PLANT_NAME, PLANT_TAG).
local NAME, TAG = "Fern", "fern"

local function fmtId(n)
  -- Ids reach 2^53; %.0f prints every integer below that exactly, where %d may not.
  return string.format("%.0f", n)
end

local function withBody(method, path, contentType, body)
  return method .. " " .. path .. " HTTP/1.1\r\n" .. prefix .. "Content-Type: " .. contentType ..
    "\r\nContent-Length: " .. #body .. "\r\n\r\n" .. body
end

local function bodiless(path)
  return "GET " .. path .. " HTTP/1.1\r\n" .. prefix .. "\r\n"
end

function init(args)
  kind = args[1]
  local token = args[2]
  math.randomseed(tonumber(args[3]))
  -- The same headers autocannon sends: the bearer token, and a content type where there is a body.
  prefix = "Host: " .. wrk.headers["Host"] .. "\r\nAuthorization: Bearer " .. token .. "\r\n"
  if kind == "insert" then
    local ids, nextId = args[4], tonumber(args[5])
    stopAfter = tonumber(args[6])
    local id
    if ids == "random" then
      -- Uniform over [1, 2^53), as scenarios.ts draws them; from two draws, as one of LuaJIT's
      -- has 52 random bits and would give even ids only.
      id = function()
        local n = math.floor(math.random() * 2 ^ 26) * 2 ^ 27 + math.floor(math.random() * 2 ^ 27)
        return n == 0 and 1 or n
      end
    else
      id = function()
        local n = nextId
        nextId = nextId + 1
        return n
      end
    end
    nextRequest = function()
      return withBody("POST", "/plants", "application/json",
        '{"id":' .. fmtId(id()) .. ',"name":"' .. NAME .. '","tag":"' .. TAG .. '"}')
    end
  elseif kind == "read" then
    local maxId = tonumber(args[4])
    stopAfter = tonumber(args[5])
    nextRequest = function() return bodiless("/plants/" .. math.random(maxId)) end
  elseif kind == "list" then
    local limit, maxAfter = args[4], tonumber(args[5])
    stopAfter = tonumber(args[6])
    nextRequest = function()
      return bodiless("/plants?limit=" .. limit .. "&after=" .. math.random(0, maxAfter))
    end
  elseif kind == "update" then
    stopAfter = tonumber(args[5])
    -- Free plants in a queue, as scenarios.ts keeps them: a plant is out from its request until its
    -- answer, which names it (the body starts with its id) and carries its new ETag. A plant whose
    -- answer is not a 200 stays out; that status fails the run anyway.
    local free, first, last = {}, 1, 0
    for line in io.lines(args[4]) do
      local id, etag = line:match("^(%d+) (.+)$")
      last = last + 1
      free[last] = { id = id, etag = etag }
    end
    local renames = 0
    local function patch(id, etag, name)
      local body = '{"name":"' .. name .. '"}'
      return "PATCH /plants/" .. id .. " HTTP/1.1\r\n" .. prefix .. "If-Match: " .. etag ..
        "\r\nContent-Type: application/merge-patch+json\r\nContent-Length: " .. #body .. "\r\n\r\n" .. body
    end
    nextRequest = function()
      -- Every plant in flight (connections dropped mid-request): a PATCH that must answer 412, so
      -- the run fails and says so rather than stalling.
      if first > last then return patch("1", '"stale"', NAME) end
      local plant = free[first]
      free[first] = nil
      first = first + 1
      renames = renames + 1
      return patch(plant.id, plant.etag, NAME .. " " .. renames)
    end
    checkAnswer = function(headers, body)
      local id = body:match('^{"id":(%d+),')
      local etag
      for name, value in pairs(headers) do
        if name:lower() == "etag" then etag = value end
      end
      -- A strong entity tag as the contract writes it: 27 base64url characters in quotes.
      if id == nil or etag == nil or not etag:match('^"[%w_-]+"$') or #etag ~= 29 then
        mismatches = mismatches + 1
        return
      end
      last = last + 1
      free[last] = { id = id, etag = etag }
    end
  else
    error("plants.lua: unknown request kind " .. tostring(kind))
  end
end

function request()
  return nextRequest()
end

-- Defining response() makes wrk hand every answer's headers and body to Lua; on this machine that
-- cost nothing measurable (~20 µs of wrk's CPU per request either way, mostly the kernel's
-- loopback TCP), and it buys exact status counts and --requests.
function response(status, headers, body)
  if status == 200 then
    ok200 = ok200 + 1
    if checkAnswer ~= nil then checkAnswer(headers, body) end
  elseif status < 200 or status > 299 then
    non2xx = non2xx + 1
  end
  responses = responses + 1
  if stopAfter ~= nil and responses == stopAfter then
    -- Stopping the thread does not end wrk, whose main thread sleeps for -d: the runner sends it
    -- SIGINT when it reads this line, and wrk then reports as at the end of its duration.
    wrk.thread:stop()
    io.write("plantstore-wrk-enough\n")
    io.flush()
  end
end

local threads = {}
function setup(thread)
  table.insert(threads, thread)
end

-- wrk's own CPU so far (user + system clock ticks of every thread, from /proc/self/stat), read
-- before the percentiles below, whose walks over the histogram are reporting, not load.
local function cpuTicks()
  local file = io.open("/proc/self/stat")
  if file == nil then return -1 end
  local stat = file:read("*a")
  file:close()
  -- Fields after the command name, which may hold spaces: utime and stime are the 12th and 13th.
  local fields = {}
  for field in stat:sub(stat:find(")", 1, true) + 2):gmatch("%S+") do fields[#fields + 1] = field end
  return tonumber(fields[12]) + tonumber(fields[13])
end

function done(summary, latency, requests)
  local ticks = cpuTicks()
  local status200, statusNon2xx, bad = 0, 0, 0
  for _, thread in ipairs(threads) do
    status200 = status200 + thread:get("ok200")
    statusNon2xx = statusNon2xx + thread:get("non2xx")
    bad = bad + thread:get("mismatches")
  end
  -- Every 0.1 percentile, in µs: the runner rebuilds an approximate histogram from these.
  local points = {}
  for i = 1, 1000 do points[i] = latency:percentile(i / 10) end
  local e = summary.errors
  io.write(string.format(
    'plantstore-wrk-result {"durationUs":%.0f,"requests":%.0f,"status200":%.0f,"non2xx":%.0f,"mismatches":%.0f,' ..
    '"statusErrors":%.0f,"connectErrors":%.0f,"readErrors":%.0f,"writeErrors":%.0f,"timeouts":%.0f,' ..
    '"cpuTicks":%.0f,"minUs":%.0f,"maxUs":%.0f,"meanUs":%.3f,"percentilesUs":[%s]}\n',
    summary.duration, summary.requests, status200, statusNon2xx, bad, e.status, e.connect, e.read, e.write, e.timeout,
    ticks, latency.min, latency.max, latency.mean, table.concat(points, ",")))
end
