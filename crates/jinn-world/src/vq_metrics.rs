//! Running sums of a VQ autoencoder's metrics (the tokenizer and the LAM report the same ones):
//! loss terms per forward, reconstruction PSNR/SSIM per forward that computes them, and code
//! counts for the codebook usage.

use burn::tensor::Tensor;
use jinn_data::metrics::{mean_psnr, mean_ssim};
use jinn_data::FrameShape;
use jinn_nn::CodeUsage;
use jinn_train::train_loop::Metrics;
use jinn_train::Result;

/// Sums over forwards; [`VqSums::into_metrics`] turns them into means.
#[derive(Default)]
pub(crate) struct VqSums {
    loss: f64,
    mse: f64,
    q_loss: f64,
    commitment: f64,
    psnr: f64,
    ssim: f64,
    code_counts: Vec<u64>,
    /// Forwards summed into the loss terms.
    count: usize,
    /// Forwards summed into `psnr` and `ssim`.
    image_count: usize,
}

fn scalar(t: &Tensor<1>) -> f64 {
    t.clone().into_scalar::<f32>() as f64
}

impl VqSums {
    /// Add one forward's loss terms (`[1]` each).
    pub(crate) fn add_losses(
        &mut self,
        loss: &Tensor<1>,
        mse: &Tensor<1>,
        q_loss: &Tensor<1>,
        commitment: &Tensor<1>,
    ) {
        self.loss += scalar(loss);
        self.mse += scalar(mse);
        self.q_loss += scalar(q_loss);
        self.commitment += scalar(commitment);
        self.count += 1;
    }

    /// Add the PSNR and SSIM of one forward's reconstruction `recon` of `truth` (frames of
    /// `shape` in `[0, 1]`, row-major).
    pub(crate) fn add_images(&mut self, recon: &[f32], truth: &[f32], shape: FrameShape) -> Result<()> {
        self.psnr += mean_psnr(recon, truth, shape)?;
        self.ssim += mean_ssim(recon, truth, shape)?;
        self.image_count += 1;
        Ok(())
    }

    /// Add one forward's code counts.
    pub(crate) fn add_codes(&mut self, usage: &CodeUsage) {
        if self.code_counts.is_empty() {
            self.code_counts = usage.counts.clone();
        } else {
            self.code_counts.iter_mut().zip(&usage.counts).for_each(|(a, c)| *a += c);
        }
    }

    /// Means over the forwards added: the loss terms always, PSNR/SSIM when some forward added
    /// them, the codebook usage (share of codes used at least once) when some added codes.
    pub(crate) fn into_metrics(self) -> Metrics {
        let n = self.count.max(1) as f64;
        let mut metrics = Metrics::from([
            ("loss".to_string(), self.loss / n),
            ("mse".to_string(), self.mse / n),
            ("q_loss".to_string(), self.q_loss / n),
            ("commitment_loss".to_string(), self.commitment / n),
        ]);
        if self.image_count > 0 {
            let n = self.image_count as f64;
            metrics.insert("psnr".to_string(), self.psnr / n);
            metrics.insert("ssim".to_string(), self.ssim / n);
        }
        if !self.code_counts.is_empty() {
            metrics
                .insert("codebook_usage".to_string(), CodeUsage { counts: self.code_counts }.fraction_used());
        }
        metrics
    }
}
