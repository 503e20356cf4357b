-- The app a metered call was made for: a platform tool (`chat.complete`) called by an
-- installed app is billed to the install's tenant and names the app. NULL for calls made
-- straight to /v1.
ALTER TABLE usage_records ADD COLUMN app_slug TEXT;
CREATE INDEX usage_records_app ON usage_records (org_id, tenant_id, app_slug);
