//! Limits of the end-user docs bundle (`app_docs/`): 5 MB in all, 500 KB per file, 200 files.
//! Checked by the developer tool before upload and again when a version is registered.

/// Most bytes in the whole bundle.
pub const MAX_TOTAL_BYTES: u64 = 5 * 1000 * 1000;
/// Most bytes in one file.
pub const MAX_FILE_BYTES: u64 = 500 * 1000;
/// Most files.
pub const MAX_FILES: usize = 200;

/// Checks a bundle given as (relative path, size in bytes) pairs; returns one message per
/// broken limit, naming the file where one is at fault.
#[must_use]
pub fn check(files: &[(String, u64)]) -> Vec<String> {
    let mut problems = Vec::new();
    if files.len() > MAX_FILES {
        problems.push(format!(
            "the docs bundle has {} files; at most {MAX_FILES} are allowed",
            files.len()
        ));
    }
    for (path, size) in files {
        if *size > MAX_FILE_BYTES {
            problems.push(format!(
                "{path} is {size} bytes; a docs file may be at most {MAX_FILE_BYTES} bytes (500 KB)"
            ));
        }
    }
    let total: u64 = files.iter().map(|(_, s)| s).sum();
    if total > MAX_TOTAL_BYTES {
        problems.push(format!("the docs bundle is {total} bytes in all; at most {MAX_TOTAL_BYTES} bytes (5 MB) are allowed"));
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits() {
        assert!(check(&[("user.md".into(), 10)]).is_empty());
        assert_eq!(check(&[("big.md".into(), MAX_FILE_BYTES + 1)]).len(), 1);
        let many: Vec<(String, u64)> = (0..201).map(|i| (format!("{i}.md"), 30_000)).collect();
        assert_eq!(check(&many).len(), 2);
    }
}
