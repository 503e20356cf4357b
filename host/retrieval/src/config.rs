//! How retrieval is set up: where the tables live (a directory or object storage and its
//! options), how fresh reads must be, the shared cache budgets, when upkeep runs and the
//! limits of ingestion; from code ([`RetrievalConfig::local`]) or from the host's environment
//! ([`RetrievalConfig::from_env`]).

use std::path::Path;
use std::time::Duration;

use crate::pdf::PdfLimits;

/// Default budget of the index cache shared by all tables, in MiB.
pub const DEFAULT_INDEX_CACHE_MB: usize = 512;
/// Default budget of the metadata cache shared by all tables, in MiB.
pub const DEFAULT_METADATA_CACHE_MB: usize = 128;

/// Vector index partitions a query searches, by default.
pub const DEFAULT_NPROBES: usize = 20;

/// Re-ranking of vector candidates with the full vectors, by default.
pub const DEFAULT_REFINE_FACTOR: u32 = 4;

/// How retrieval is set up.
#[derive(Debug, Clone)]
pub struct RetrievalConfig {
    /// Where the LanceDB tables live: a directory, or an object-store URI such as
    /// `s3://bucket/prefix`.
    pub uri: String,
    /// Options for the object store (for S3: `aws_endpoint`, `aws_region`,
    /// `aws_access_key_id`, `aws_secret_access_key`, `allow_http`, ...).
    pub storage_options: Vec<(String, String)>,
    /// How stale a table's view may get before it rereads the latest version: `None` (reads
    /// see this host's writes at once, and no one else writes) for a local directory; a second
    /// for object storage that several hosts share.
    pub read_consistency: Option<Duration>,
    /// Rows from which a table gets a vector index; below it, vector search scans.
    pub vector_index_rows: usize,
    /// How often background upkeep runs.
    pub upkeep_interval: Duration,
    /// How long old table versions are kept before upkeep removes them.
    pub keep_versions_for: Duration,
    /// Most characters in one document (text or extracted from a file).
    pub max_document_chars: usize,
    /// Tables kept open at once.
    pub open_tables: usize,
    /// Bytes of index data (vector partitions, full-text postings) cached across all tables.
    pub index_cache_bytes: usize,
    /// Bytes of table metadata (manifests, file footers) cached across all tables.
    pub metadata_cache_bytes: usize,
    /// Limits of PDF text extraction.
    pub pdf: PdfLimits,
    /// How often an unreachable store is probed again.
    pub retry_every: Duration,
    /// Vector index partitions a query searches (of about √rows).
    pub nprobes: usize,
    /// How many times the asked-for vector candidates are re-ranked with the full vectors
    /// (0: none, the index's compressed distances decide).
    pub refine_factor: u32,
}

impl RetrievalConfig {
    /// Tables under `dir` on local disk, with the default limits.
    pub fn local(dir: &Path) -> Self {
        RetrievalConfig {
            uri: dir.display().to_string(),
            storage_options: Vec::new(),
            read_consistency: None,
            vector_index_rows: 10_000,
            upkeep_interval: Duration::from_secs(30),
            keep_versions_for: Duration::from_secs(600),
            max_document_chars: 2_000_000,
            open_tables: 512,
            index_cache_bytes: DEFAULT_INDEX_CACHE_MB << 20,
            metadata_cache_bytes: DEFAULT_METADATA_CACHE_MB << 20,
            pdf: PdfLimits::default(),
            retry_every: Duration::from_secs(2),
            nprobes: DEFAULT_NPROBES,
            refine_factor: DEFAULT_REFINE_FACTOR,
        }
    }

    /// The configuration from the environment: `ATRIUM_RAG_URI` (default `<data dir>/rag`);
    /// for object storage, every `ATRIUM_RAG_STORAGE_<OPTION>` as a storage option
    /// (`ATRIUM_RAG_STORAGE_AWS_ENDPOINT=http://minio:9000` is `aws_endpoint`); the cache
    /// budgets `ATRIUM_RAG_INDEX_CACHE_MB` and `ATRIUM_RAG_METADATA_CACHE_MB`; the vector
    /// search's `ATRIUM_RAG_NPROBES` (1 to 1024) and `ATRIUM_RAG_REFINE_FACTOR` (0 to 100).
    pub fn from_env(data_dir: &Path, vars: &[(String, String)]) -> Result<Self, String> {
        let get = |name: &str| {
            vars.iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
                .filter(|v| !v.trim().is_empty())
        };
        let mut config = RetrievalConfig::local(&data_dir.join("rag"));
        if let Some(uri) = get("ATRIUM_RAG_URI") {
            if uri.contains("://") {
                config.read_consistency = Some(Duration::from_secs(1));
            }
            config.uri = uri;
        }
        config.storage_options = vars
            .iter()
            .filter_map(|(k, v)| {
                k.strip_prefix("ATRIUM_RAG_STORAGE_")
                    .map(|option| (option.to_ascii_lowercase(), v.clone()))
            })
            .collect();
        let megabytes = |name: &str, default: usize| -> Result<usize, String> {
            match get(name) {
                None => Ok(default << 20),
                Some(v) => v
                    .trim()
                    .parse::<usize>()
                    .ok()
                    .filter(|mb| (1..=1 << 20).contains(mb))
                    .map(|mb| mb << 20)
                    .ok_or_else(|| {
                        format!("{name} must be a whole number of MiB from 1 to 1048576, got `{v}`")
                    }),
            }
        };
        config.index_cache_bytes = megabytes("ATRIUM_RAG_INDEX_CACHE_MB", DEFAULT_INDEX_CACHE_MB)?;
        config.metadata_cache_bytes =
            megabytes("ATRIUM_RAG_METADATA_CACHE_MB", DEFAULT_METADATA_CACHE_MB)?;
        let number =
            |name: &str, default: usize, range: std::ops::RangeInclusive<usize>| match get(name) {
                None => Ok(default),
                Some(v) => v
                    .trim()
                    .parse::<usize>()
                    .ok()
                    .filter(|n| range.contains(n))
                    .ok_or_else(|| {
                        format!(
                            "{name} must be a whole number from {} to {}, got `{v}`",
                            range.start(),
                            range.end()
                        )
                    }),
            };
        config.nprobes = number("ATRIUM_RAG_NPROBES", DEFAULT_NPROBES, 1..=1024)?;
        config.refine_factor = u32::try_from(number(
            "ATRIUM_RAG_REFINE_FACTOR",
            DEFAULT_REFINE_FACTOR as usize,
            0..=100,
        )?)
        .unwrap_or(DEFAULT_REFINE_FACTOR);
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_sets_the_store_and_its_cache_budgets() {
        let vars = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        };
        let data = Path::new("/var/lib/atrium");
        let config = RetrievalConfig::from_env(data, &[]).unwrap();
        assert_eq!(config.uri, "/var/lib/atrium/rag");
        assert_eq!(config.read_consistency, None);
        assert_eq!(config.index_cache_bytes, 512 << 20);
        assert_eq!(config.metadata_cache_bytes, 128 << 20);
        assert_eq!((config.nprobes, config.refine_factor), (20, 4));

        let config = RetrievalConfig::from_env(
            data,
            &vars(&[
                ("ATRIUM_RAG_URI", "s3://bucket/prefix"),
                ("ATRIUM_RAG_STORAGE_AWS_REGION", "eu-west-3"),
                ("ATRIUM_RAG_INDEX_CACHE_MB", "64"),
                ("ATRIUM_RAG_METADATA_CACHE_MB", " 16 "),
                ("ATRIUM_RAG_NPROBES", "8"),
                ("ATRIUM_RAG_REFINE_FACTOR", "0"),
            ]),
        )
        .unwrap();
        assert_eq!(config.uri, "s3://bucket/prefix");
        assert_eq!(config.read_consistency, Some(Duration::from_secs(1)));
        assert_eq!(
            config.storage_options,
            vec![("aws_region".to_owned(), "eu-west-3".to_owned())]
        );
        assert_eq!(config.index_cache_bytes, 64 << 20);
        assert_eq!(config.metadata_cache_bytes, 16 << 20);
        assert_eq!((config.nprobes, config.refine_factor), (8, 0));
        for (name, bad) in [
            ("ATRIUM_RAG_NPROBES", "0"),
            ("ATRIUM_RAG_NPROBES", "5000"),
            ("ATRIUM_RAG_REFINE_FACTOR", "-2"),
            ("ATRIUM_RAG_REFINE_FACTOR", "many"),
        ] {
            let err = RetrievalConfig::from_env(data, &vars(&[(name, bad)])).unwrap_err();
            assert!(
                err.contains(name) && err.contains(bad),
                "{name}={bad}: {err}"
            );
        }

        for bad in ["0", "-1", "lots", "1.5", "2000000"] {
            let err = RetrievalConfig::from_env(data, &vars(&[("ATRIUM_RAG_INDEX_CACHE_MB", bad)]))
                .unwrap_err();
            assert!(
                err.contains("ATRIUM_RAG_INDEX_CACHE_MB") && err.contains(bad),
                "{bad}: {err}"
            );
        }
    }
}
