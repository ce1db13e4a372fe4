-- SPDX-License-Identifier: BSD-3-Clause
-- rebuild_abort.lua: cancels a pending rebuild: deletes its bits and the
-- meta hash's next_* fields (docs/PROTOCOL.md, Rebuild).
--
-- KEYS[1]   {name}:meta
-- ARGV[1]   the rebuild's generation, or "" for whichever is pending
--
-- Reply: the integer 1 if it cancelled one, 0 if no such rebuild is
-- pending (or no filter).
--
-- Errors: none of its own.

local n = redis.call('HGET', KEYS[1], 'next')
if not n or (ARGV[1] ~= '' and n ~= ARGV[1]) then return 0 end
redis.call('DEL', string.sub(KEYS[1], 1, -5) .. 'bits:' .. n)
redis.call('HDEL', KEYS[1], 'next', 'next_bits', 'next_hashes', 'next_seed', 'next_capacity',
  'next_error_rate', 'next_items', 'next_lease', 'next_lease_ms')
return 1
