use atrium_runtime::{LoadError, Runtime};

use crate::common::*;

#[test]
fn a_component_is_compiled_once_and_then_loaded_from_the_disk_cache() {
    let dir = tempfile::tempdir().unwrap();
    let config = || atrium_runtime::RuntimeConfig {
        cache_dir: Some(dir.path().to_owned()),
        ..config()
    };
    let m = manifest(atrium_test_artifacts::MINIMAL_MANIFEST);
    let bytes = std::fs::read(atrium_test_artifacts::MINIMAL).unwrap();

    let first = Runtime::new(config())
        .unwrap()
        .load(&bytes, m.clone())
        .unwrap();
    assert!(!first.loaded_from_cache());
    // The SDK's components export `wizer-initialize`: what is cached is the snapshot.
    assert!(first.preinitialized());
    // A restart: a new engine with the same settings finds the artifact.
    let second = Runtime::new(config())
        .unwrap()
        .load(&bytes, m.clone())
        .unwrap();
    assert!(second.loaded_from_cache() && second.preinitialized());

    // A damaged artifact is compiled again and replaced.
    let cached: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(cached.len(), 1, "{cached:?}");
    assert!(
        cached[0]
            .file_name()
            .unwrap()
            .to_string_lossy()
            .ends_with("-init.cwasm")
    );
    std::fs::write(&cached[0], b"garbage").unwrap();
    let third = Runtime::new(config())
        .unwrap()
        .load(&bytes, m.clone())
        .unwrap();
    assert!(!third.loaded_from_cache());
    assert!(
        Runtime::new(config())
            .unwrap()
            .load(&bytes, m)
            .unwrap()
            .loaded_from_cache()
    );
}

#[test]
fn bytes_that_are_not_a_component_are_refused() {
    let m = manifest(atrium_test_artifacts::MINIMAL_MANIFEST);
    let err = runtime().load(b"hello", m.clone()).err().unwrap();
    assert!(matches!(err, LoadError::NotAComponent(_)), "{err}");
    let core = wat::parse_str("(module)").unwrap();
    let err = runtime().load(&core, m).err().unwrap();
    assert!(err.to_string().contains("core WebAssembly module"), "{err}");
}

#[test]
fn a_component_for_another_world_is_refused_with_the_reason() {
    let m = manifest(atrium_test_artifacts::MINIMAL_MANIFEST);
    let foreign = wat::parse_str(
        r#"(component (import "evil:thing/sockets" (instance (export "connect" (func)))))"#,
    )
    .unwrap();
    let err = runtime().load(&foreign, m.clone()).err().unwrap();
    assert!(matches!(err, LoadError::WrongWorld(_)), "{err}");
    assert!(err.to_string().contains("evil:thing/sockets"), "{err}");

    let empty = wat::parse_str("(component)").unwrap();
    let err = runtime().load(&empty, m).err().unwrap();
    assert!(
        err.to_string()
            .contains("exports neither atrium:app/handlers"),
        "{err}"
    );
}

#[test]
fn a_missing_file_names_the_path() {
    let m = manifest(atrium_test_artifacts::MINIMAL_MANIFEST);
    let err = runtime()
        .load_file(std::path::Path::new("/no/such/app.wasm"), m)
        .err()
        .unwrap();
    assert!(matches!(err, LoadError::Io { .. }));
    assert!(err.to_string().contains("/no/such/app.wasm"));
}

#[test]
fn a_memory_cap_above_the_host_maximum_is_refused() {
    let mut m = manifest(atrium_test_artifacts::MINIMAL_MANIFEST);
    m.runtime.resources.memory_mb = 8192;
    let bytes = std::fs::read(atrium_test_artifacts::MINIMAL).unwrap();
    let err = runtime().load(&bytes, m).err().unwrap();
    assert!(matches!(err, LoadError::Manifest(_)), "{err}");
}

#[tokio::test]
async fn optional_exports_are_detected() {
    let plain = load_on(
        runtime(),
        atrium_test_artifacts::PLAIN_HTTP,
        atrium_test_artifacts::PLAIN_HTTP_MANIFEST,
        |_| {},
    );
    assert!(plain.has_http() && !plain.has_handlers());
    let only = load_on(
        runtime(),
        atrium_test_artifacts::HANDLERS_ONLY,
        atrium_test_artifacts::HANDLERS_ONLY_MANIFEST,
        |_| {},
    );
    assert!(only.has_handlers() && !only.has_http());
    // Both are built with wit-bindgen alone, without the SDK's `wizer-initialize`.
    assert!(!plain.preinitialized() && !only.preinitialized());
    let p = platform();
    assert_eq!(plain.health(&inv(&p)).await.unwrap(), None);
    assert_eq!(
        only.health(&inv(&p)).await.unwrap().unwrap().tools,
        vec!["hello".to_owned()]
    );
}

/// The interfaces a component imports (its own import section, not those of the modules and
/// components nested in it).
fn component_imports(path: &str) -> Vec<String> {
    let bytes = std::fs::read(path).unwrap();
    let mut depth = 0_u32;
    let mut names = Vec::new();
    for payload in wasmparser::Parser::new(0).parse_all(&bytes) {
        match payload.unwrap() {
            wasmparser::Payload::Version { .. } => depth += 1,
            wasmparser::Payload::End(_) => depth -= 1,
            wasmparser::Payload::ComponentImportSection(reader) if depth == 1 => {
                for import in reader {
                    names.push(import.unwrap().name.name.to_owned());
                }
            }
            _ => {}
        }
    }
    names
}

#[tokio::test]
async fn an_sdk_app_exported_without_http_imports_no_wasi_http() {
    let echo = load_on(
        runtime(),
        atrium_test_artifacts::ECHO,
        atrium_test_artifacts::ECHO_MANIFEST,
        |_| {},
    );
    assert!(echo.has_handlers() && !echo.has_http() && echo.preinitialized());
    let p = platform();
    assert_eq!(
        echo.call_tool(&inv(&p), "echo", r#"{"a":[1,2]}"#)
            .await
            .unwrap(),
        r#"{"a":[1,2]}"#
    );
    let lean = component_imports(atrium_test_artifacts::ECHO);
    assert!(
        lean.iter().all(|i| !i.starts_with("wasi:http/")),
        "{lean:#?}"
    );
    assert!(
        lean.iter().any(|i| i.starts_with("atrium:app/")),
        "{lean:#?}"
    );
    // The same SDK exported with HTTP (probe declares routes) imports wasi:http.
    let full = component_imports(atrium_test_artifacts::PROBE);
    assert!(
        full.iter().any(|i| i.starts_with("wasi:http/types")),
        "{full:#?}"
    );
    // An app that declares no route and says so is lean too.
    for lean_example in [
        atrium_test_artifacts::MINIMAL,
        atrium_test_artifacts::ROOM_BOT,
    ] {
        let imports = component_imports(lean_example);
        assert!(
            imports.iter().all(|i| !i.starts_with("wasi:http/")),
            "{lean_example}: {imports:#?}"
        );
    }
}

#[test]
fn a_component_that_does_not_validate_is_a_compile_error() {
    let m = manifest(atrium_test_artifacts::MINIMAL_MANIFEST);
    // A core function that promises an i32 and returns nothing.
    let broken = wat::parse_str("(component (core module (func (result i32))))").unwrap();
    let err = runtime().load(&broken, m).err().unwrap();
    assert!(matches!(err, LoadError::Compile(_)), "{err}");
    assert!(
        err.to_string()
            .starts_with("the component does not compile"),
        "{err}"
    );
}

#[test]
fn an_unusable_cache_directory_stops_the_runtime_with_the_path() {
    let file = tempfile::NamedTempFile::new().unwrap();
    let config = atrium_runtime::RuntimeConfig {
        cache_dir: Some(file.path().join("cache")),
        ..config()
    };
    let err = Runtime::new(config).err().unwrap();
    assert!(matches!(err, LoadError::Engine(_)), "{err}");
    assert!(
        err.to_string().contains(&file.path().display().to_string()),
        "{err}"
    );
}
