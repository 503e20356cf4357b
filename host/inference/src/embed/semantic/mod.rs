//! The built-in semantic embedder: `all-minilm-l6-v2`, a small sentence-embedding model run
//! in-process on the CPU. No network at run time: the weights are files on disk that the build
//! step fetched (see `build.rs` of this crate), and inference is a BERT encoder on candle's tensors ([`bert`]).
//!
//! The model is sentence-transformers' all-MiniLM-L6-v2: a 6-layer BERT with 384 hidden
//! dimensions and a 30,522-entry uncased WordPiece vocabulary, trained so that texts with the
//! same meaning get close vectors even when they share no words (which the lexical embedder in
//! [`super::local`] cannot do). A text becomes a vector in four steps, the same as the
//! sentence-transformers pipeline of that model (`modules.json`: Transformer, Pooling with
//! mean tokens, Normalize) up to the last one:
//!
//! 1. **Tokenise**: the model's own `tokenizer.json` (lower-casing, BERT pre-tokenisation,
//!    WordPiece), with `[CLS]` and `[SEP]` added. A text is cut to [`MAX_TOKENS`] tokens
//!    (special tokens included); the rest of it is not embedded. 256 is the length the model
//!    was trained with (`sentence_bert_config.json`, `max_seq_length`); a retrieval chunk of at
//!    most 1,000 characters of English is roughly 200 to 250 tokens, so chunks mostly fit
//!    (text in other languages takes more tokens and is cut sooner), but a long text passed
//!    whole is embedded by its beginning only. The `tokenizer.json` shipped with the
//!    model pads and cuts every input to 128 tokens; [`SemanticEmbedder::load`] replaces both
//!    settings.
//! 2. **Encode**: texts go through the model [`BATCH`] at a time, each batch padded to its
//!    longest text, one forward pass per batch, on a blocking thread (`spawn_blocking`): a
//!    full batch of 32 × 256 tokens is about 1e11 multiply-adds, seconds of CPU.
//! 3. **Pool**: the last hidden state is averaged over the real tokens (the attention mask;
//!    padding never counts) and scaled to unit length: 384 numbers.
//! 4. **Project**: the 384 numbers are multiplied by a fixed 1024 × 384 matrix with orthonormal
//!    columns ([`Projection`]), giving the [`DIMENSIONS`](super::DIMENSIONS) numbers every embedding of this host
//!    has. Orthonormal columns keep every dot product, hence every norm and cosine similarity:
//!    `(Qx)·(Qy) = xᵀ(QᵀQ)y = x·y`. Appending 640 zeros would keep them too, but 640 dimensions
//!    that are zero in every vector hurt some vector indexes: IVF-PQ cuts a vector into
//!    sub-vectors and trains a codebook per sub-vector, and with zero padding five eighths of
//!    the sub-vectors are constant (their codebooks are wasted, the bytes of every code spent on
//!    nothing) while the 384 live dimensions get three eighths of the code. The projection
//!    spreads the signal over all 1024 dimensions evenly instead (each output dimension carries
//!    about 384/1024 of a vector's energy).
//!
//! The projection matrix ([`projection`]) is part of the vectors' meaning: changing its seed or its algorithm
//! changes every vector, and vectors stored before and after would not be comparable. A test
//! pins some of its entries.

mod bert;
mod projection;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use tokenizers::{Encoding, PaddingStrategy, Tokenizer, TruncationParams};

use self::bert::{Bert, Config};
pub use self::projection::{PROJECTION_SEED, Projection};
use super::{EmbedError, Embedded, Embedder, checked};
use crate::providers::UpstreamError;

/// The model name reported for the semantic embedder.
pub const MODEL: &str = "all-minilm-l6-v2";

/// The provider reported for the semantic embedder: it runs in this process, like the lexical
/// embedder.
pub const PROVIDER: &str = "local";

/// The dimension of the model's own vectors, before the projection to
/// [`DIMENSIONS`](super::DIMENSIONS).
pub const SOURCE_DIMENSIONS: usize = 384;

/// Tokens per text at most, `[CLS]` and `[SEP]` included; the rest of a longer text is cut.
pub const MAX_TOKENS: usize = 256;

/// Texts per forward pass at most.
pub const BATCH: usize = 32;

/// The weights in the model directory.
pub const WEIGHTS_FILE: &str = "model.safetensors";
/// The tokenizer in the model directory.
pub const TOKENIZER_FILE: &str = "tokenizer.json";
/// The model configuration in the model directory.
pub const CONFIG_FILE: &str = "config.json";

/// The environment variable naming the model directory (see [`default_dir`]).
pub const MODEL_DIR_VAR: &str = "ATRIUM_SEMANTIC_MODEL_DIR";

/// Why the model could not be loaded or run.
#[derive(Debug, thiserror::Error)]
pub enum SemanticError {
    /// A model file could not be read.
    #[error("cannot read {}: {error}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        error: std::io::Error,
    },
    /// `config.json` is not a BERT configuration.
    #[error("{} is not a BERT configuration: {error}", path.display())]
    Config {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        error: serde_json::Error,
    },
    /// The configuration describes another model than the one this embedder is built for.
    #[error("{} describes a model this embedder cannot use: {reason}", path.display())]
    Unsupported {
        /// The configuration file.
        path: PathBuf,
        /// What does not match.
        reason: String,
    },
    /// `tokenizer.json` could not be loaded or configured.
    #[error("{} is not a usable tokenizer: {error}", path.display())]
    Tokenizer {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        error: String,
    },
    /// The weights do not fit the configuration (a missing tensor, a wrong shape) or are not
    /// safetensors.
    #[error("cannot load the weights in {}: {error}", path.display())]
    Weights {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        error: candle_core::Error,
    },
    /// Texts could not be tokenised.
    #[error("tokenising failed: {0}")]
    Tokenize(String),
    /// The forward pass failed.
    #[error("inference failed: {0}")]
    Inference(candle_core::Error),
    /// The model answered with a shape this embedder does not expect.
    #[error("unexpected model output: {0}")]
    Shape(String),
}

/// The model directory: `$ATRIUM_SEMANTIC_MODEL_DIR` when set (`off` offers no semantic
/// embedder), else the directory the build step unpacked the files into (compiled in; none when
/// the build could not fetch them). `var` reads the environment.
pub fn default_dir(var: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    match var(MODEL_DIR_VAR).map(|v| v.trim().to_owned()) {
        Some(v) if v == "off" => None,
        Some(v) if !v.is_empty() => Some(PathBuf::from(v)),
        _ => option_env!("ATRIUM_SEMANTIC_MODEL_BUILT").map(PathBuf::from),
    }
}

/// The model and its tokenizer, shared with the blocking threads that run them.
struct Model {
    /// The BERT encoder, on the CPU.
    bert: Bert,
    /// The tokenizer, set to pad a batch to its longest text and cut at [`MAX_TOKENS`].
    tokenizer: Tokenizer,
    /// The device the tensors live on (the CPU).
    device: Device,
}

/// The semantic embedder as an [`Embedder`]: `all-minilm-l6-v2`, provider `local`.
#[derive(Clone)]
pub struct SemanticEmbedder {
    /// The loaded model.
    model: Arc<Model>,
}

impl fmt::Debug for SemanticEmbedder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SemanticEmbedder")
            .field("model", &MODEL)
            .finish_non_exhaustive()
    }
}

/// Reads a whole file, naming it in the error.
fn read(path: &Path) -> Result<Vec<u8>, SemanticError> {
    std::fs::read(path).map_err(|error| SemanticError::Read {
        path: path.to_owned(),
        error,
    })
}

/// Loads `tokenizer.json` and sets it up for batches: pad to the longest text of the batch
/// (the file pads every text to 128), cut at [`MAX_TOKENS`] (the file cuts at 128).
fn load_tokenizer(path: &Path) -> Result<Tokenizer, SemanticError> {
    let failed = |error: String| SemanticError::Tokenizer {
        path: path.to_owned(),
        error,
    };
    let mut tokenizer = Tokenizer::from_file(path).map_err(|e| failed(e.to_string()))?;
    // Keep the file's pad token and id ([PAD], 0); change only how far to pad.
    let mut padding = tokenizer.get_padding().cloned().unwrap_or_default();
    padding.strategy = PaddingStrategy::BatchLongest;
    padding.pad_to_multiple_of = None;
    tokenizer.with_padding(Some(padding));
    tokenizer
        .with_truncation(Some(TruncationParams {
            max_length: MAX_TOKENS,
            ..TruncationParams::default()
        }))
        .map_err(|e| failed(e.to_string()))?;
    Ok(tokenizer)
}

impl SemanticEmbedder {
    /// Loads the model from `dir`, which holds [`CONFIG_FILE`], [`TOKENIZER_FILE`] and
    /// [`WEIGHTS_FILE`] (build.rs unpacks them into [`default_dir`]). It reads about 90 MB and
    /// builds the projection: call it once, at start-up, off the async workers.
    pub fn load(dir: &Path) -> Result<Self, SemanticError> {
        let config_path = dir.join(CONFIG_FILE);
        let config: Config = serde_json::from_slice(&read(&config_path)?).map_err(|error| {
            SemanticError::Config {
                path: config_path.clone(),
                error,
            }
        })?;
        if let Some(reason) = config.unsupported() {
            return Err(SemanticError::Unsupported {
                path: config_path,
                reason,
            });
        }
        if config.hidden_size != SOURCE_DIMENSIONS {
            return Err(SemanticError::Unsupported {
                path: config_path,
                reason: format!(
                    "hidden_size is {}, this embedder needs {SOURCE_DIMENSIONS}",
                    config.hidden_size
                ),
            });
        }
        if config.max_position_embeddings < MAX_TOKENS {
            return Err(SemanticError::Unsupported {
                path: config_path,
                reason: format!(
                    "max_position_embeddings is {}, this embedder needs {MAX_TOKENS}",
                    config.max_position_embeddings
                ),
            });
        }
        let tokenizer = load_tokenizer(&dir.join(TOKENIZER_FILE))?;
        let weights_path = dir.join(WEIGHTS_FILE);
        let device = Device::Cpu;
        // Buffered, not memory-mapped: mapping is `unsafe` (the workspace denies it). The
        // buffer is dropped once the tensors are copied out of it.
        let weights =
            VarBuilder::from_buffered_safetensors(read(&weights_path)?, DType::F32, &device)
                .map_err(|error| SemanticError::Weights {
                    path: weights_path.clone(),
                    error,
                })?;
        let bert = Bert::load(&weights, &config).map_err(|error| SemanticError::Weights {
            path: weights_path,
            error,
        })?;
        // Built now so that the first request does not wait for it.
        Projection::get();
        Ok(SemanticEmbedder {
            model: Arc::new(Model {
                bert,
                tokenizer,
                device,
            }),
        })
    }
}

impl Model {
    /// Embeds `texts`, [`BATCH`] at a time, in order.
    fn embed_all(&self, texts: &[String]) -> Result<Embedded, SemanticError> {
        let mut vectors = Vec::with_capacity(texts.len());
        let mut prompt_tokens = 0u64;
        for batch in texts.chunks(BATCH) {
            let (pooled, tokens) = self.embed_batch(batch)?;
            prompt_tokens = prompt_tokens.saturating_add(tokens);
            vectors.extend(pooled.iter().map(|v| Projection::get().apply(v)));
        }
        Ok(Embedded {
            vectors,
            prompt_tokens,
        })
    }

    /// One forward pass: the pooled, unit-length 384-number vectors of `texts` (at most
    /// [`BATCH`]) and the number of tokens embedded (special tokens included, padding not).
    fn embed_batch(
        &self,
        texts: &[String],
    ) -> Result<(Vec<[f32; SOURCE_DIMENSIONS]>, u64), SemanticError> {
        let inputs: Vec<&str> = texts.iter().map(String::as_str).collect();
        // `_fast`: the same encodings without the character offsets, which nothing here reads.
        let encodings = self
            .tokenizer
            .encode_batch_fast(inputs, true)
            .map_err(|e| SemanticError::Tokenize(e.to_string()))?;
        let rows = encodings.len();
        let len = encodings.first().map_or(0, Encoding::len);
        let mut ids = Vec::with_capacity(rows * len);
        let mut type_ids = Vec::with_capacity(rows * len);
        let mut mask = Vec::with_capacity(rows * len);
        for encoding in &encodings {
            if encoding.len() != len {
                return Err(SemanticError::Shape(format!(
                    "the tokenizer padded a batch to {} and {len} tokens",
                    encoding.len()
                )));
            }
            ids.extend_from_slice(encoding.get_ids());
            type_ids.extend_from_slice(encoding.get_type_ids());
            mask.extend_from_slice(encoding.get_attention_mask());
        }
        let tokens = mask.iter().filter(|m| **m != 0).count();
        let tensor = |data: Vec<u32>| {
            Tensor::from_vec(data, (rows, len), &self.device).map_err(SemanticError::Inference)
        };
        let hidden = self
            .bert
            .forward(&tensor(ids)?, &tensor(type_ids)?, &tensor(mask)?)
            .map_err(SemanticError::Inference)?
            .to_vec3::<f32>()
            .map_err(SemanticError::Inference)?;
        if hidden.len() != rows {
            return Err(SemanticError::Shape(format!(
                "{} outputs for {rows} texts",
                hidden.len()
            )));
        }
        let pooled = hidden
            .iter()
            .zip(&encodings)
            .map(|(states, encoding)| mean_pool(states, encoding.get_attention_mask()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok((pooled, u64::try_from(tokens).unwrap_or(u64::MAX)))
    }
}

/// The mean of the hidden states (one row of [`SOURCE_DIMENSIONS`] numbers per token) over the
/// tokens whose `mask` is not zero, scaled to unit length. A text always has `[CLS]` and
/// `[SEP]`, so the mean is over at least two tokens; a zero mean stays zero (and [`checked`]
/// refuses it later).
fn mean_pool(states: &[Vec<f32>], mask: &[u32]) -> Result<[f32; SOURCE_DIMENSIONS], SemanticError> {
    let mut sum = [0.0f64; SOURCE_DIMENSIONS];
    let mut count = 0u32;
    for (state, m) in states.iter().zip(mask) {
        if *m == 0 {
            continue;
        }
        if state.len() != SOURCE_DIMENSIONS {
            return Err(SemanticError::Shape(format!(
                "a hidden state has {} numbers, not {SOURCE_DIMENSIONS}",
                state.len()
            )));
        }
        for (s, x) in sum.iter_mut().zip(state) {
            *s += f64::from(*x);
        }
        count += 1;
    }
    let count = f64::from(count.max(1));
    let norm = sum
        .iter()
        .map(|s| (s / count) * (s / count))
        .sum::<f64>()
        .sqrt();
    let mut pooled = [0.0f32; SOURCE_DIMENSIONS];
    if norm > 0.0 {
        for (p, s) in pooled.iter_mut().zip(&sum) {
            *p = (s / count / norm) as f32;
        }
    }
    Ok(pooled)
}

/// An inference failure as the embedding error the API reports (a 502: a wrong answer, not an
/// unreachable backend).
fn failure(message: String) -> EmbedError {
    EmbedError::Upstream {
        provider: PROVIDER,
        model: MODEL.to_owned(),
        error: UpstreamError::Protocol(message),
    }
}

#[async_trait]
impl Embedder for SemanticEmbedder {
    fn provider(&self) -> &'static str {
        PROVIDER
    }

    fn model(&self) -> &str {
        MODEL
    }

    fn micros_per_million(&self) -> i64 {
        0
    }

    async fn embed(&self, texts: &[String]) -> Result<Embedded, EmbedError> {
        // Even one short text is milliseconds of CPU: always off the async workers.
        let model = Arc::clone(&self.model);
        let owned = texts.to_vec();
        let embedded = match tokio::task::spawn_blocking(move || model.embed_all(&owned)).await {
            Ok(Ok(embedded)) => embedded,
            Ok(Err(e)) => return Err(failure(e.to_string())),
            Err(e) => return Err(failure(format!("the embedding thread failed: {e}"))),
        };
        // The projection keeps unit length; `checked` also refuses a zero or non-finite
        // vector and removes the rounding.
        let vectors = embedded
            .vectors
            .into_iter()
            .map(|v| checked(PROVIDER, MODEL, v))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Embedded {
            vectors,
            prompt_tokens: embedded.prompt_tokens,
        })
    }
}

/// The cosine similarity of two vectors, summed in `f64` (for the tests).
#[cfg(test)]
fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum();
    let na: f64 = a.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    dot / (na * nb)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::DIMENSIONS;

    #[test]
    fn mean_pool_averages_the_masked_tokens_only() {
        let mut first = vec![0.0f32; SOURCE_DIMENSIONS];
        let mut second = vec![0.0f32; SOURCE_DIMENSIONS];
        let mut padding = vec![0.0f32; SOURCE_DIMENSIONS];
        first[0] = 3.0;
        second[0] = 1.0;
        second[1] = 2.0;
        padding[2] = 100.0;
        let pooled = mean_pool(&[first, second, padding], &[1, 1, 0]).unwrap();
        // The mean is (2, 1, 0, ...), of length √5.
        let s = 5.0f32.sqrt();
        assert!((pooled[0] - 2.0 / s).abs() < 1e-6);
        assert!((pooled[1] - 1.0 / s).abs() < 1e-6);
        assert!(pooled[2..].iter().all(|x| *x == 0.0));
    }

    #[test]
    fn mean_pool_refuses_states_of_the_wrong_size() {
        let short = vec![1.0f32; 10];
        assert!(matches!(
            mean_pool(&[short], &[1]),
            Err(SemanticError::Shape(_))
        ));
    }

    #[test]
    fn the_model_directory_follows_the_environment() {
        fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| (*v).to_owned())
            }
        }
        assert_eq!(
            default_dir(&env(&[
                (MODEL_DIR_VAR, "/models/minilm"),
                ("HOME", "/home/a")
            ])),
            Some(PathBuf::from("/models/minilm"))
        );
        assert_eq!(default_dir(&env(&[(MODEL_DIR_VAR, " off ")])), None);
        assert_eq!(
            default_dir(&env(&[(MODEL_DIR_VAR, "")])),
            option_env!("ATRIUM_SEMANTIC_MODEL_BUILT").map(PathBuf::from)
        );
        assert_eq!(
            default_dir(&env(&[])),
            option_env!("ATRIUM_SEMANTIC_MODEL_BUILT").map(PathBuf::from)
        );
    }

    #[test]
    fn a_missing_model_directory_is_a_read_error() {
        let dir = std::env::temp_dir().join("atrium-no-such-model-dir");
        match SemanticEmbedder::load(&dir) {
            Err(SemanticError::Read { path, .. }) => assert_eq!(path, dir.join(CONFIG_FILE)),
            other => panic!("expected a read error, got {other:?}"),
        }
    }

    // The tests below need the model files, which the build step fetched (build.rs).

    /// The model, loaded once for all the tests of this module.
    fn loaded() -> SemanticEmbedder {
        static MODEL: std::sync::OnceLock<SemanticEmbedder> = std::sync::OnceLock::new();
        MODEL
            .get_or_init(|| {
                let dir = default_dir(&|name: &str| std::env::var(name).ok())
                    .expect("the build step fetched the model (see build.rs's warning)");
                SemanticEmbedder::load(&dir).expect("the model loads")
            })
            .clone()
    }

    fn texts(list: &[&str]) -> Vec<String> {
        list.iter().map(|t| (*t).to_owned()).collect()
    }

    #[tokio::test]
    async fn reproduces_the_published_similarities() {
        // sentence-transformers' quick start prints this matrix for all-MiniLM-L6-v2; the
        // projection keeps cosines, so the 1024-number vectors must give it too.
        let embedded = loaded()
            .embed(&texts(&[
                "The weather is lovely today.",
                "It's so sunny outside!",
                "He drove to the stadium.",
            ]))
            .await
            .unwrap();
        let v = &embedded.vectors;
        assert!(v.iter().all(|x| x.len() == DIMENSIONS));
        for (a, b, want) in [(0, 1, 0.6660), (0, 2, 0.1046), (1, 2, 0.1411)] {
            let got = cosine(&v[a], &v[b]);
            assert!(
                (got - want).abs() < 2e-3,
                "({a}, {b}): {got}, published {want}"
            );
        }
    }

    #[tokio::test]
    async fn counts_tokens_without_padding() {
        let embedder = loaded();
        // [CLS] the weather is lovely today . [SEP]
        let one = embedder
            .embed(&texts(&["The weather is lovely today."]))
            .await
            .unwrap();
        assert_eq!(one.prompt_tokens, 8);
        // Batched with a longer text, the short one is padded but neither counted nor changed.
        let two = embedder
            .embed(&texts(&[
                "The weather is lovely today.",
                "A much longer sentence about the weather, the sun and the long summer days.",
            ]))
            .await
            .unwrap();
        assert!(two.prompt_tokens > 16);
        assert!(cosine(&one.vectors[0], &two.vectors[0]) > 0.9999);
    }

    #[tokio::test]
    async fn many_texts_keep_their_order_across_batches() {
        let embedder = loaded();
        let many: Vec<String> = (0..(BATCH + 5))
            .map(|i| format!("Invoice number {i} is overdue"))
            .collect();
        let all = embedder.embed(&many).await.unwrap();
        assert_eq!(all.vectors.len(), many.len());
        let last = embedder.embed(&many[BATCH + 4..]).await.unwrap();
        assert!(cosine(&all.vectors[BATCH + 4], &last.vectors[0]) > 0.9999);
    }

    #[tokio::test]
    async fn meaning_beats_shared_words() {
        // What the lexical embedder cannot do: a paraphrase that shares no content word is
        // closer than an unrelated text.
        let embedded = loaded()
            .embed(&texts(&[
                "The cat sat on the mat.",
                "A feline rested upon the rug.",
                "Quantum chromodynamics describes the strong interaction.",
                "Someone in a gorilla costume is playing a set of drums.",
                "A monkey is playing drums.",
                "A man is riding a horse.",
            ]))
            .await
            .unwrap();
        let v = &embedded.vectors;
        assert!(cosine(&v[0], &v[1]) > cosine(&v[0], &v[2]));
        assert!(cosine(&v[3], &v[4]) > cosine(&v[3], &v[5]) + 0.2);
    }
}
