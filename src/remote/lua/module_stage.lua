-- SPDX-License-Identifier: BSD-3-Clause
-- module_stage.lua: reserves a staged module filter under a hidden key with
-- a time to live, in one step, so no staging key is ever left without one
-- (docs/DESIGN.md, Module backend scripts). Sent with EVAL.
-- The module backend (docs/REMOTE.md): the filter is the key `name`, a
-- bloomgate.so or RedisBloom filter; the scripts use BF.* commands.
--
-- KEYS[1]   {name}:staging:<16 hex digits>
-- ARGV[1]   the time to live, ms
-- ARGV[2..] BF.RESERVE's arguments after the key: error_rate capacity
--           [EXPANSION n | NONSCALING]
--
-- Reply: the integer 1.
-- Errors: BF.RESERVE's (ERR item exists, ...).

redis.call('BF.RESERVE', KEYS[1], unpack(ARGV, 2))
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
