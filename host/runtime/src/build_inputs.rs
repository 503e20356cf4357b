//! The build inputs of a component: the digest of what went into it, carried in a custom
//! section.
//!
//! The Python and TypeScript toolchains (componentize-py, componentize-js) snapshot an
//! interpreter after running the app's top level, and that snapshot holds the interpreter's
//! random hash seeds, clock readings and the build machine's file times: the same sources give
//! other bytes on every build. `atrium build` therefore records the digest of the build's
//! inputs (the project's files, the SDK and the toolchain it ran, see docs/cli.md) in a custom
//! section named [`SECTION`], and the registry identifies such a component by that digest
//! instead of its bytes: a rebuild of the same sources registers as "already registered", and
//! the bytes stored first stay the version's bytes (a version never changes).
//!
//! ```
//! use atrium_runtime::build_inputs;
//!
//! // The smallest component: the preamble alone.
//! let component = b"\0asm\x0d\x00\x01\x00".to_vec();
//! let digest = format!("sha256:{}", "ab".repeat(32));
//! let tagged = build_inputs::embed(&component, &digest).unwrap();
//! assert_eq!(build_inputs::read(&tagged).as_deref(), Some(digest.as_str()));
//! assert_eq!(build_inputs::read(&component), None);
//! ```

/// The name of the custom section.
pub const SECTION: &str = "atrium-build-inputs";

/// The length of the binary preamble (magic and version) of a module or a component.
const PREAMBLE: usize = 8;

/// A build inputs digest: `sha256:` and 64 lowercase hex digits.
pub fn is_digest(text: &str) -> bool {
    text.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// The build inputs digest of a component, when it carries a well-formed one in a top-level
/// custom section (nested modules are not looked into; a malformed binary has none).
pub fn read(component: &[u8]) -> Option<String> {
    let mut found = None;
    for section in sections(component)? {
        let Section { id, body, .. } = section?;
        if id != 0 {
            continue;
        }
        if let Some((name, payload)) = custom(body)
            && name == SECTION.as_bytes()
        {
            let text = std::str::from_utf8(payload).ok()?;
            if !is_digest(text) {
                return None;
            }
            found = Some(text.to_owned());
        }
    }
    found
}

/// `component` with `digest` as its build inputs (replacing a section it already has).
/// `None` when `component` is not a well-formed sequence of sections or `digest` is not a
/// digest.
pub fn embed(component: &[u8], digest: &str) -> Option<Vec<u8>> {
    if !is_digest(digest) {
        return None;
    }
    let mut out = Vec::with_capacity(component.len() + 64);
    out.extend_from_slice(component.get(..PREAMBLE)?);
    for section in sections(component)? {
        let Section { id, body, raw } = section?;
        if id == 0 && custom(body).is_some_and(|(name, _)| name == SECTION.as_bytes()) {
            continue;
        }
        out.extend_from_slice(raw);
    }
    let mut body = Vec::with_capacity(digest.len() + SECTION.len() + 2);
    leb128(&mut body, SECTION.len());
    body.extend_from_slice(SECTION.as_bytes());
    body.extend_from_slice(digest.as_bytes());
    out.push(0);
    leb128(&mut out, body.len());
    out.extend_from_slice(&body);
    Some(out)
}

struct Section<'a> {
    id: u8,
    body: &'a [u8],
    raw: &'a [u8],
}

/// The top-level sections after the preamble; `None` without a wasm preamble, an `Err` item
/// where a section's size runs past the end.
fn sections(binary: &[u8]) -> Option<impl Iterator<Item = Option<Section<'_>>>> {
    if binary.len() < PREAMBLE || &binary[..4] != b"\0asm" {
        return None;
    }
    let mut at = PREAMBLE;
    let mut broken = false;
    Some(std::iter::from_fn(move || {
        if broken || at >= binary.len() {
            return None;
        }
        let start = at;
        let parsed = (|| {
            let id = *binary.get(at)?;
            let (size, used) = read_leb128(binary.get(at + 1..)?)?;
            let body_start = at + 1 + used;
            let end = body_start.checked_add(size)?;
            let body = binary.get(body_start..end)?;
            Some((id, body, end))
        })();
        match parsed {
            Some((id, body, end)) => {
                at = end;
                Some(Some(Section {
                    id,
                    body,
                    raw: &binary[start..end],
                }))
            }
            None => {
                broken = true;
                Some(None)
            }
        }
    }))
}

/// A custom section's name and payload.
fn custom(body: &[u8]) -> Option<(&[u8], &[u8])> {
    let (len, used) = read_leb128(body)?;
    let name = body.get(used..used.checked_add(len)?)?;
    Some((name, &body[used + len..]))
}

fn read_leb128(bytes: &[u8]) -> Option<(usize, usize)> {
    let mut value: u64 = 0;
    for (i, byte) in bytes.iter().take(5).enumerate() {
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((usize::try_from(value).ok()?, i + 1));
        }
    }
    None
}

fn leb128(out: &mut Vec<u8>, mut value: usize) {
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digest(c: char) -> String {
        format!("sha256:{}", c.to_string().repeat(64))
    }

    /// A real component keeps compiling with the section, and a second embed replaces the
    /// first.
    #[test]
    fn an_embedded_digest_is_read_back_replaced_and_the_component_stays_valid() {
        let component = wat::parse_str(
            r#"(component
                 (core module $m (func (export "f")))
                 (core instance (instantiate $m)))"#,
        )
        .unwrap();
        assert_eq!(read(&component), None);
        let once = embed(&component, &digest('a')).unwrap();
        assert_eq!(read(&once), Some(digest('a')));
        let twice = embed(&once, &digest('b')).unwrap();
        assert_eq!(read(&twice), Some(digest('b')));
        assert_eq!(twice.len(), once.len(), "the old section was replaced");
        let engine = wasmtime::Engine::default();
        wasmtime::component::Component::new(&engine, &twice).unwrap();
    }

    #[test]
    fn malformed_binaries_and_digests_have_no_inputs() {
        assert_eq!(read(b""), None);
        assert_eq!(read(b"not wasm at all"), None);
        // A section whose size runs past the end.
        assert_eq!(read(b"\0asm\x0d\x00\x01\x00\x00\xff\x01"), None);
        assert_eq!(
            embed(b"\0asm\x0d\x00\x01\x00\x00\xff\x01", &digest('a')),
            None
        );
        assert_eq!(embed(b"\0asm\x0d\x00\x01\x00", "sha256:short"), None);
        assert!(!is_digest(&format!("sha256:{}", "A".repeat(64))));
        // A section of that name whose payload is not a digest.
        let mut bad = b"\0asm\x0d\x00\x01\x00".to_vec();
        let mut body = vec![SECTION.len() as u8];
        body.extend_from_slice(SECTION.as_bytes());
        body.extend_from_slice(b"anything");
        bad.push(0);
        bad.push(body.len() as u8);
        bad.extend_from_slice(&body);
        assert_eq!(read(&bad), None);
    }
}
