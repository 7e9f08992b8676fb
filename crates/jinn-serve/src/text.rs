//! The text-model interface behind `POST /v1/lm/generate`: a prompt in, generated text out,
//! piece by piece.

use crate::model::ModelError;
use serde::Serialize;

/// What a text model is and what it accepts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TextModelInfo {
    /// Model name (the run directory's name, or "fake-text").
    pub name: String,
    /// How text becomes tokens ("mgt", "bytes", …).
    pub tokenizer: String,
    /// Longest token sequence the model attends over (prompt and generated tokens together).
    pub context: usize,
}

/// One generation request, already checked against the server's limits.
#[derive(Debug, Clone, PartialEq)]
pub struct GenerateParams {
    /// The prompt: non-empty UTF-8.
    pub prompt: String,
    /// Tokens to generate at most (≥ 1).
    pub max_tokens: usize,
    /// Softmax temperature; 0 means argmax.
    pub temperature: f32,
    /// Sample among the `top_k` most likely tokens; 0 means all of them.
    pub top_k: usize,
    /// Seed of the sampler: the same request with the same seed gives the same text.
    pub seed: u64,
}

/// What a finished generation reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct GenerateStats {
    /// Tokens the prompt encoded to.
    pub prompt_tokens: usize,
    /// Tokens generated.
    pub tokens: usize,
}

/// A text generator. The server serialises calls per model.
pub trait TextModel: Send + Sync {
    /// Name, tokenizer, context length.
    fn info(&self) -> &TextModelInfo;

    /// Generate from `params.prompt`, handing each new piece of text to `emit` as soon as it is
    /// known. Pieces are valid UTF-8: a model whose tokens can split a character (bytes) holds
    /// the partial bytes back until the character is complete. Stop early, with `Ok`, when
    /// `emit` returns `false` (the client has gone). Check the prompt (too many tokens for the
    /// context, characters the tokenizer cannot encode) before emitting anything, and return
    /// [`ModelError::BadInput`] for it.
    fn generate(
        &self,
        params: &GenerateParams,
        emit: &mut dyn FnMut(&str) -> bool,
    ) -> Result<GenerateStats, ModelError>;
}

/// [`ModelError::BadInput`] unless a prompt of `prompt_tokens` tokens leaves room for at least
/// one generated token in a context of `context` tokens (an empty prompt is refused too).
pub fn check_prompt_fits(prompt_tokens: usize, context: usize) -> Result<(), ModelError> {
    if prompt_tokens == 0 || prompt_tokens >= context {
        return Err(ModelError::BadInput(format!(
            "the prompt is {prompt_tokens} tokens; this model's context holds {context} (prompt and at least \
             one generated token)"
        )));
    }
    Ok(())
}
