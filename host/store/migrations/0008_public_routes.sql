-- Public routes: `/api/apps/{app}/public/t/{tenant}/{path}` names the tenant by its id and a
-- fingerprint of its organization (tenant ids are unique within an organization only), so the
-- host looks up the active installs of one app by tenant id across organizations. This index
-- keeps that one read whatever the number of installs of the app.
CREATE INDEX installs_tenant_app ON installs (tenant_id, app_slug);
