//! A trained language model behind the server's [`TextModel`] interface (`jinn play --lm`).

use burn::tensor::Device;
use jinn_serve::text::check_prompt_fits;
use jinn_serve::{GenerateParams, GenerateStats, ModelError, TextModel, TextModelInfo};
use jinn_text::lm::{generate, LmError, Sampling, TrainedLm, Utf8Stream};
use std::path::Path;
use std::sync::Mutex;

/// A loaded language model and what the API reports about it.
pub struct LmText {
    /// The model; Burn modules are used from one thread at a time.
    trained: Mutex<TrainedLm>,
    info: TextModelInfo,
}

impl LmText {
    /// Load the newest good checkpoint of the LM run `run` onto `device`.
    pub fn load(run: &Path, device: &Device) -> anyhow::Result<Self> {
        let trained =
            TrainedLm::load(run, device).map_err(|e| anyhow::anyhow!("--lm {}: {e}", run.display()))?;
        let name = run.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "lm".into());
        let tokenizer = match trained.tokenizer.spec() {
            jinn_text::lm::TokenizerSpec::Bytes => "bytes".to_string(),
            _ => "mgt".to_string(),
        };
        let info = TextModelInfo { name, tokenizer, context: trained.model.max_seq };
        Ok(LmText { trained: Mutex::new(trained), info })
    }
}

impl TextModel for LmText {
    fn info(&self) -> &TextModelInfo {
        &self.info
    }

    /// Generates at most the context's free room after the prompt (`max_tokens` is cut to it).
    fn generate(
        &self,
        params: &GenerateParams,
        emit: &mut dyn FnMut(&str) -> bool,
    ) -> Result<GenerateStats, ModelError> {
        let trained = self.trained.lock().unwrap_or_else(|p| p.into_inner());
        let prompt = trained.tokenizer.encode(&params.prompt);
        let context = self.info.context;
        check_prompt_fits(prompt.len(), context)?;
        let max_tokens = params.max_tokens.min(context - prompt.len());
        let sampling = Sampling { temperature: params.temperature as f64, top_k: params.top_k };
        let mut rng = jinn_data::rng::rng_for(params.seed, "lm-generate", 0);
        let mut text = Utf8Stream::default();
        let mut failure = None;
        let tokens = generate(&trained.model, &prompt, max_tokens, sampling, &mut rng, |id| {
            match trained.tokenizer.decode_bytes(&[id]) {
                Ok(bytes) => {
                    let piece = text.push(&bytes);
                    piece.is_empty() || emit(&piece)
                }
                Err(e) => {
                    failure = Some(e);
                    false
                }
            }
        })
        .map_err(|e| match e {
            LmError::Sampling { .. } | LmError::EmptyPrompt | LmError::TooLong { .. } => {
                ModelError::BadInput(e.to_string())
            }
            e => ModelError::Failed(e.to_string()),
        })?;
        if let Some(e) = failure {
            return Err(ModelError::Failed(e.to_string()));
        }
        let rest = text.finish();
        if !rest.is_empty() {
            emit(&rest);
        }
        Ok(GenerateStats { prompt_tokens: prompt.len(), tokens: tokens.len() })
    }
}
