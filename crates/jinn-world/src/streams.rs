//! Random draws inside a training step come one stream per clip ([`SampleStreams`], keyed to
//! the clip's global index), so a clip's dropout, mask or noise is the same whichever rank or
//! micro-batch holds it.

use jinn_data::rng::SampleStreams;
use jinn_nn::NnError;
use rand_chacha::ChaCha8Rng;

/// The generators of a batch of `clips` clips; an error when `streams` covers another count.
pub(crate) fn clip_rngs(streams: &SampleStreams, clips: usize) -> Result<Vec<ChaCha8Rng>, NnError> {
    if streams.count != clips {
        return Err(NnError::InvalidConfig {
            field: "random streams",
            reason: format!(
                "{} streams (`{}`) for a batch of {clips} clips; one per clip is needed",
                streams.count, streams.purpose
            ),
        });
    }
    Ok(streams.rngs())
}
