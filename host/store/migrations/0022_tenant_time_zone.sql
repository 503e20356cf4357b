-- The tenant's time zone (an IANA name), set by its admin: heartbeats whose active hours or
-- schedule say `user` read their times in it. NULL reads as UTC.
ALTER TABLE tenant_settings ADD COLUMN time_zone TEXT;
