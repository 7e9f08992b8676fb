//! `jinn bench …`: benchmarks that report ratios against a baseline measured in the same run
//! (machines are noisy; only ratios carry over between them).

mod data;
mod gpu;
mod graph;
mod lm;
#[cfg(feature = "mpi")]
mod mpi;
mod rev;
mod sample;
mod serve;
mod sfd;
mod text;
mod train;

use clap::Subcommand;

/// Benchmarks.
#[derive(Subcommand)]
pub enum BenchCommand {
    /// Loader frames/s with 1 and 2 threads (vs. bare decoding), and write throughput (vs.
    /// bare zstd), on zstd ArrayRecord clips of a built-in game.
    Data(data::DataBenchArgs),
    /// Median / p10 / p90 ms per training step (forward, backward, AdamW) of the tokenizer, LAM
    /// or MaskGIT dynamics and peak RSS, against the targets (3× faster than Jasmine at 0.4× its
    /// memory) and Jasmine's figures.
    Train(train::TrainBenchArgs),
    /// MGT tokenizer vs plain BPE (and HF tokenizers with `--features hf-baseline`): encode
    /// MB/s, tokens per word, morph-boundary F1 against hunspell; same corpus and vocab.
    #[command(alias = "text")]
    Tokenizer(text::TokenizerBenchArgs),
    /// Knowledge-graph link prediction (Nations, UMLS) and 2-hop path questions vs baselines.
    Graph(graph::GraphBenchArgs),
    /// RSF language model vs the standard transformer of equal size on Shakespeare: val bits
    /// per byte, peak memory across depths (fresh processes), KV-cached generation tokens/s.
    Lm(lm::LmBenchArgs),
    /// Peak memory and step time of a reversible stack, standard vs memory-free backprop,
    /// across depths (each configuration in a fresh process).
    Rev(rev::RevBenchArgs),
    /// Step latency (p50/p95) and frames/s through the HTTP API vs. calling the model directly,
    /// with the fake model or a trained one (`--ckpt`).
    Serve(serve::ServeBenchArgs),
    /// Reconstruction error and validation loss of a depth-64 reversible byte LM trained with
    /// AdamW vs SFD at the same learning rate (memory-free backprop).
    Sfd(sfd::SfdBenchArgs),
    /// World-model rollout frames/s: causal and MaskGIT sampling with vs without KV caches.
    Sample(sample::SampleBenchArgs),
    /// On a GPU (default `--device wgpu`): the matmul peak, then the training steps of the
    /// tokenizer, LAM and MaskGIT dynamics (jasmine-small) and the jasmine-default tokenizer
    /// in f32 and bf16 (ms/step, device memory, share of the peak), and sampling frames/s.
    Gpu(gpu::GpuBenchArgs),
    /// Tokenizer training samples/s of N data-parallel ranks vs 1 rank under mpirun
    /// (interleaved runs; build with --features mpi).
    #[cfg(feature = "mpi")]
    Mpi(mpi::MpiBenchArgs),
}

/// Run a benchmark.
pub fn run(cmd: BenchCommand) -> anyhow::Result<()> {
    match cmd {
        BenchCommand::Data(a) => data::run(a),
        BenchCommand::Train(a) => train::run(a),
        BenchCommand::Tokenizer(a) => text::run(a),
        BenchCommand::Graph(a) => graph::run(a),
        BenchCommand::Lm(a) => lm::run(a),
        BenchCommand::Rev(a) => rev::run(a),
        BenchCommand::Serve(a) => serve::run(a),
        BenchCommand::Sample(a) => sample::run(a),
        BenchCommand::Sfd(a) => sfd::run(a),
        BenchCommand::Gpu(a) => gpu::run(a),
        #[cfg(feature = "mpi")]
        BenchCommand::Mpi(a) => mpi::run(a),
    }
}
