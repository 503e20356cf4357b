-- The digest of the build inputs a version's component was made from (docs/cli.md,
-- "Reproducible builds"): the component's own `atrium-build-inputs` section, else the digest
-- the registration sent (a Rust project's files). Preflight compares a project's with it, so
-- that changed code under a registered version is told before it is built. NULL: not known
-- (an image app, a component registered without it, a version registered before this).
ALTER TABLE app_versions ADD COLUMN build_inputs TEXT;
