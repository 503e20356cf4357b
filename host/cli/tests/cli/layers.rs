//! The modules of the platform and of the developer tool form layers: no top-level module (a
//! file of `src/`, or a directory with its children) reaches, through `crate::` paths in its
//! code, a module that reaches it back. In `host/platform` the serving core depends on no
//! capability, each capability on the core and the ones below it, and the composition
//! (`composition`) and the adapter of the runtime (`install_platform`) sit above them all
//! (docs/ARCHITECTURE.md, "Crates"). Comments and tests are not read: a doc link or a test
//! fixture may point anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The code of a file without its comments and its `#[cfg(test)]` part.
fn code(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or_default();
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The top-level modules each top-level module names through `crate::`.
fn graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let relative = path.strip_prefix(src).unwrap();
            let first = relative.components().next().unwrap();
            let top = first
                .as_os_str()
                .to_string_lossy()
                .trim_end_matches(".rs")
                .to_owned();
            let text = std::fs::read_to_string(&path).unwrap();
            files.entry(top).or_default().push(code(&text));
        }
    }
    let tops: BTreeSet<String> = files.keys().cloned().collect();
    let mut edges = BTreeMap::new();
    for (top, texts) in &files {
        let mut named = BTreeSet::new();
        for text in texts {
            let mut add = |name: &str| {
                if name != top && tops.contains(name) {
                    named.insert(name.to_owned());
                }
            };
            for (i, _) in text.match_indices("crate::") {
                let rest = &text[i + "crate::".len()..];
                if let Some(group) = rest.strip_prefix('{') {
                    // `use crate::{a, b::c, ...}`: the first segment of each path.
                    let group = group.split('}').next().unwrap_or_default();
                    for path in group.split(',') {
                        add(path.trim().split("::").next().unwrap_or_default().trim());
                    }
                } else {
                    let name: String = rest
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    add(&name);
                }
            }
        }
        edges.insert(top.clone(), named);
    }
    edges
}

/// A circle through `from`, if there is one: the modules in order.
fn circle(edges: &BTreeMap<String, BTreeSet<String>>, from: &str) -> Option<Vec<String>> {
    let mut path = vec![from.to_owned()];
    let mut seen = BTreeSet::new();
    fn walk(
        edges: &BTreeMap<String, BTreeSet<String>>,
        from: &str,
        path: &mut Vec<String>,
        seen: &mut BTreeSet<String>,
    ) -> bool {
        let Some(last) = path.last().cloned() else {
            return false;
        };
        for next in edges.get(&last).into_iter().flatten() {
            if next == from {
                path.push(next.clone());
                return true;
            }
            if seen.insert(next.clone()) {
                path.push(next.clone());
                if walk(edges, from, path, seen) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    walk(edges, from, &mut path, &mut seen).then_some(path)
}

/// The circles among the top-level modules of `host/<crate_dir>/src`, each as its path.
fn circles_of(crate_dir: &str) -> (BTreeMap<String, BTreeSet<String>>, Vec<String>) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(crate_dir)
        .join("src");
    let edges = graph(&src);
    let circles = edges
        .keys()
        .filter_map(|m| circle(&edges, m))
        .map(|c| c.join(" -> "))
        .collect();
    (edges, circles)
}

#[test]
fn no_module_of_the_platform_reaches_back_a_module_that_reaches_it() {
    let (edges, circles) = circles_of("platform");
    assert!(edges.contains_key("serving") && edges.contains_key("rooms"));
    assert!(
        edges["composition"].contains("serving"),
        "the reader sees the composition's imports: {:?}",
        edges["composition"]
    );
    assert!(
        !edges["serving"].contains("rooms"),
        "{:?}",
        edges["serving"]
    );
    assert!(circles.is_empty(), "import circles: {circles:#?}");
}

#[test]
fn no_module_of_the_developer_tool_reaches_back_a_module_that_reaches_it() {
    let (edges, circles) = circles_of("cli");
    assert!(edges["deploy"].contains("build"), "{:?}", edges["deploy"]);
    assert!(circles.is_empty(), "import circles: {circles:#?}");
}

#[test]
fn the_reader_finds_a_circle_and_skips_comments_and_tests() {
    let mut edges = BTreeMap::new();
    edges.insert("a".to_owned(), BTreeSet::from(["b".to_owned()]));
    edges.insert("b".to_owned(), BTreeSet::from(["c".to_owned()]));
    edges.insert("c".to_owned(), BTreeSet::from(["a".to_owned()]));
    assert_eq!(circle(&edges, "a").unwrap(), ["a", "b", "c", "a"]);
    edges.insert("c".to_owned(), BTreeSet::new());
    assert_eq!(circle(&edges, "a"), None);
    let text = "use crate::x;\n/// crate::y\nfn f() {}\n#[cfg(test)]\nuse crate::z;";
    assert_eq!(code(text), "use crate::x;\nfn f() {}");
}
