#!/usr/bin/env python3
"""Write the golden pickles for jinn-data's pickle codec tests.

Run from the repository root:  python3 tests/python/make_pickle_fixtures.py
Writes crates/jinn-data/tests/fixtures/pickle/*.pickle and expected.json, and copies the
protocol-4 goldens to fuzz/seeds/pickle_decode/. Needs numpy (written with CPython 3.11 and
NumPy 2.4). Records are what Jasmine's generators write: pickle.dumps(dict) with keys in the
order raw_video, sequence_length, actions, video_file_name.
"""
import json
import os
import pickle
import pickletools
import shutil
import struct
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "crates", "jinn-data", "tests", "fixtures", "pickle")
SEEDS = os.path.join(ROOT, "fuzz", "seeds", "pickle_decode")


def video(t, h=2, w=3, c=3, seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, size=(t, h, w, c), dtype=np.uint8).tobytes()


def record(t, actions=None, name=None, **extra):
    d = {"raw_video": video(t, seed=t), "sequence_length": t}
    if actions is not None:
        d["actions"] = actions
    if name is not None:
        d["video_file_name"] = name
    d.update(extra)
    return d


# name -> (dict, encodable): encodable means jinn's writer should reproduce the protocol-4 bytes.
CASES = {
    "no_actions": (record(3), True),
    "actions_i64": (record(3, np.array([0, 5, -7], dtype=np.int64)), True),
    "actions_i8": (record(3, np.array([-128, 0, 127], dtype=np.int8)), True),
    "actions_u8": (record(3, np.array([0, 17, 255], dtype=np.uint8)), True),
    "actions_i64_2d": (record(2, np.array([[1, 2, 3], [2**40, -(2**62), 9]], dtype=np.int64)), True),
    "actions_u8_2d": (record(2, np.array([[1, 2], [250, 0]], dtype=np.uint8)), True),
    "video_file_name": (record(2, np.array([3, 4], dtype=np.int64), name="videos/épisode_7.mp4"), True),
    "name_no_actions": (record(1, name="a.mp4"), True),
    "empty": (record(0, np.zeros((0,), dtype=np.int64)), True),
    "empty_u8": (record(0, np.zeros((0,), dtype=np.uint8)), True),
    "long_sequence": (
        {"raw_video": bytes(range(256)) * 3, "sequence_length": 70000, "actions": np.arange(300, dtype=np.int64)},
        True,
    ),
    "extra_keys": (
        record(2, np.array([1, 2], dtype=np.int64), name="x", fps=30.0, episode=2**70, ok=True, note=None,
               tag="t", blob=b"\x00\x01", neg=-5),
        False,
    ),
    "actions_none": (dict(record(2), actions=None, video_file_name=None), False),
    # Every other integer dtype NumPy writes; CoinRun's generator stores gym3's int32 actions.
    "actions_i32": (record(3, np.array([0, 14, -2**31], dtype=np.int32)), True),
    "actions_i16": (record(2, np.array([-2**15, 2**15 - 1], dtype=np.int16)), True),
    "actions_u16": (record(2, np.array([0, 2**16 - 1], dtype=np.uint16)), True),
    "actions_u32": (record(2, np.array([7, 2**32 - 1], dtype=np.uint32)), True),
    "actions_u64": (record(2, np.array([3, 2**63 - 1], dtype=np.uint64)), True),
    "big_endian_i32": (record(2, np.array([5, -6], dtype=">i4")), False),
    "big_endian_u16": (record(2, np.array([5, 65000], dtype=">u2")), False),
    # sequence_length as a NumPy scalar (e.g. a length taken from an array).
    "seq_len_np_int64": (dict(record(3, np.array([1, 2, 3], dtype=np.int64)), sequence_length=np.int64(3)), False),
    "seq_len_np_uint32": (dict(record(2), sequence_length=np.uint32(2)), False),
    "np_scalar_extra_keys": (dict(record(1), fps=np.float32(10.0), done=np.bool_(True), step=np.int8(-1)), False),
    "big_endian": (record(2, np.array([1, -2**40], dtype=">i8")), False),
    "fortran_2d": (record(3, np.asfortranarray(np.arange(6, dtype=np.int64).reshape(3, 2))), False),
    "fortran_2d_i8": (record(3, np.asfortranarray(np.arange(-3, 3, dtype=np.int8).reshape(3, 2))), False),
    "noncontiguous": (record(3, np.arange(12, dtype=np.int64).reshape(3, 4)[:, ::2]), False),
}

# Large enough to exercise CPython's framing (payloads of 64 KiB and more); protocol 4 only.
LARGE = {
    "large_video": (
        {"raw_video": video(2, 96, 120, 3), "sequence_length": 2, "actions": np.array([7, 8], dtype=np.int64),
         "video_file_name": "big.mp4"},
        True,
    ),
    "large_actions": (
        {"raw_video": video(1), "sequence_length": 1,
         "actions": np.arange(8200, dtype=np.int64) * 1_000_003 - 5},
        True,
    ),
}


class Evil:
    def __init__(self, fn, args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return (self.fn, self.args)


HOSTILE = {
    "evil_os_system": (Evil(os.system, ("echo pwned",)), "system"),
    "evil_eval_in_dict": ({"raw_video": b"", "sequence_length": Evil(eval, ("1+1",))}, "builtins.eval"),
    "seq_len_str": ({"raw_video": b"", "sequence_length": "3"}, "sequence_length"),
    "seq_len_negative": ({"raw_video": b"", "sequence_length": -1}, "sequence_length"),
    "raw_video_str": ({"raw_video": "abc", "sequence_length": 1}, "raw_video"),
    "missing_raw_video": ({"sequence_length": 1}, "raw_video"),
    "actions_list": ({"raw_video": b"", "sequence_length": 1, "actions": [1]}, "EMPTY_LIST"),
    "actions_f32": ({"raw_video": b"", "sequence_length": 1, "actions": np.zeros(1, np.float32)}, "actions"),
    "actions_u64_too_large": (
        {"raw_video": b"", "sequence_length": 1, "actions": np.array([2**63], np.uint64)}, "does not fit in int64"
    ),
    "seq_len_np_float": ({"raw_video": b"", "sequence_length": np.float64(1.0)}, "sequence_length"),
    "actions_3d": ({"raw_video": b"", "sequence_length": 1, "actions": np.zeros((1, 1, 1), np.int64)}, "actions"),
    "name_bytes": ({"raw_video": b"", "sequence_length": 1, "video_file_name": b"a"}, "video_file_name"),
    "not_a_dict": ((1, 2), "dict"),
}


def numpy_core_spelling(p4: bytes) -> bytes:
    """The same pickle naming `numpy.core.multiarray` (what NumPy 1.x writes): replace the
    module str and shorten the frame that holds it by one byte."""
    old = b"\x8c\x16numpy._core.multiarray"
    new = b"\x8c\x15numpy.core.multiarray"
    at = p4.index(old)
    frame = None
    for opcode, arg, pos in pickletools.genops(p4):
        if pos > at:
            break
        if opcode.name == "FRAME":
            frame = pos
    out = bytearray(p4[:at] + new + p4[at + len(old):])
    (length,) = struct.unpack_from("<Q", out, frame + 1)
    struct.pack_into("<Q", out, frame + 1, length - 1)
    return bytes(out)


def checksum(values):
    """sum((i + 1) * v) mod 2**64, the same in the Rust test (wrapping u64 arithmetic)."""
    return sum((i + 1) * int(v) for i, v in enumerate(values)) % 2**64


def expected(d):
    """Expected decoded values; long sequences are given as length + checksum."""
    a = d.get("actions")
    name = d.get("video_file_name")
    raw = d["raw_video"]
    values = None if a is None else [int(v) for v in np.ascontiguousarray(a).reshape(-1)]
    return {
        "raw_video_len": len(raw),
        "raw_video_checksum": checksum(raw),
        "raw_video_hex": raw.hex() if len(raw) <= 1024 else None,
        "sequence_length": int(d["sequence_length"]),
        "actions": None if a is None else {
            "dtype": a.dtype.name.replace("uint", "U").replace("int", "I"),
            "shape": list(a.shape),
            "len": len(values),
            "checksum": checksum(values),
            "values": values if len(values) <= 512 else None,
        },
        "video_file_name": name,
    }


def main():
    os.makedirs(OUT, exist_ok=True)
    for f in os.listdir(OUT):
        os.remove(os.path.join(OUT, f))
    manifest = {"python": sys.version.split()[0], "numpy": np.__version__, "valid": {}, "hostile": {}}
    for group, protocols in ((CASES, (2, 3, 4, 5)), (LARGE, (4,))):
        for name, (d, encodable) in group.items():
            exp = expected(d)
            for p in protocols:
                data = pickle.dumps(d, protocol=p)
                fname = f"{name}.p{p}.pickle"
                with open(os.path.join(OUT, fname), "wb") as f:
                    f.write(data)
                manifest["valid"][fname] = dict(exp, encode=encodable and p == 4, numpy_module="UnderscoreCore")
                if encodable and p == 4 and "actions" in d:
                    core = numpy_core_spelling(data)
                    back = pickle.loads(core)
                    assert np.array_equal(back["actions"], d["actions"]) and back["raw_video"] == d["raw_video"]
                    cname = f"{name}.p4core.pickle"
                    with open(os.path.join(OUT, cname), "wb") as f:
                        f.write(core)
                    manifest["valid"][cname] = dict(exp, encode=True, numpy_module="Core")
    for name, (obj, needle) in HOSTILE.items():
        fname = f"{name}.p4.pickle"
        with open(os.path.join(OUT, fname), "wb") as f:
            f.write(pickle.dumps(obj, protocol=4))
        manifest["hostile"][fname] = needle
    with open(os.path.join(OUT, "expected.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
        f.write("\n")
    os.makedirs(SEEDS, exist_ok=True)
    for fname in sorted(os.listdir(OUT)):
        if fname.endswith(".pickle") and not fname.startswith("large"):
            shutil.copy(os.path.join(OUT, fname), os.path.join(SEEDS, fname))
    print(f"wrote {len(manifest['valid'])} valid and {len(manifest['hostile'])} hostile pickles to {OUT}")


if __name__ == "__main__":
    main()
