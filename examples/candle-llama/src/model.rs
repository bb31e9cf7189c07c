//! The models: candle-transformers' Llama at Llama-3-8B's dimensions with synthetic weights
//! made on the spot (nothing is downloaded), in bf16 or f16 through `llama::Llama::load`, or
//! quantized to Q4_K through `quantized_llama::ModelWeights::from_gguf` from a GGUF file
//! written in memory; and, for the layer norm candle's Llama does not launch, BERT-base
//! (`bert::BertModel`, f32) with synthetic weights alike.

use std::io::Cursor;

use anyhow::{Context, Result};
use candle_core::quantized::{ggml_file, gguf_file, GgmlDType, QTensor};
use candle_core::{DType, Device, Shape, Tensor};
use candle_nn::var_builder::SimpleBackend;
use candle_nn::{Init, VarBuilder};
use candle_transformers::models::bert::{self, BertModel};
use candle_transformers::models::llama::{Cache, Config, Llama};
use candle_transformers::models::quantized_llama::ModelWeights;

/// The weights' kind: a full-precision model or a quantized one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// bf16 weights and activations.
    Bf16,
    /// f16 weights and activations.
    F16,
    /// Q4_K weights (norms f32), f32 activations.
    Q4k,
    /// Q8_0 weights (norms f32), f32 activations.
    Q8_0,
    /// BERT-base, f32: an encoder, whose layer norms are 768 wide (Llama has none). Not f16 or
    /// bf16: its attention mask multiplies 0 by `f32::MIN`, which both make infinite (NaN).
    Bert,
}

impl Kind {
    /// Parses `bf16`, `f16`, `q4k`, `q8_0` or `bert`.
    pub fn parse(s: &str) -> Result<Kind> {
        match s {
            "bf16" => Ok(Kind::Bf16),
            "f16" => Ok(Kind::F16),
            "q4k" => Ok(Kind::Q4k),
            "q8_0" => Ok(Kind::Q8_0),
            "bert" => Ok(Kind::Bert),
            _ => anyhow::bail!("unknown model {s:?}: bf16, f16, q4k, q8_0 or bert"),
        }
    }

    /// The name `parse` reads.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Bf16 => "bf16",
            Kind::F16 => "f16",
            Kind::Q4k => "q4k",
            Kind::Q8_0 => "q8_0",
            Kind::Bert => "bert",
        }
    }

    /// The vocabulary the model's token ids come from (`dims`' for a Llama).
    pub fn vocab(self, dims: &Dims) -> usize {
        match self {
            Kind::Bert => bert::Config::default().vocab_size,
            _ => dims.vocab,
        }
    }
}

/// A Llama model's dimensions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Dims {
    /// Width of the residual stream.
    pub hidden: usize,
    /// Width of the feed-forward layer.
    pub intermediate: usize,
    /// Transformer blocks.
    pub layers: usize,
    /// Query heads.
    pub heads: usize,
    /// Key and value heads (grouped-query attention).
    pub kv_heads: usize,
    /// Tokens of the vocabulary.
    pub vocab: usize,
    /// RoPE's base frequency.
    pub rope_theta: f32,
    /// The RMS norms' epsilon.
    pub rms_eps: f64,
    /// Positions the rotary tables cover.
    pub max_positions: usize,
}

impl Dims {
    /// Llama-3-8B (Meta-Llama-3-8B's config.json).
    pub const LLAMA3_8B: Dims = Dims {
        hidden: 4096,
        intermediate: 14336,
        layers: 32,
        heads: 32,
        kv_heads: 8,
        vocab: 128_256,
        rope_theta: 500_000.0,
        rms_eps: 1e-5,
        max_positions: 8192,
    };

    /// Width of one head.
    pub fn head_dim(&self) -> usize {
        self.hidden / self.heads
    }

    /// candle-transformers' configuration of these dimensions (no flash attention, as candle
    /// builds without the `flash-attn` feature).
    pub fn config(&self) -> Config {
        Config {
            hidden_size: self.hidden,
            intermediate_size: self.intermediate,
            vocab_size: self.vocab,
            num_hidden_layers: self.layers,
            num_attention_heads: self.heads,
            num_key_value_heads: self.kv_heads,
            use_flash_attn: false,
            rms_norm_eps: self.rms_eps,
            rope_theta: self.rope_theta,
            bos_token_id: None,
            eos_token_id: None,
            rope_scaling: None,
            max_position_embeddings: self.max_positions,
            tie_word_embeddings: false,
        }
    }

    /// Each weight of the quantized model as GGUF names it, with its shape (a matrix's rows
    /// are outputs, its columns inputs). No `output.weight`: the loader then uses the
    /// embedding, a matrix of the same shape, so the output costs what a separate one would.
    pub fn gguf_tensors(&self) -> Vec<(String, Vec<usize>)> {
        let (h, kv) = (self.hidden, self.kv_heads * self.head_dim());
        let mut out = vec![
            ("token_embd.weight".to_string(), vec![self.vocab, h]),
            ("output_norm.weight".to_string(), vec![h]),
        ];
        for i in 0..self.layers {
            let p = |n: &str| format!("blk.{i}.{n}.weight");
            out.extend([
                (p("attn_norm"), vec![h]),
                (p("attn_q"), vec![h, h]),
                (p("attn_k"), vec![kv, h]),
                (p("attn_v"), vec![kv, h]),
                (p("attn_output"), vec![h, h]),
                (p("ffn_norm"), vec![h]),
                (p("ffn_gate"), vec![self.intermediate, h]),
                (p("ffn_up"), vec![self.intermediate, h]),
                (p("ffn_down"), vec![h, self.intermediate]),
            ]);
        }
        out
    }
}

/// Whether a tensor of this name is a norm's weight vector (made 1, as a fresh model's are).
fn is_norm(name: &str) -> bool {
    // Llama's `*_norm.weight`, BERT's `LayerNorm.weight`.
    name.to_ascii_lowercase().ends_with("norm.weight")
}

/// The standard deviation of the synthetic weights: small, so that the activations stay in
/// half precision's range through all the layers.
pub const WEIGHT_STD: f32 = 0.02;

/// A `VarBuilder` backend that makes every tensor it is asked for on the device: the norms'
/// weights 1, everything else normal with [`WEIGHT_STD`].
struct Synthetic;

impl SimpleBackend for Synthetic {
    fn get(
        &self,
        shape: Shape,
        name: &str,
        _: Init,
        dtype: DType,
        dev: &Device,
    ) -> candle_core::Result<Tensor> {
        if is_norm(name) {
            Tensor::ones(shape, dtype, dev)
        } else {
            // cuRAND makes f32 (candle's CUDA randn takes no half types); the cast is the
            // weights' type.
            Tensor::randn(0f32, WEIGHT_STD, shape, dev)?.to_dtype(dtype)
        }
    }

    fn get_unchecked(&self, name: &str, _: DType, _: &Device) -> candle_core::Result<Tensor> {
        candle_core::bail!("synthetic weights need a shape for {name}")
    }

    fn contains_tensor(&self, _: &str) -> bool {
        true
    }
}

/// candle-transformers' Llama with synthetic weights of `dtype` on `dev`.
pub fn llama(dims: &Dims, dtype: DType, dev: &Device) -> Result<Llama> {
    let vb = VarBuilder::from_backend(Box::new(Synthetic), dtype, dev.clone());
    Llama::load(vb, &dims.config()).context("building the synthetic Llama")
}

/// Bytes of one Q4_K block (256 values).
pub const Q4K_BLOCK_BYTES: usize = 144;
/// Values of one Q4_K block.
pub const Q4K_BLOCK_VALUES: usize = 256;

/// The bits of the half `2^-13 · (1 + m / 1024)`: block scales of that size make weights of
/// about 0.02 from 6-bit sub-scales and 4-bit quants, as [`WEIGHT_STD`].
fn small_half(m: u64) -> [u8; 2] {
    // Exponent field 2 (bias 15: 2^-13), mantissa m.
    ((2u16 << 10) | (m as u16 & 0x3ff)).to_le_bytes()
}

/// splitmix64: the next of a fast, seedable stream of random words.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The value of a half's bits (normal numbers only, as [`small_half`] makes them).
fn half_value(bits: [u8; 2]) -> f32 {
    let h = u16::from_le_bytes(bits);
    let exp = i32::from((h >> 10) & 0x1f) - 15;
    (1.0 + f32::from(h & 0x3ff) / 1024.0) * 2f32.powi(exp)
}

/// The bits of the half nearest below `x` (a positive normal half).
fn half_of(x: f32) -> [u8; 2] {
    let bits = x.to_bits();
    let exp = ((bits >> 23) & 0xff) as i32 - 127 + 15;
    debug_assert!((1..31).contains(&exp), "{x} is no normal half");
    (((exp as u16) << 10) | ((bits >> 13) & 0x3ff) as u16).to_le_bytes()
}

/// Random Q4_K blocks filling `out` (a whole number of blocks): the two half scales `d` and
/// `dmin` small and finite, the 12 bytes of packed 6-bit sub-scales and mins and the 128
/// bytes of nibbles anything (every bit pattern is a valid value). A weight is
/// `d·scale·q − dmin·min` with `q` in 0..=15 and the 6-bit scale and min alike on average, so
/// `dmin = 7.5·d` makes the weights zero on average: weights all of one sign (`dmin` as small
/// as `d`) sum coherently over a row, and the activations grew until the decode path's
/// half-precision `q8_1` scales overflowed (NaN logits on the GPU).
pub fn q4k_blocks(out: &mut [u8], seed: u64) {
    let mut state = seed;
    for block in out.chunks_exact_mut(Q4K_BLOCK_BYTES) {
        let w = splitmix(&mut state);
        let d = small_half(w);
        block[0..2].copy_from_slice(&d);
        block[2..4].copy_from_slice(&half_of(7.5 * half_value(d)));
        for chunk in block[4..].chunks_mut(8) {
            let bytes = splitmix(&mut state).to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
    }
}

/// Bytes of one Q8_0 block (32 values).
pub const Q8_0_BLOCK_BYTES: usize = 34;
/// Values of one Q8_0 block.
pub const Q8_0_BLOCK_VALUES: usize = 32;

/// Random Q8_0 blocks filling `out`: a small half scale `d` (as [`small_half`]) and 32 random
/// signed bytes, which are zero on average, so weights of about 0.013 either way.
pub fn q8_0_blocks(out: &mut [u8], seed: u64) {
    let mut state = seed;
    for block in out.chunks_exact_mut(Q8_0_BLOCK_BYTES) {
        block[0..2].copy_from_slice(&small_half(splitmix(&mut state)));
        for chunk in block[2..].chunks_mut(8) {
            let bytes = splitmix(&mut state).to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
    }
}

/// Fills a buffer of whole blocks of one quantized type with random blocks from a seed.
type BlockFiller = fn(&mut [u8], u64);

/// A quantized weight type the synthetic GGUF models are made of: its blocks' size and values,
/// and how random blocks are made.
fn quant_format(kind: GgmlDType) -> Result<(usize, usize, BlockFiller)> {
    Ok(match kind {
        GgmlDType::Q4K => (Q4K_BLOCK_BYTES, Q4K_BLOCK_VALUES, q4k_blocks),
        GgmlDType::Q8_0 => (Q8_0_BLOCK_BYTES, Q8_0_BLOCK_VALUES, q8_0_blocks),
        other => anyhow::bail!("no synthetic {other:?} weights: Q4K or Q8_0"),
    })
}

/// A GGUF file of the model at `dims`, written in memory with candle's writer: the metadata
/// keys `quantized_llama` reads, every matrix Q4_K with random blocks, the norms f32 ones.
pub fn q4k_gguf(dims: &Dims, seed: u64) -> Result<Vec<u8>> {
    gguf(dims, GgmlDType::Q4K, seed)
}

/// As [`q4k_gguf`], every matrix of quantized type `quant` (Q4K or Q8_0).
pub fn gguf(dims: &Dims, quant: GgmlDType, seed: u64) -> Result<Vec<u8>> {
    let (block_bytes, block_values, fill) = quant_format(quant)?;
    let mut tensors = Vec::new();
    for (i, (name, shape)) in dims.gguf_tensors().into_iter().enumerate() {
        let elems: usize = shape.iter().product();
        let tensor = if is_norm(&name) {
            let ones: Vec<u8> = std::iter::repeat_n(1f32.to_le_bytes(), elems)
                .flatten()
                .collect();
            ggml_file::qtensor_from_ggml(GgmlDType::F32, &ones, shape, &Device::Cpu)
        } else {
            anyhow::ensure!(
                shape[shape.len() - 1].is_multiple_of(block_values),
                "{name}: {shape:?} has rows that are not whole {quant:?} blocks"
            );
            let mut bytes = vec![0u8; elems / block_values * block_bytes];
            fill(&mut bytes, seed.wrapping_add(i as u64));
            ggml_file::qtensor_from_ggml(quant, &bytes, shape, &Device::Cpu)
        }
        .with_context(|| format!("making {name}"))?;
        tensors.push((name, tensor));
    }
    let u32_value =
        |v: usize| -> Result<gguf_file::Value> { Ok(gguf_file::Value::U32(u32::try_from(v)?)) };
    let metadata = [
        (
            "general.architecture",
            gguf_file::Value::String("llama".into()),
        ),
        ("llama.attention.head_count", u32_value(dims.heads)?),
        ("llama.attention.head_count_kv", u32_value(dims.kv_heads)?),
        ("llama.block_count", u32_value(dims.layers)?),
        ("llama.embedding_length", u32_value(dims.hidden)?),
        ("llama.feed_forward_length", u32_value(dims.intermediate)?),
        ("llama.rope.dimension_count", u32_value(dims.head_dim())?),
        (
            "llama.attention.layer_norm_rms_epsilon",
            gguf_file::Value::F32(dims.rms_eps as f32),
        ),
        (
            "llama.rope.freq_base",
            gguf_file::Value::F32(dims.rope_theta),
        ),
    ];
    let metadata: Vec<(&str, &gguf_file::Value)> = metadata.iter().map(|(k, v)| (*k, v)).collect();
    let tensors: Vec<(&str, &QTensor)> = tensors.iter().map(|(n, t)| (n.as_str(), t)).collect();
    // The tensors' bytes (each padded to 32) and room for the header: one allocation, not a
    // doubling vector's copies of 4.5 GB.
    let data: usize = tensors
        .iter()
        .map(|(_, t)| t.storage_size_in_bytes() + 32)
        .sum();
    let mut file = Cursor::new(Vec::with_capacity(data + (1 << 20)));
    gguf_file::write(&mut file, &metadata, &tensors).context("writing the GGUF file")?;
    Ok(file.into_inner())
}

/// candle-transformers' quantized Llama read from the GGUF `file` onto `dev`.
pub fn quantized(file: Vec<u8>, dev: &Device) -> Result<ModelWeights> {
    let mut reader = Cursor::new(file);
    let content = gguf_file::Content::read(&mut reader).context("reading the GGUF header")?;
    ModelWeights::from_gguf(content, &mut reader, dev).context("loading the quantized Llama")
}

/// A loaded model of either kind, and what a generation keeps between its forward passes.
pub enum Model {
    /// The full-precision model and the configuration its caches are made from.
    Full {
        /// The model.
        llama: Llama,
        /// Its configuration.
        config: Config,
        /// Its weights' type (the caches' too).
        dtype: DType,
        /// The key-value cache of the current generation.
        cache: Option<Cache>,
    },
    /// The quantized model (it holds its key-value cache itself).
    Quantized(ModelWeights),
    /// An encoder: each forward pass encodes its tokens alone (no cache).
    Bert(BertModel),
}

/// BERT-base (candle-transformers' default configuration) with at most `layers` of its 12
/// layers, synthetic weights of `dtype` on `dev`.
pub fn bert(layers: usize, dtype: DType, dev: &Device) -> Result<BertModel> {
    let config = bert::Config {
        num_hidden_layers: layers.min(bert::Config::default().num_hidden_layers),
        ..bert::Config::default()
    };
    let vb = VarBuilder::from_backend(Box::new(Synthetic), dtype, dev.clone());
    BertModel::load(vb, &config).context("building the synthetic BERT")
}

impl Model {
    /// The model of `kind` at `dims` on `dev`, its weights made from `seed` (Q4_K; the full
    /// models' come from the device's generator).
    pub fn load(kind: Kind, dims: &Dims, dev: &Device, seed: u64) -> Result<Model> {
        Ok(match kind {
            Kind::Bf16 | Kind::F16 => {
                let dtype = if kind == Kind::Bf16 {
                    DType::BF16
                } else {
                    DType::F16
                };
                Model::Full {
                    llama: llama(dims, dtype, dev)?,
                    config: dims.config(),
                    dtype,
                    cache: None,
                }
            }
            Kind::Q4k => Model::Quantized(quantized(q4k_gguf(dims, seed)?, dev)?),
            Kind::Q8_0 => Model::Quantized(quantized(gguf(dims, GgmlDType::Q8_0, seed)?, dev)?),
            Kind::Bert => Model::Bert(bert(dims.layers, DType::F32, dev)?),
        })
    }

    /// Starts a new generation: an empty key-value cache.
    pub fn reset(&mut self, dev: &Device) -> Result<()> {
        match self {
            Model::Full {
                config,
                dtype,
                cache,
                ..
            } => *cache = Some(Cache::new(true, *dtype, config, dev)?),
            Model::Quantized(m) => m.clear_kv_cache(),
            Model::Bert(_) => {}
        }
        Ok(())
    }

    /// The logits of the last of `tokens` (1 × n token ids) at position `pos`, appending
    /// their keys and values to the cache.
    pub fn forward(&mut self, tokens: &Tensor, pos: usize) -> Result<Tensor> {
        Ok(match self {
            Model::Full {
                llama,
                cache: Some(cache),
                ..
            } => llama.forward(tokens, pos, cache)?,
            Model::Full { cache: None, .. } => anyhow::bail!("forward before reset"),
            Model::Quantized(m) => m.forward(tokens, pos)?,
            // The last token's hidden state stands for the logits (1 × 768).
            Model::Bert(m) => {
                let hidden = m.forward(tokens, &tokens.zeros_like()?, None)?;
                let n = hidden.dim(1)?;
                hidden.narrow(1, n - 1, 1)?.squeeze(1)?
            }
        })
    }
}

/// The `i`-th of the fixed token ids a run feeds (prompt and generated tokens alike), spread
/// over the vocabulary.
pub fn token(i: usize, vocab: usize) -> u32 {
    ((i * 7919 + 1) % vocab) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Llama small enough for the CPU: two blocks, Q4_K-sized rows.
    const TINY: Dims = Dims {
        hidden: 256,
        intermediate: 512,
        layers: 2,
        heads: 2,
        kv_heads: 1,
        vocab: 512,
        rope_theta: 500_000.0,
        rms_eps: 1e-5,
        max_positions: 64,
    };

    #[test]
    fn gguf_reads_back_with_the_shapes_and_types_written() {
        let file = q4k_gguf(&TINY, 7).unwrap();
        let mut reader = Cursor::new(file);
        let content = gguf_file::Content::read(&mut reader).unwrap();
        let wanted = TINY.gguf_tensors();
        assert_eq!(content.tensor_infos.len(), wanted.len());
        for (name, shape) in &wanted {
            let info = &content.tensor_infos[name];
            assert_eq!(info.shape.dims(), shape.as_slice(), "{name}");
            let want = if is_norm(name) {
                GgmlDType::F32
            } else {
                GgmlDType::Q4K
            };
            assert_eq!(info.ggml_dtype, want, "{name}");
        }
        let md = |k: &str| content.metadata[k].to_u32().unwrap() as usize;
        assert_eq!(md("llama.block_count"), 2);
        assert_eq!(md("llama.attention.head_count_kv"), 1);
        assert_eq!(md("llama.rope.dimension_count"), 128);
        let norm = content
            .tensor(&mut reader, "blk.1.ffn_norm.weight", &Device::Cpu)
            .unwrap()
            .dequantize(&Device::Cpu)
            .unwrap();
        assert_eq!(norm.to_vec1::<f32>().unwrap(), vec![1f32; 256]);
    }

    #[test]
    fn half_bits_round_trip_through_their_value() {
        for m in [0u64, 1, 511, 1023] {
            let d = small_half(m);
            assert_eq!(half_of(half_value(d)), d);
            assert_eq!(half_value(d), 2f32.powi(-13) * (1.0 + m as f32 / 1024.0));
        }
        assert_eq!(
            half_value(half_of(7.5 * 2f32.powi(-13))),
            7.5 * 2f32.powi(-13)
        );
    }

    #[test]
    fn q4k_weights_are_finite_and_small() {
        let mut bytes = vec![0u8; 64 * Q4K_BLOCK_BYTES];
        q4k_blocks(&mut bytes, 3);
        let t = ggml_file::qtensor_from_ggml(GgmlDType::Q4K, &bytes, vec![64, 256], &Device::Cpu)
            .unwrap();
        let w = t.dequantize(&Device::Cpu).unwrap().flatten_all().unwrap();
        let w = w.to_vec1::<f32>().unwrap();
        assert!(w.iter().all(|v| v.is_finite() && v.abs() < 0.25), "{w:?}");
        let mean_abs = w.iter().map(|v| v.abs()).sum::<f32>() / w.len() as f32;
        assert!((0.005..0.1).contains(&mean_abs), "{mean_abs}");
        // Zero on average, over many blocks (a sub-block's mean is 7.5·d·(scale − min), about
        // 0.03 either way): a row's sum does not grow with its length.
        let mut many = vec![0u8; 4096 * Q4K_BLOCK_BYTES];
        q4k_blocks(&mut many, 5);
        let t = ggml_file::qtensor_from_ggml(GgmlDType::Q4K, &many, vec![4096, 256], &Device::Cpu)
            .unwrap();
        let w = t.dequantize(&Device::Cpu).unwrap().flatten_all().unwrap();
        let w = w.to_vec1::<f32>().unwrap();
        let mean = w.iter().sum::<f32>() / w.len() as f32;
        assert!(
            mean.abs() < 0.02 * mean_abs,
            "mean {mean}, mean |w| {mean_abs}"
        );
    }

    #[test]
    fn q8_0_weights_are_finite_small_and_zero_on_average() {
        let mut bytes = vec![0u8; 4096 * Q8_0_BLOCK_BYTES];
        q8_0_blocks(&mut bytes, 3);
        let t =
            ggml_file::qtensor_from_ggml(GgmlDType::Q8_0, &bytes, vec![1024, 128], &Device::Cpu)
                .unwrap();
        let w = t.dequantize(&Device::Cpu).unwrap().flatten_all().unwrap();
        let w = w.to_vec1::<f32>().unwrap();
        assert!(w.iter().all(|v| v.is_finite() && v.abs() < 0.05), "{w:?}");
        let mean_abs = w.iter().map(|v| v.abs()).sum::<f32>() / w.len() as f32;
        assert!((0.005..0.05).contains(&mean_abs), "{mean_abs}");
        let mean = w.iter().sum::<f32>() / w.len() as f32;
        assert!(
            mean.abs() < 0.02 * mean_abs,
            "mean {mean}, mean |w| {mean_abs}"
        );
        let file = gguf(&TINY, GgmlDType::Q8_0, 2).unwrap();
        let content = gguf_file::Content::read(&mut Cursor::new(file)).unwrap();
        assert_eq!(
            content.tensor_infos["blk.0.attn_q.weight"].ggml_dtype,
            GgmlDType::Q8_0
        );
        assert!(gguf(&TINY, GgmlDType::Q6K, 2).is_err());
    }

    #[test]
    fn the_quantized_model_loads_and_runs_on_the_cpu() {
        let mut model =
            Model::Quantized(quantized(q4k_gguf(&TINY, 1).unwrap(), &Device::Cpu).unwrap());
        model.reset(&Device::Cpu).unwrap();
        let prompt: Vec<u32> = (0..5).map(|i| token(i, TINY.vocab)).collect();
        let prompt = Tensor::new(prompt.as_slice(), &Device::Cpu)
            .unwrap()
            .unsqueeze(0)
            .unwrap();
        let logits = model.forward(&prompt, 0).unwrap();
        assert_eq!(logits.dims(), &[1, TINY.vocab]);
        let next = Tensor::new(&[[token(5, TINY.vocab)]], &Device::Cpu).unwrap();
        let logits = model.forward(&next, 5).unwrap();
        assert_eq!(logits.dims(), &[1, TINY.vocab]);
    }

    #[test]
    fn the_full_model_loads_and_runs_on_the_cpu() {
        let dev = Device::Cpu;
        // The CPU has no bf16 matrix product in every candle build; f32 exercises the same
        // loading and caching.
        let mut model = Model::Full {
            llama: llama(&TINY, DType::F32, &dev).unwrap(),
            config: TINY.config(),
            dtype: DType::F32,
            cache: None,
        };
        model.reset(&dev).unwrap();
        let prompt = Tensor::new(&[[1u32, 2, 3, 4]], &dev).unwrap();
        assert_eq!(model.forward(&prompt, 0).unwrap().dims(), &[1, TINY.vocab]);
        let next = Tensor::new(&[[5u32]], &dev).unwrap();
        assert_eq!(model.forward(&next, 4).unwrap().dims(), &[1, TINY.vocab]);
    }

    #[test]
    fn bert_loads_and_encodes_on_the_cpu() {
        let dev = Device::Cpu;
        let mut model = Model::Bert(bert(1, DType::F32, &dev).unwrap());
        model.reset(&dev).unwrap();
        let vocab = Kind::Bert.vocab(&TINY);
        assert_eq!(vocab, 30522);
        let prompt: Vec<u32> = (0..5).map(|i| token(i, vocab)).collect();
        let prompt = Tensor::new(prompt.as_slice(), &dev)
            .unwrap()
            .unsqueeze(0)
            .unwrap();
        let out = model.forward(&prompt, 0).unwrap();
        assert_eq!(out.dims(), &[1, 768]);
        let v = out.flatten_all().unwrap().to_vec1::<f32>().unwrap();
        assert!(v.iter().all(|x| x.is_finite()));
        // Its layer norms' weights are ones, as Llama's norms are.
        assert!(is_norm("bert.encoder.layer.0.output.LayerNorm.weight"));
        assert!(!is_norm("bert.encoder.layer.0.output.LayerNorm.bias"));
    }

    #[test]
    fn llama3_8b_has_its_published_shapes() {
        let d = Dims::LLAMA3_8B;
        assert_eq!(d.head_dim(), 128);
        let t = d.gguf_tensors();
        assert_eq!(t.len(), 2 + 9 * 32);
        let elems: usize = t.iter().map(|(_, s)| s.iter().product::<usize>()).sum();
        // Llama-3-8B's 8.03 billion parameters less the output matrix (0.53 billion), which
        // the quantized model shares with the embedding.
        assert!((7_400_000_000..7_600_000_000).contains(&elems), "{elems}");
    }

    #[test]
    fn kinds_parse_their_names() {
        for k in [Kind::Bf16, Kind::F16, Kind::Q4k, Kind::Q8_0, Kind::Bert] {
            assert_eq!(Kind::parse(k.name()).unwrap(), k);
        }
        assert!(Kind::parse("q8").is_err());
    }
}
