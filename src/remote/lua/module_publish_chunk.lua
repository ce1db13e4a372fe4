-- SPDX-License-Identifier: BSD-3-Clause
-- module_publish_chunk.lua: loads one chunk of a filter's image into the
-- upload and renews the upload's lease in the same step (docs/DESIGN.md,
-- Module backend scripts).
-- The module backend (docs/REMOTE.md): the filter is the key `name`, a
-- bloomgate.so or RedisBloom filter; the scripts use BF.* commands.
--
-- KEYS[1]   {name}:publish:<16 hex digits>, the upload
-- ARGV[1]   the lease, ms
-- ARGV[2]   the chunk's iterator (BF.LOADCHUNK)
-- ARGV[3]   the chunk's bytes
--
-- Reply: the integer 1.
-- Errors: BF.LOADCHUNK's (ERR received bad data: the image is refused).

redis.call('BF.LOADCHUNK', KEYS[1], ARGV[2], ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
