-- A heartbeat whose schedule never fires kept `next_run_at` = 2^63 - 1 (ms). The store now
-- hands out every time as a timestamp, which holds years -9999 to 9999: such a row keeps the
-- last whole millisecond of year 9999 instead (the platform's `heartbeats::NEVER`), which
-- sorts after every real time as the old value did.
UPDATE heartbeats SET next_run_at = 253402207200999 WHERE next_run_at > 253402207200999;
