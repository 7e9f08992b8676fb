//! Tests of the generator, from simulation to files read back.

use super::*;
use crate::envs::make_env;
use crate::metadata::METADATA_FILE;
use crate::output_dir::{clear_dataset, prepare_output_dir};
use crate::rng::derive_seed;
use std::sync::atomic::{AtomicUsize, Ordering};

fn small_config(env: &str) -> GenerateConfig {
    GenerateConfig {
        env: env.to_string(),
        episodes: 7,
        val_fraction: 0.2,
        test_fraction: 0.1,
        seed: 5,
        frame_shape: FrameShape::rgb(24, 32),
        min_episode_len: 20,
        max_episode_len: 60,
        chunk_len: 16,
        chunks_per_file: 3,
        threads: 2,
        ..GenerateConfig::default()
    }
}

fn err_text<T: std::fmt::Debug>(r: Result<T>) -> String {
    r.expect_err("expected an error").to_string()
}

#[test]
fn defaults_are_valid_and_documented_values() {
    let cfg = GenerateConfig::default();
    cfg.validate().unwrap();
    assert_eq!((cfg.chunk_len, cfg.chunks_per_file), (160, 100));
    assert_eq!(cfg.frame_shape, FrameShape::rgb(64, 64));
    assert_eq!(split_counts(cfg.episodes, cfg.val_fraction, cfg.test_fraction).unwrap(), [900, 50, 50]);
}

#[test]
fn split_counts_round_keep_requested_splits_and_leave_train_episodes() {
    assert_eq!(split_counts(10, 0.1, 0.0).unwrap(), [9, 1, 0]);
    assert_eq!(split_counts(10, 0.25, 0.14).unwrap(), [6, 3, 1]); // 2.5 rounds up, 1.4 down
    assert_eq!(split_counts(3, 0.01, 0.01).unwrap(), [1, 1, 1]); // a positive fraction gets one
    assert_eq!(split_counts(5, 0.0, 0.0).unwrap(), [5, 0, 0]);
    let err = err_text(split_counts(2, 0.01, 0.01));
    assert!(err.contains("--episodes") && err.contains("none to train"), "{err}");
    let counts = [4, 2, 1];
    let splits: Vec<usize> = (0..7).map(|i| split_of(i, counts)).collect();
    assert_eq!(splits, [0, 0, 0, 0, 1, 1, 2]);
}

#[test]
fn invalid_settings_name_their_flag() {
    type Breaker = fn(&mut GenerateConfig);
    let cases: Vec<(&str, Breaker)> = vec![
        ("--env", |c| c.env = "pong".into()),
        ("--episodes", |c| c.episodes = 0),
        ("--val-fraction", |c| c.val_fraction = 1.0),
        ("--test-fraction", |c| c.test_fraction = -0.1),
        ("--test-fraction", |c| c.test_fraction = f64::NAN),
        ("--episodes", |c| (c.val_fraction, c.test_fraction) = (0.6, 0.5)),
        ("--height", |c| c.frame_shape = FrameShape::rgb(8, 64)),
        ("--width", |c| c.frame_shape = FrameShape::rgb(64, 4096)),
        ("--min-episode-len", |c| c.min_episode_len = 0),
        ("--max-episode-len", |c| c.max_episode_len = c.min_episode_len - 1),
        ("--max-episode-len", |c| c.max_episode_len = 1 << 40),
        ("--chunk-len", |c| c.chunk_len = 0),
        ("--chunks-per-file", |c| c.chunks_per_file = 0),
        ("--sticky-prob", |c| c.sticky_prob = 1.5),
    ];
    for (flag, break_it) in cases {
        let mut cfg = small_config("maze");
        break_it(&mut cfg);
        let err = cfg.validate().expect_err(flag);
        assert!(matches!(err, DataError::Invalid { .. }));
        assert!(err.to_string().contains(flag), "{flag}: {err}");
        // generate_dataset validates before touching the disk.
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("never");
        assert!(generate_dataset(&cfg, &out, &mut |_| {}).is_err());
        assert!(!out.exists(), "{flag}: nothing created");
    }
}

#[test]
fn episodes_replay_from_their_derived_seed_with_actions_aligned_to_frames() {
    for (env_name, follow_prob) in crate::envs::ENV_NAMES.iter().flat_map(|e| [(e, 0.0), (e, 0.5)]) {
        let cfg = GenerateConfig { follow_prob, ..small_config(env_name) };
        for index in [0u64, 3] {
            let ep = simulate_episode(&cfg, index).unwrap();
            assert_eq!(ep, simulate_episode(&cfg, index).unwrap(), "deterministic");
            let t = ep.len();
            assert!((cfg.min_episode_len..=cfg.max_episode_len).contains(&t), "{env_name}: {t} frames");
            let fb = cfg.frame_shape.frame_bytes();
            assert_eq!(ep.frames.len(), t * fb);
            // Independent replay: the documented seed, frame t observed before action t.
            let base = derive_seed(cfg.seed, "episode", index);
            let mut env =
                make_env(env_name, cfg.frame_shape, derive_seed(base, "env", ep.discarded)).unwrap();
            let mut frame = vec![0u8; fb];
            for (step, &action) in ep.actions.iter().enumerate() {
                assert!((0..env.num_actions() as i64).contains(&action));
                env.render(&mut frame);
                assert_eq!(frame, ep.frames[step * fb..(step + 1) * fb], "{env_name} frame {step}");
                let done = env.step(action as usize).unwrap().done;
                assert_eq!(done, step + 1 < t && done, "an episode stops at its first done");
            }
        }
        assert_ne!(simulate_episode(&cfg, 0).unwrap(), simulate_episode(&cfg, 1).unwrap());
    }
}

#[test]
fn following_the_ball_keeps_breakout_in_play_longer_and_is_recorded() {
    let mean_len = |follow_prob| {
        let cfg = GenerateConfig { follow_prob, max_episode_len: 1000, ..small_config("breakout") };
        (0..6).map(|i| simulate_episode(&cfg, i).unwrap().len()).sum::<usize>() as f64 / 6.0
    };
    let (random, guided) = (mean_len(0.0), mean_len(0.7));
    assert!(guided > 1.3 * random, "mean episode length {guided} guided against {random} random");
    let dir = tempfile::tempdir().unwrap();
    let cfg = GenerateConfig { follow_prob: 0.7, ..small_config("breakout") };
    let meta = generate_dataset(&cfg, dir.path(), &mut |_| {}).unwrap();
    assert_eq!(meta.extra["generator"]["follow_prob"], 0.7);
    assert_eq!(meta.extra["generator"]["policy"], "sticky_random+guide");
    let err = err_text(GenerateConfig { follow_prob: 2.0, ..cfg }.validate());
    assert!(err.contains("--follow-prob"), "{err}");
}

#[test]
fn short_episodes_are_resampled_and_impossible_minimums_fail_clearly() {
    // Random-policy breakout usually ends before 270 frames, so some attempts are discarded.
    let mut cfg = small_config("breakout");
    cfg.frame_shape = FrameShape::rgb(16, 16);
    (cfg.min_episode_len, cfg.max_episode_len) = (270, 280);
    let episodes: Vec<SimulatedEpisode> = (0..3).map(|i| simulate_episode(&cfg, i).unwrap()).collect();
    assert!(episodes.iter().all(|e| e.len() >= 270));
    assert!(episodes.iter().any(|e| e.discarded > 0));
    // Breakout cannot last 5000 frames under a random policy.
    (cfg.min_episode_len, cfg.max_episode_len) = (5000, 5000);
    let err = err_text(simulate_episode(&cfg, 0));
    assert!(err.contains("--min-episode-len") && err.contains("100 attempts"), "{err}");
}

#[test]
fn ordered_parallel_run_matches_serial_and_bounds_work_in_flight() {
    let consumed = AtomicUsize::new(0);
    let produce = |i: usize| -> Result<usize> {
        // Uneven work so threads finish out of order.
        std::thread::sleep(std::time::Duration::from_micros(((i * 7919) % 13) as u64 * 100));
        Ok(i * i)
    };
    for threads in [1, 3, 8] {
        consumed.store(0, Ordering::SeqCst);
        let ahead = AtomicUsize::new(0);
        let produce = |i: usize| {
            ahead.fetch_max(i.saturating_sub(consumed.load(Ordering::SeqCst)), Ordering::SeqCst);
            produce(i)
        };
        let mut seen = vec![];
        for_each_in_order(40, threads, &produce, &mut |i, v| {
            seen.push((i, v));
            consumed.store(i + 1, Ordering::SeqCst);
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, (0..40).map(|i| (i, i * i)).collect::<Vec<_>>(), "{threads} threads");
        assert!(ahead.load(Ordering::SeqCst) < 2 * threads + 1, "{threads} threads ran too far ahead");
    }
}

#[test]
fn ordered_parallel_run_stops_on_errors_and_panics() {
    let mut seen = vec![];
    let err = for_each_in_order(
        30,
        4,
        &|i| if i == 9 { Err(DataError::invalid("x", "producer failed")) } else { Ok(i) },
        &mut |i, _| {
            seen.push(i);
            Ok(())
        },
    );
    assert!(err.unwrap_err().to_string().contains("producer failed"));
    assert_eq!(seen, (0..9).collect::<Vec<_>>());

    let err = for_each_in_order(30, 4, &|i| Ok(i), &mut |i, _| match i {
        5 => Err(DataError::invalid("y", "consumer failed")),
        _ => Ok(()),
    });
    assert!(err.unwrap_err().to_string().contains("consumer failed"));

    let err =
        for_each_in_order(10, 2, &|i| if i == 3 { panic!("boom {i}") } else { Ok(i) }, &mut |_, _| Ok(()));
    let msg = err.unwrap_err().to_string();
    assert!(msg.contains("episode 3") && msg.contains("boom 3"), "{msg}");

    // A panicking consumer does not leave workers waiting forever.
    let caught = std::panic::catch_unwind(|| {
        let _ = for_each_in_order(100, 3, &|i| Ok(i), &mut |i, _| {
            if i == 2 {
                panic!("consumer")
            } else {
                Ok(())
            }
        });
    });
    assert!(caught.is_err());
}

#[test]
fn simulation_and_split_assignment_do_not_depend_on_thread_count() {
    let cfg = small_config("maze");
    let counts = split_counts(cfg.episodes, cfg.val_fraction, cfg.test_fraction).unwrap();
    let run = |threads| {
        let mut out = vec![];
        for_each_in_order(cfg.episodes, threads, &|i| simulate_episode(&cfg, i as u64), &mut |i, ep| {
            out.push((split_of(i, counts), ep));
            Ok(())
        })
        .unwrap();
        out
    };
    let serial = run(1);
    assert_eq!(serial, run(3));
    assert_eq!(serial.iter().map(|(s, _)| *s).collect::<Vec<_>>(), [0, 0, 0, 0, 0, 1, 2]);
    assert_eq!(counts, [5, 1, 1]); // 7 · 0.2 = 1.4 and 7 · 0.1 = 0.7 round to 1
}

#[test]
fn output_directory_must_be_empty_unless_overwriting() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("data");
    std::fs::create_dir_all(out.join("train")).unwrap();
    std::fs::write(out.join("metadata.json"), "{}").unwrap();
    std::fs::write(out.join("train/data_0000.array_record"), "old").unwrap();
    std::fs::write(out.join("train/.data_0001.array_record.tmp-12"), "old").unwrap();
    std::fs::write(out.join("notes.txt"), "keep").unwrap();
    let err = err_text(generate_dataset(&small_config("maze"), &out, &mut |_| {}));
    assert!(err.contains(&out.display().to_string()) && err.contains("--overwrite"), "{err}");
    assert_eq!(std::fs::read(out.join("metadata.json")).unwrap(), b"{}", "untouched");

    prepare_output_dir(&out, true).unwrap();
    assert!(!out.join("metadata.json").exists() && !out.join("train").exists());
    assert_eq!(std::fs::read(out.join("notes.txt")).unwrap(), b"keep", "other files kept");
    // A split directory holding foreign files keeps them (and stays).
    std::fs::create_dir_all(out.join("val")).unwrap();
    std::fs::write(out.join("val/mine.txt"), "keep").unwrap();
    std::fs::write(out.join("val/data_0003.array_record"), "old").unwrap();
    clear_dataset(&out).unwrap();
    assert!(out.join("val/mine.txt").exists() && !out.join("val/data_0003.array_record").exists());

    let fresh = dir.path().join("a/b");
    prepare_output_dir(&fresh, false).unwrap();
    assert!(fresh.is_dir());
    prepare_output_dir(&fresh, false).unwrap(); // empty is fine
    let file = dir.path().join("file");
    std::fs::write(&file, "x").unwrap();
    assert!(err_text(prepare_output_dir(&file, true)).contains("not a directory"));
}

/// Enable after merge: needs the real ArrayRecord writer/reader and pickle codec.
#[test]
fn generated_dataset_reads_back_exactly() {
    use crate::array_record::ArrayRecordReader;
    use crate::pickle::decode_episode;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("ds");
    let cfg = small_config("breakout");
    let mut reports = vec![];
    let meta = generate_dataset(&cfg, &out, &mut |p| reports.push(p)).unwrap();
    assert_eq!(reports.len(), cfg.episodes);
    assert_eq!(reports.last().unwrap().episodes_done, cfg.episodes);
    assert_eq!(meta, DatasetMetadata::load(&out.join(METADATA_FILE)).unwrap());
    assert_eq!((meta.env.as_str(), meta.num_actions), ("breakout", Some(4)));
    assert_eq!(meta.frame_shape(), Some(cfg.frame_shape));
    assert_eq!(meta.extra["action_names"], json!(["noop", "left", "right", "fire"]));
    assert_eq!(meta.extra["generator"]["seed"], 5);

    let counts = split_counts(cfg.episodes, cfg.val_fraction, cfg.test_fraction).unwrap();
    let fb = cfg.frame_shape.frame_bytes();
    let mut index = 0;
    for (split, &count) in SPLITS.iter().zip(&counts) {
        let stats = &meta.splits[*split];
        assert_eq!(stats.num_episodes, count);
        // Expected records: each episode cut into chunk_len pieces, in episode order.
        let episodes: Vec<SimulatedEpisode> =
            (index..index + count).map(|i| simulate_episode(&cfg, i as u64).unwrap()).collect();
        index += count;
        let mut expected = vec![];
        for ep in &episodes {
            for start in (0..ep.len()).step_by(cfg.chunk_len) {
                let end = (start + cfg.chunk_len).min(ep.len());
                expected.push((ep.frames[start * fb..end * fb].to_vec(), ep.actions[start..end].to_vec()));
            }
        }
        let mut records = vec![];
        for file in &stats.files {
            let reader = ArrayRecordReader::open(&out.join(&file.path)).unwrap();
            assert_eq!(reader.len() as usize, file.num_chunks);
            assert!(file.num_chunks <= cfg.chunks_per_file);
            for i in 0..reader.len() {
                let record = decode_episode(&reader.read(i).unwrap()).unwrap();
                let actions = record.actions.unwrap();
                assert_eq!(actions.dtype, crate::episode::ActionDtype::I64);
                assert_eq!(record.sequence_length, actions.steps());
                records.push((record.raw_video, actions.values));
            }
        }
        assert_eq!(records, expected, "{split}");
        assert_eq!(stats.num_frames, episodes.iter().map(|e| e.len()).sum::<usize>());
    }
    // Same config, 1 thread, into a second directory: identical files.
    let out2 = dir.path().join("ds2");
    let meta2 = generate_dataset(&GenerateConfig { threads: 1, ..cfg.clone() }, &out2, &mut |_| {}).unwrap();
    assert_eq!(meta2, meta);
    for stats in meta.splits.values() {
        for f in &stats.files {
            assert_eq!(std::fs::read(out.join(&f.path)).unwrap(), std::fs::read(out2.join(&f.path)).unwrap());
        }
    }
    // Regenerating over it needs --overwrite.
    assert!(generate_dataset(&cfg, &out, &mut |_| {}).is_err());
    let mut smaller = GenerateConfig { overwrite: true, episodes: 3, ..cfg };
    smaller.val_fraction = 0.0;
    let meta3 = generate_dataset(&smaller, &out, &mut |_| {}).unwrap();
    assert!(!out.join("val").exists(), "old val split removed");
    assert_eq!(meta3.splits.len(), 2);
}
