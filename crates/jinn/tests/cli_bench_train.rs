//! `jinn bench train --task lam|dynamics` at tiny sizes (dynamics of the MaskGIT and diffusion
//! kinds): the figures are printed, parse, and
//! agree with each other (percentiles ordered, ratios = figure / reference, step rate and floor
//! = matmul work / time and / peak); `--jasmine-ms/--jasmine-mb` add a same-host line whose
//! verdicts follow its ratios; a bad `--task` or Jasmine figure is a clear error. `jinn bench
//! gpu` runs end to end (on the CPU backend here; on wgpu in the software-GPU lane's manual run).

use std::process::{Command, Output};

fn jinn(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_jinn")).args(args).env("RUST_BACKTRACE", "0").output().expect("run jinn")
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// The numbers in the output line that starts with `prefix`: the words that are a number once
/// punctuation and `×` are trimmed (`×1.25,` and `(117` alike; not `p10`).
fn numbers(out: &str, prefix: &str) -> Vec<f64> {
    let line = out
        .lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no `{prefix}` line in:\n{out}"));
    line[prefix.len()..]
        .split_whitespace()
        .map(|w| w.trim_start_matches(['(', '×']).trim_end_matches([',', ')', ':']))
        .filter(|w| {
            w.starts_with(|c: char| c.is_ascii_digit()) && w.chars().all(|c| c.is_ascii_digit() || c == '.')
        })
        .map(|w| w.parse::<f64>().unwrap_or_else(|e| panic!("`{w}` in `{line}`: {e}")))
        .collect()
}

/// The ratio printed as `{label} ×R` in the line that starts with `prefix`.
fn ratio(out: &str, prefix: &str, label: &str) -> f64 {
    let line = out.lines().find(|l| l.starts_with(prefix)).unwrap();
    let rest =
        line.split(&format!("{label} ×")).nth(1).unwrap_or_else(|| panic!("no `{label} ×` in `{line}`"));
    let number = rest.split([',', ' ']).next().unwrap();
    number.parse().unwrap_or_else(|e| panic!("`{number}` in `{line}`: {e}"))
}

/// Run one tiny benchmark with `sets` overrides and `extra` flags, check its figures against
/// the (ms, MB) of the `target` and of `jasmine`, and return the output with the median ms and
/// the peak MB it printed.
fn check_bench(
    task: &str,
    sets: &[&str],
    extra: &[&str],
    target: (f64, f64),
    jasmine: (f64, f64),
) -> (String, f64, f64) {
    let mut args = vec!["bench", "train", "--task", task, "--steps", "2", "--warmup", "0"];
    for s in sets {
        args.extend(["--set", s]);
    }
    args.extend(extra);
    let o = jinn(&args);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(out.lines().next().is_some_and(|l| l.contains("batch 1 × 2 frames")), "{out}");

    let t = numbers(&out, "ms/step:");
    let (median, p10, p90) = (t[0], t[1], t[2]);
    assert_eq!(t[3], 2.0, "timed steps: {out}");
    assert!(0.0 < p10 && p10 <= median && median <= p90, "{out}");
    let peak = numbers(&out, "peak RSS:")[0];
    assert!(peak > 1.0, "{out}");

    // `vs target (117 ms, 480 MB: 3× faster …): time ×a, memory ×b`; the printed figures are rounded.
    for (prefix, (ms, mb)) in [("vs target", target), ("vs Jasmine", jasmine)] {
        let v = numbers(&out, prefix);
        let (time, memory) = (ratio(&out, prefix, "time"), ratio(&out, prefix, "memory"));
        assert!((v[0] - ms).abs() <= 0.5, "{prefix} ms: {out}");
        // Ratios are printed to 0.01, the median to 0.1 ms and the peak to 1 MB.
        assert!((time - median / ms).abs() <= 0.008, "{prefix} time ratio: {out}");
        assert!((memory - peak / mb).abs() <= 0.008, "{prefix} memory ratio: {out}");
    }

    // `matmul work: G GFLOP/step (…); the step ran at R GFLOP/s, S% of … peak (P GFLOP/s on …)`
    // to four significant digits.
    let work = numbers(&out, "matmul work:");
    let (gflop, rate, peak_rate) = (work[0], work[1], work[2]);
    assert!(gflop > 0.0 && peak_rate > 0.0, "{out}");
    let close = |a: f64, b: f64| (a - b).abs() <= 2e-3 * b.abs();
    // The median is printed to 0.1 ms, so the rate lies between those of median ± 0.05.
    let (slow, fast) = (gflop / ((median + 0.05) / 1e3), gflop / ((median - 0.05).max(1e-9) / 1e3));
    assert!(slow * 0.998 <= rate && rate <= fast * 1.002, "step rate: {out}");
    // `compute floor: F ms/step (…); the T ms target needs R GFLOP/s over the whole step, …`
    let floor = numbers(&out, "compute floor:");
    // The peak is printed to 0.1 GFLOP/s: on a slow or busy host that is only three digits.
    let peak_rounding = 0.05 / peak_rate;
    assert!((floor[0] - gflop / peak_rate * 1e3).abs() <= (2e-3 + peak_rounding) * floor[0], "floor: {out}");
    assert!((floor[1] - target.0.round()).abs() < 1e-9, "floor target: {out}");
    assert!(close(floor[2], gflop / (target.0 / 1e3)), "rate the target needs: {out}");
    (out, median, peak)
}

/// The LAM bench config at a tiny size.
#[rustfmt::skip]
const TINY_LAM: [&str; 11] = [
    "model.height=16", "model.width=16", "model.patch=8", "model.model_dim=16", "model.ffn_dim=32",
    "model.num_heads=2", "model.encoder_blocks=1", "model.decoder_blocks=1", "model.latent_dim=8",
    "train.batch_size=1", "data.seq_len=2",
];

#[test]
fn lam_bench_prints_consistent_figures() {
    let (out, ..) = check_bench("lam", &TINY_LAM, &[], (350.0 / 3.0, 480.0), (350.0, 1200.0));
    assert!(!out.contains("on this host"), "no same-host line without --jasmine-ms: {out}");
}

#[test]
fn a_jasmine_measurement_on_this_machine_is_judged_by_the_target_ratios() {
    // A tiny step against made-up Jasmine figures: 0.6 ms and 9 MB (the step is slower than a
    // third of that and the process larger than 0.4×: both verdicts "misses"), then 600 s and
    // 9 TB (both "meets"). The verdicts must follow the printed ratios.
    for (ms, mb) in [("0.6", "9"), ("600000", "9000000")] {
        let extra = ["--jasmine-ms", ms, "--jasmine-mb", mb];
        let (out, median, peak) =
            check_bench("lam", &TINY_LAM, &extra, (350.0 / 3.0, 480.0), (350.0, 1200.0));
        let prefix = "vs Jasmine on this host";
        let (ms, mb): (f64, f64) = (ms.parse().unwrap(), mb.parse().unwrap());
        let (time, memory) = (ratio(&out, prefix, "time"), ratio(&out, prefix, "memory"));
        // The median is printed to 0.1 ms, the peak to 1 MB and the ratios to 0.01.
        assert!((time - median / ms).abs() <= 0.05 / ms + 0.006, "time ratio: {out}");
        assert!((memory - peak / mb).abs() <= 0.5 / mb + 0.006, "memory ratio: {out}");
        let line = out.lines().find(|l| l.starts_with(prefix)).unwrap();
        let verdicts: Vec<&str> = line.matches("meets").chain(line.matches("misses")).collect();
        assert_eq!(verdicts.len(), 2, "{line}");
        let (fast, lean) = (time <= 1.0 / 3.0, memory <= 0.4);
        assert!(line.contains(if time <= 1.0 { "× faster" } else { "× slower" }), "{line}");
        assert_eq!(line.contains("asks ≤ ×0.33: meets"), fast, "{line}");
        assert_eq!(line.contains("(≤ ×0.40: meets)"), lean, "{line}");
    }
    // Without `--jasmine-mb` the line judges the time alone.
    let (out, ..) =
        check_bench("lam", &TINY_LAM, &["--jasmine-ms", "300"], (350.0 / 3.0, 480.0), (350.0, 1200.0));
    let line = out.lines().find(|l| l.starts_with("vs Jasmine on this host (300 ms)")).expect(&out);
    assert!(line.contains("time ×") && !line.contains("memory"), "{line}");
}

#[test]
fn bad_jasmine_figures_are_refused_naming_the_flag() {
    let o = jinn(&["bench", "train", "--task", "lam", "--jasmine-ms", "0"]);
    let out = text(&o);
    assert!(!o.status.success() && out.contains("--jasmine-ms must be a positive number, got 0"), "{out}");
    let o = jinn(&["bench", "train", "--task", "lam", "--jasmine-mb", "900"]);
    let out = text(&o);
    assert!(!o.status.success() && out.contains("--jasmine-ms"), "memory without time: {out}");
}

/// The dynamics bench's tokenizer, LAM and dynamics at a tiny size, with `tokenizer` extra
/// tokenizer settings.
fn tiny_dynamics_sets(tokenizer: &[&str]) -> Vec<String> {
    let mut sets = Vec::new();
    for part in ["tokenizer", "lam"] {
        #[rustfmt::skip]
        let dims = [
            ("height", "16"), ("width", "16"), ("patch", "8"), ("model_dim", "16"), ("ffn_dim", "32"),
            ("num_heads", "2"), ("encoder_blocks", "1"), ("decoder_blocks", "1"), ("latent_dim", "8"),
        ];
        sets.extend(dims.map(|(k, v)| format!("{part}.{k}={v}")));
    }
    sets.extend(tokenizer.iter().map(|s| s.to_string()));
    #[rustfmt::skip]
    let model = [
        "model.model_dim=16", "model.ffn_dim=32", "model.num_heads=2", "model.num_blocks=1",
        "model.action_dim=8", "train.batch_size=1", "data.seq_len=2",
    ];
    sets.extend(model.map(String::from));
    sets
}

#[test]
fn dynamics_bench_prints_consistent_figures() {
    let sets = tiny_dynamics_sets(&["tokenizer.num_codes=16"]);
    let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
    check_bench("dynamics", &sets, &[], (440.0 / 3.0, 480.0), (440.0, 1200.0));
}

#[test]
fn diffusion_dynamics_are_timed_on_an_mae_tokenizer_without_maskgit_references() {
    let mut sets = tiny_dynamics_sets(&["tokenizer.kind=mae"]);
    sets.extend(["model.kind=diffusion", "model.denoise_steps=4"].map(String::from));
    let mut args = vec!["bench", "train", "--task", "dynamics", "--steps", "2", "--warmup", "0"];
    for s in &sets {
        args.extend(["--set", s.as_str()]);
    }
    let o = jinn(&args);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(out.lines().next().is_some_and(|l| l.starts_with("diffusion dynamics width 16")), "{out}");
    assert!(out.contains("MAE latent 8"), "{out}");
    let t = numbers(&out, "ms/step:");
    assert!(t[0] > 0.0 && t[3] == 2.0, "{out}");
    // Jasmine's figures are MaskGIT's: none is printed against diffusion.
    assert!(out.contains("no target or Jasmine figure for diffusion dynamics"), "{out}");
    assert!(!out.contains("vs target") && !out.contains("vs Jasmine"), "{out}");
    assert!(!out.contains("the 147 ms target"), "{out}");

    // A VQ tokenizer section under diffusion dynamics is refused, naming both kinds.
    let mut args = vec!["bench", "train", "--task", "dynamics", "--steps", "1", "--warmup", "0"];
    let vq = tiny_dynamics_sets(&["tokenizer.num_codes=16"]);
    for s in vq.iter().map(String::as_str).chain(["model.kind=diffusion"]) {
        args.extend(["--set", s]);
    }
    let out = text(&jinn(&args));
    assert!(
        out.contains("model.kind is diffusion, which runs on a `mae` tokenizer") && out.contains("`vq`"),
        "{out}"
    );
}

#[test]
fn unknown_task_is_a_clap_error() {
    let o = jinn(&["bench", "train", "--task", "vae"]);
    let out = text(&o);
    assert!(!o.status.success(), "{out}");
    assert!(out.contains("invalid value 'vae' for '--task"), "{out}");
    assert!(out.contains("tokenizer") && out.contains("lam") && out.contains("dynamics"), "{out}");
}

/// `jinn bench gpu` on the CPU over the jasmine-small rows at tiny sizes (one clip of two
/// frames, 64² peak products, no warm-up), with `extra` flags.
fn bench_gpu_tiny(extra: &[&str]) -> Output {
    #[rustfmt::skip]
    let mut args = vec![
        "bench", "gpu", "--device", "cpu", "--rows", "small", "--warmup", "0", "--peak-side", "64",
        "--set", "train.batch_size=1", "--set", "data.seq_len=2",
    ];
    args.extend_from_slice(extra);
    jinn(&args)
}

#[test]
fn bench_gpu_prints_every_row_against_its_measured_matmul_peak() {
    let o = bench_gpu_tiny(&["--steps", "2", "--sample-frames", "2"]);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(out.contains("device: cpu"), "{out}");
    let peak = numbers(&out, "f32 matmul peak:")[0];
    assert!(peak > 0.0, "{out}");
    // Every model trains in f32 and bf16, and the CPU backend computes in both (bf16 emulated).
    for model in [
        "Tokenizer (jasmine-small/tokenizer)",
        "LAM (jasmine-small/lam)",
        "MaskGIT dynamics (jasmine-small/dynamics)",
    ] {
        for precision in ["f32", "bf16"] {
            let row = format!("{model} {precision}:");
            let line = out.lines().find(|l| l.contains(&row)).unwrap_or_else(|| panic!("no {row}:\n{out}"));
            let before = |unit: &str| -> f64 {
                let head = line.split(unit).next().unwrap();
                head.rsplit([' ', '='])
                    .find(|w| !w.is_empty())
                    .unwrap()
                    .parse()
                    .unwrap_or_else(|e| panic!("{line}: {e}"))
            };
            // The share is the step's rate over the peak of the same precision.
            let (ms, rate, share) = (before(" ms/step"), before(" TFLOP/s"), before("% of the matmul peak"));
            assert!(ms > 0.0 && rate > 0.0, "{line}");
            let peak = numbers(&out, &format!("{precision} matmul peak:"))[0];
            let expected = 100.0 * rate / peak;
            assert!(
                (share - expected).abs() <= 0.05 * expected + 0.1,
                "{row}: {share}% vs {expected}%\n{out}"
            );
        }
    }
    assert!(out.contains("frames/s"), "{out}");
}

#[test]
fn bench_gpu_reports_a_failing_row_and_still_runs_the_others() {
    // `model.patch` (16, the configs' own value) is a field of the tokenizer and the LAM but
    // not of the dynamics: the dynamics rows fail naming it, the others still report their
    // figures, and the command exits with a failure that names the failed rows.
    let o = bench_gpu_tiny(&["--steps", "1", "--sample-frames", "0", "--set", "model.patch=16"]);
    let out = text(&o);
    assert!(!o.status.success(), "{out}");
    for precision in ["f32", "bf16"] {
        for model in ["Tokenizer (jasmine-small/tokenizer)", "LAM (jasmine-small/lam)"] {
            let row = format!("=> {model} {precision}: ");
            let line = out.lines().find(|l| l.starts_with(&row)).unwrap_or_else(|| panic!("no {row}\n{out}"));
            assert!(line.contains(" ms/step") && !line.contains("FAILED"), "{line}");
        }
        let row = format!("=> MaskGIT dynamics (jasmine-small/dynamics) {precision}: FAILED: ");
        let at = out.find(&row).unwrap_or_else(|| panic!("no {row}\n{out}"));
        assert!(out[at..].contains("unknown field `patch`"), "{out}");
    }
    assert!(out.contains("2 row(s) failed: MaskGIT dynamics (jasmine-small/dynamics) f32;"), "{out}");
}
