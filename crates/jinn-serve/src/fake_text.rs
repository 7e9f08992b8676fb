//! A deterministic stand-in text model for tests: it "generates" the prompt's characters in
//! reverse order, one character per token, cycling, so a client can check every piece.

use crate::model::ModelError;
use crate::text::{check_prompt_fits, GenerateParams, GenerateStats, TextModel, TextModelInfo};
use std::time::Duration;

/// The fake text model: one token per character, context `context` characters.
pub struct FakeText {
    info: TextModelInfo,
    /// Time each generated token takes (simulated inference).
    token_delay: Duration,
}

impl FakeText {
    /// A fake text model with a context of `context` characters and `token_delay` per token.
    pub fn new(context: usize, token_delay: Duration) -> Self {
        let info = TextModelInfo { name: "fake-text".into(), tokenizer: "chars".into(), context };
        FakeText { info, token_delay }
    }

    /// The text [`FakeText::generate`] produces for `prompt` and `max_tokens` (the reference
    /// for tests): the prompt reversed, repeated, cut at `max_tokens` characters.
    pub fn expected(prompt: &str, max_tokens: usize) -> String {
        prompt.chars().rev().cycle().take(max_tokens).collect()
    }
}

impl TextModel for FakeText {
    fn info(&self) -> &TextModelInfo {
        &self.info
    }

    fn generate(
        &self,
        params: &GenerateParams,
        emit: &mut dyn FnMut(&str) -> bool,
    ) -> Result<GenerateStats, ModelError> {
        let prompt_tokens = params.prompt.chars().count();
        check_prompt_fits(prompt_tokens, self.info.context)?;
        let mut tokens = 0;
        for c in Self::expected(&params.prompt, params.max_tokens).chars() {
            std::thread::sleep(self.token_delay);
            tokens += 1;
            if !emit(c.encode_utf8(&mut [0; 4])) {
                break;
            }
        }
        Ok(GenerateStats { prompt_tokens, tokens })
    }
}
