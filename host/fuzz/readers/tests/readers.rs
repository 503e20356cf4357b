//! Fuzz targets for the readers of untrusted input that need none of the host
//! (docs/security.md): the manifest reader, cron expressions, document templates and archives.
//! Each is a bolero check: under `cargo test` it replays the inputs kept in
//! `tests/__fuzz__/<target>/` (the crashes found so far, and the corpus) and then tries random
//! inputs for a second; `tools/fuzz` runs each under libFuzzer for as long as it is asked. A
//! reader may refuse its input with an error; it may not panic, loop, or hold more memory than
//! its limits allow, and what it accepts must keep the reader's own promises (checked below).
//! The targets that go through the host (the PDF extractor's sandbox, the HTTP API) are in
//! `atrium-fuzz`.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use atrium_archive::{self as archive, Limits};

/// The manifest reader, on YAML and on JSON: a manifest it calls valid also parses, and an
/// error always names where.
#[test]
fn manifest_reader() {
    bolero::check!().for_each(|bytes: &[u8]| {
        let Ok(text) = std::str::from_utf8(bytes) else {
            return;
        };
        for format in [atrium_manifest::Format::Yaml, atrium_manifest::Format::Json] {
            let validation = atrium_manifest::validate_as(text, format);
            if validation.is_valid() && format == atrium_manifest::Format::Yaml {
                atrium_manifest::parse(text).expect("a valid manifest parses");
            }
            for problem in validation.errors() {
                assert!(!problem.message.is_empty(), "{problem:?}");
            }
        }
    });
}

/// Cron expressions: what parses has a next time after any moment, later than it.
#[test]
fn cron_expressions() {
    bolero::check!().for_each(|bytes: &[u8]| {
        let Ok(text) = std::str::from_utf8(bytes) else {
            return;
        };
        let Ok(expr) = atrium_manifest::cron::CronExpr::parse(text) else {
            return;
        };
        let at = jiff::civil::date(2026, 2, 28).at(23, 59, 0, 0);
        if let Some(next) = expr.next_after(at) {
            assert!(next > at, "{text}: {next} is not after {at}");
            assert!(expr.matches(next), "{text}: {next} does not match");
        }
    });
}

/// Document templates (section 2.14).
#[test]
fn document_templates() {
    bolero::check!().for_each(|bytes: &[u8]| {
        if let Ok(text) = std::str::from_utf8(bytes) {
            let _ = atrium_manifest::templates::validate_template(text);
        }
    });
}

/// Archives (tar, tar.gz, zip): bundles, docs and templates uploads. What is accepted keeps
/// to the limits and has normalized relative paths.
#[test]
fn archives() {
    let limits = Limits {
        max_files: 20,
        max_file_bytes: 64 * 1024,
        max_total_bytes: 256 * 1024,
    };
    bolero::check!().for_each(|bytes: &[u8]| {
        let Ok(files) = archive::read(bytes, &limits) else {
            return;
        };
        assert!(files.len() <= limits.max_files);
        let mut total = 0;
        for file in &files {
            let size = file.bytes.len() as u64;
            assert!(size <= limits.max_file_bytes, "{}", file.path);
            total += size;
            assert!(
                !file.path.is_empty()
                    && !file.path.starts_with('/')
                    && file
                        .path
                        .split('/')
                        .all(|c| !c.is_empty() && c != "." && c != ".."),
                "{}",
                file.path
            );
        }
        assert!(total <= limits.max_total_bytes);
    });
}
