//! The BERT encoder (the architecture of all-MiniLM-L6-v2) on candle's CPU tensors: embeddings,
//! then `num_hidden_layers` layers of multi-head self-attention and a feed-forward block, each
//! followed by a residual connection and a layer norm (post-norm), GELU (erf) activations.
//! Inference only: no dropout, no pooler. Tensor names are Hugging Face's
//! (`embeddings.word_embeddings.weight`, `encoder.layer.N.attention.self.query.weight`, ...).

use candle_core::{DType, Module, Result, Tensor};
use candle_nn::{Embedding, LayerNorm, Linear, VarBuilder, embedding, layer_norm, linear};

/// The fields of the model's `config.json` the encoder needs (the others are ignored).
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
pub struct Config {
    /// Rows of the word embedding table.
    pub vocab_size: usize,
    /// The width of every hidden state.
    pub hidden_size: usize,
    /// Encoder layers.
    pub num_hidden_layers: usize,
    /// Attention heads per layer; `hidden_size` is a multiple of it.
    pub num_attention_heads: usize,
    /// The width of the feed-forward block.
    pub intermediate_size: usize,
    /// The activation of the feed-forward block; only `gelu` (erf) is supported.
    pub hidden_act: String,
    /// Positions the model knows: the longest input.
    pub max_position_embeddings: usize,
    /// Rows of the token type table.
    pub type_vocab_size: usize,
    /// The epsilon of every layer norm.
    pub layer_norm_eps: f64,
}

impl Config {
    /// Why the encoder cannot run this configuration, if it cannot.
    pub fn unsupported(&self) -> Option<String> {
        if self.hidden_act != "gelu" {
            return Some(format!(
                "hidden_act is `{}`; only `gelu` is supported",
                self.hidden_act
            ));
        }
        if self.num_attention_heads == 0
            || !self.hidden_size.is_multiple_of(self.num_attention_heads)
        {
            return Some(format!(
                "hidden_size {} is not a multiple of num_attention_heads {}",
                self.hidden_size, self.num_attention_heads
            ));
        }
        None
    }
}

/// The encoder with its weights.
pub struct Bert {
    embeddings: Embeddings,
    layers: Vec<Layer>,
    heads: usize,
}

struct Embeddings {
    words: Embedding,
    positions: Embedding,
    types: Embedding,
    norm: LayerNorm,
}

struct Layer {
    query: Linear,
    key: Linear,
    value: Linear,
    attention_out: Linear,
    attention_norm: LayerNorm,
    intermediate: Linear,
    output: Linear,
    output_norm: LayerNorm,
}

impl Bert {
    /// Reads the weights from `vb` (the root of the safetensors file).
    pub fn load(vb: &VarBuilder<'_>, config: &Config) -> Result<Self> {
        let (hidden, eps) = (config.hidden_size, config.layer_norm_eps);
        let e = vb.pp("embeddings");
        let embeddings = Embeddings {
            words: embedding(config.vocab_size, hidden, e.pp("word_embeddings"))?,
            positions: embedding(
                config.max_position_embeddings,
                hidden,
                e.pp("position_embeddings"),
            )?,
            types: embedding(
                config.type_vocab_size,
                hidden,
                e.pp("token_type_embeddings"),
            )?,
            norm: layer_norm(hidden, eps, e.pp("LayerNorm"))?,
        };
        let layers = (0..config.num_hidden_layers)
            .map(|i| {
                let l = vb.pp(format!("encoder.layer.{i}"));
                let attention = l.pp("attention");
                let own = attention.pp("self");
                Ok(Layer {
                    query: linear(hidden, hidden, own.pp("query"))?,
                    key: linear(hidden, hidden, own.pp("key"))?,
                    value: linear(hidden, hidden, own.pp("value"))?,
                    attention_out: linear(hidden, hidden, attention.pp("output.dense"))?,
                    attention_norm: layer_norm(hidden, eps, attention.pp("output.LayerNorm"))?,
                    intermediate: linear(
                        hidden,
                        config.intermediate_size,
                        l.pp("intermediate.dense"),
                    )?,
                    output: linear(config.intermediate_size, hidden, l.pp("output.dense"))?,
                    output_norm: layer_norm(hidden, eps, l.pp("output.LayerNorm"))?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Bert {
            embeddings,
            layers,
            heads: config.num_attention_heads,
        })
    }

    /// The last hidden state, `(batch, tokens, hidden)`, of token ids and token type ids
    /// `(batch, tokens)` (u32, padded on the right) under an attention `mask` of the same shape
    /// (1 for a token, 0 for padding, which no token then attends to).
    pub fn forward(&self, ids: &Tensor, types: &Tensor, mask: &Tensor) -> Result<Tensor> {
        let (_, tokens) = ids.dims2()?;
        let positions = Tensor::arange(
            0u32,
            u32::try_from(tokens).unwrap_or(u32::MAX),
            ids.device(),
        )?;
        let e = &self.embeddings;
        let x = (e.words.forward(ids)? + e.types.forward(types)?)?
            .broadcast_add(&e.positions.forward(&positions)?)?;
        let mut x = e.norm.forward(&x)?;
        // 0 where a token may be attended to, -10,000 where it is padding: added to the scores
        // before the softmax, whose weight for padding then rounds to zero.
        let bias = mask
            .to_dtype(DType::F32)?
            .affine(10_000.0, -10_000.0)?
            .unsqueeze(1)?
            .unsqueeze(1)?;
        for layer in &self.layers {
            x = layer.forward(&x, &bias, self.heads)?;
        }
        Ok(x)
    }
}

impl Layer {
    fn forward(&self, x: &Tensor, bias: &Tensor, heads: usize) -> Result<Tensor> {
        let (batch, tokens, hidden) = x.dims3()?;
        let width = hidden / heads;
        // (batch, tokens, hidden) to (batch, heads, tokens, width).
        let split = |t: Tensor| {
            t.reshape((batch, tokens, heads, width))?
                .transpose(1, 2)?
                .contiguous()
        };
        let q = split(self.query.forward(x)?)?;
        let k = split(self.key.forward(x)?)?;
        let v = split(self.value.forward(x)?)?;
        #[allow(clippy::cast_precision_loss)]
        let scale = (width as f64).sqrt();
        let scores = (q.matmul(&k.t()?.contiguous()?)? / scale)?.broadcast_add(bias)?;
        let weights = candle_nn::ops::softmax_last_dim(&scores)?;
        let context = weights
            .matmul(&v)?
            .transpose(1, 2)?
            .contiguous()?
            .reshape((batch, tokens, hidden))?;
        let attended = self
            .attention_norm
            .forward(&(self.attention_out.forward(&context)? + x)?)?;
        let inner = self.intermediate.forward(&attended)?.gelu_erf()?;
        self.output_norm
            .forward(&(self.output.forward(&inner)? + attended)?)
    }
}
