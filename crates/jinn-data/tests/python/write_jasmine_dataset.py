#!/usr/bin/env python3
"""Write a dataset laid out exactly as one of Jasmine's generators leaves it, and print what
Python reads back, for crates/jinn-data/tests/jasmine_datasets.rs.

    write_jasmine_dataset.py STYLE OUT_DIR

STYLE is the generator imitated (Jasmine's jasmine_data/ at commit 420859b):
  coinrun  coinrun/generate_coinrun_dataset.py: int32 actions (gym3), 64x64x3, "env": "coinrun";
           val gets too few chunks for a file (empty val/), test gets no episodes (no test/), so
           both averages are NaN in metadata.json.
  minatar  minatar/generate_minatar_breakout_dataset.py: int64 actions, 10x10x3,
           "env": "MinAtar-Breakout".
  atari    atari/generate_atari_dataset.py: int8 actions, 84x84x3 grey repeated, no "env" key,
           num_transitions_* and 0.0 defaults for splits without data.
  video    video_to_array_records.py: no actions, video_file_name, 90x160x3, per-file entries
           {path, length, video_file_name}, a failed video's entry with path "".
  dtypes   save_chunks records with actions of every other integer dtype, one file each, and a
           NumPy-scalar sequence_length.

Files are written as jasmine_data/utils.py save_chunks writes them: ArrayRecordWriter with
"group_size:1", records pickle.dumps({"raw_video", "sequence_length"[, "actions"]}), files
data_{i:04d}.array_record, leftover chunks dropped; metadata.json with json.dump. Paths in the
metadata are the absolute ones the generator would have seen. Prints JSON:
{"shape": [h, w, c], "splits": {split: {file name: [[sequence_length, checksum, actions], ...]}}}.
"""
import json
import warnings
import os
import pickle
import sys

import numpy as np
from array_record.python.array_record_module import ArrayRecordWriter


def checksum(raw):
    """sum((i + 1) * byte) mod 2**64, as the Rust test computes it."""
    b = np.frombuffer(raw, np.uint8).astype(np.uint64)
    return int(np.sum((np.arange(len(b), dtype=np.uint64) + 1) * b, dtype=np.uint64))


def save_chunks(file_idx, chunks_per_file, output_dir, obs_chunks, act_chunks=None, seq_len=None):
    """jasmine_data/utils.py save_chunks, optionally with a NumPy-scalar sequence_length."""
    os.makedirs(output_dir, exist_ok=True)
    metadata = []
    while len(obs_chunks) >= chunks_per_file:
        batch, obs_chunks = obs_chunks[:chunks_per_file], obs_chunks[chunks_per_file:]
        acts = None
        if act_chunks:
            acts, act_chunks = act_chunks[:chunks_per_file], act_chunks[chunks_per_file:]
        path = os.path.join(output_dir, f"data_{file_idx:04d}.array_record")
        writer = ArrayRecordWriter(str(path), "group_size:1")
        lens = []
        for i, chunk in enumerate(batch):
            n = chunk.shape[0]
            lens.append(n)
            record = {"raw_video": chunk.tobytes(), "sequence_length": seq_len(n) if seq_len else n}
            if acts:
                assert len(chunk) == len(acts[i])
                record["actions"] = acts[i]
            writer.write(pickle.dumps(record))
        writer.close()
        file_idx += 1
        metadata.append({"path": path, "num_chunks": len(batch), "avg_seq_len": np.mean(lens)})
    return metadata, file_idx, obs_chunks, act_chunks


def episode_chunks(rng, length, chunk, shape, dtype, num_actions):
    frames = rng.integers(0, 256, size=(length, *shape), dtype=np.uint8)
    actions = rng.integers(0, num_actions, size=length).astype(dtype)
    cut = range(0, length, chunk)
    return [frames[i:i + chunk] for i in cut], [actions[i:i + chunk] for i in cut]


def split(rng, out, name, episodes, length, chunk, per_file, shape, dtype, num_actions, **kw):
    obs, act, meta, idx = [], [], [], 0
    for _ in range(episodes):
        o, a = episode_chunks(rng, length, chunk, shape, dtype, num_actions)
        obs += o
        act += a
        m, idx, obs, act = save_chunks(idx, per_file, os.path.join(out, name), obs, act, **kw)
        meta += m
    return meta


def generated(rng, out, env, num_actions, counts, length, chunk, per_file, shape, dtype):
    """Splits of `counts` episodes written as the generators write them, and their metadata."""
    meta = {name: split(rng, out, name, n, length, chunk, per_file, shape, dtype, num_actions)
            for name, n in counts}
    return shape, {
        "env": env, "num_actions": num_actions,
        **{f"num_episodes_{s}": n for s, n in counts},
        **{f"avg_episode_len_{s}": np.mean([e["avg_seq_len"] for e in m]) for s, m in meta.items()},
        **{f"episode_metadata_{s}": m for s, m in meta.items()},
    }


def coinrun(rng, out):
    counts = (("train", 2), ("val", 1), ("test", 0))
    return generated(rng, out, "coinrun", 15, counts, 20, 8, 4, (64, 64, 3), np.int32)


def minatar(rng, out):
    counts = (("train", 3), ("val", 1), ("test", 1))
    return generated(rng, out, "MinAtar-Breakout", 6, counts, 30, 7, 3, (10, 10, 3), np.int64)


def atari(rng, out):
    # Grey 84x84x1 frames repeated to three channels; only train and val reach their targets.
    shape = (84, 84, 3)
    meta = {}
    for name, n in (("train", 2), ("val", 1)):
        obs, act, meta[name], idx = [], [], [], 0
        for _ in range(n):
            grey = rng.integers(0, 256, size=(13, 84, 84, 1), dtype=np.uint8)
            frames = np.repeat(grey, 3, axis=-1)
            acts = np.asarray(rng.integers(0, 4, size=13), dtype=np.int8)
            obs += [frames[i:i + 5].astype(np.uint8) for i in range(0, 13, 5)]
            act += [acts[i:i + 5] for i in range(0, 13, 5)]
            m, idx, obs, act = save_chunks(idx, 2, os.path.join(out, name), obs, act)
            meta[name] += m
    metadata = {"num_actions": 4}
    for s in ("train", "val", "test"):
        metadata.setdefault(f"num_transitions_{s}", 0)
        metadata.setdefault(f"avg_episode_len_{s}", 0.0)
        metadata.setdefault(f"episode_metadata_{s}", [])
    for s, m in meta.items():
        metadata[f"episode_metadata_{s}"].extend(m)
        metadata[f"num_transitions_{s}"] = int(np.sum([e["avg_seq_len"] for e in m]))
        metadata[f"avg_episode_len_{s}"] = float(np.mean([e["avg_seq_len"] for e in m]))
    return shape, metadata


def video(rng, out):
    shape = (90, 160, 3)
    results = {}
    for name, videos in (("train", 2), ("val", 0), ("test", 1)):
        os.makedirs(os.path.join(out, name), exist_ok=True)
        entries = []
        for idx in range(videos):
            frames = rng.integers(0, 256, size=(3 * 4 + 1, *shape), dtype=np.uint8)
            chunks = [{"raw_video": frames[i:i + 4].tobytes(), "sequence_length": 4,
                       "video_file_name": f"/videos/{name}_{idx}.mp4"} for i in range(0, 12, 4)]
            for k in range(0, len(chunks), 2):
                fname = f"chunked_videos_{idx:04d}_{k // 2:04d}.array_record"
                path = os.path.join(out, name, fname)
                writer = ArrayRecordWriter(path, "group_size:1")
                for c in chunks[k:k + 2]:
                    writer.write(pickle.dumps(c))
                writer.close()
                entries.append({"path": path, "length": 4, "video_file_name": f"/videos/{name}_{idx}.mp4"})
        if name == "test":
            entries.append({"path": "", "length": 0, "video_file_name": "/videos/broken.webm"})
        results[name] = entries
    failed = [e for m in results.values() for e in m if e["length"] == 0]
    return shape, {
        "env": "minecraft", "total_chunks": sum(len(m) for m in results.values()), "total_videos": 4,
        "num_successful_videos": 4 - len(failed), "num_failed_videos": len(failed),
        **{f"avg_episode_len_{s}": np.mean([e["length"] for e in m]) for s, m in results.items()},
        **{f"episode_metadata_{s}": m for s, m in results.items()},
    }


def dtypes(rng, out):
    shape = (4, 6, 3)
    meta = []
    dts = (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64)
    for i, dt in enumerate(dts):
        o, a = episode_chunks(rng, 9, 3, shape, dt, 200 if dt != np.int8 else 100)
        scalar = (lambda n: np.int64(n)) if i % 2 else None
        m, _, _, _ = save_chunks(i, 3, os.path.join(out, "train"), o, a, seq_len=scalar)
        meta += m
    return shape, {"env": "dtypes", "num_actions": 200, "episode_metadata_train": meta,
                   "avg_episode_len_val": np.mean([])}


def read_back(out):
    from array_record.python.array_record_module import ArrayRecordReader
    splits = {}
    for s in ("train", "val", "test"):
        d = os.path.join(out, s)
        if not os.path.isdir(d):
            continue
        splits[s] = {}
        for fname in sorted(f for f in os.listdir(d) if f.endswith(".array_record")):
            r = ArrayRecordReader(os.path.join(d, fname))
            recs = []
            for i in range(r.num_records()):
                rec = pickle.loads(r.read([i])[0])
                a = rec.get("actions")
                recs.append([int(rec["sequence_length"]), checksum(rec["raw_video"]),
                             None if a is None else [int(v) for v in a], str(a.dtype) if a is not None else None])
            r.close()
            splits[s][fname] = recs
    return splits


def main():
    warnings.simplefilter("ignore", RuntimeWarning)  # np.mean of an empty split, as in Jasmine
    style, out = sys.argv[1], os.path.abspath(sys.argv[2])
    rng = np.random.default_rng(7)
    shape, metadata = {"coinrun": coinrun, "minatar": minatar, "atari": atari, "video": video,
                       "dtypes": dtypes}[style](rng, out)
    with open(os.path.join(out, "metadata.json"), "w") as f:
        json.dump(metadata, f)
    json.dump({"shape": list(shape), "splits": read_back(out)}, sys.stdout)


if __name__ == "__main__":
    main()
