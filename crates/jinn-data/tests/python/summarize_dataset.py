"""Summarise an episode dataset the way Jasmine's loader sees it: array_record + pickle + NumPy.

Usage: summarize_dataset.py SPLIT_DIR H W C
Prints JSON: per file (sorted), per record: sequence_length, sum of raw_video bytes, the
first pixel of the last frame, actions (list) and their dtype, video_file_name.
"""
import json
import os
import pickle
import sys

import numpy as np
from array_record.python import array_record_data_source


def main():
    split, h, w, c = sys.argv[1], *map(int, sys.argv[2:5])
    files = sorted(os.path.join(split, f) for f in os.listdir(split) if f.endswith(".array_record"))
    out = []
    for path in files:
        source = array_record_data_source.ArrayRecordDataSource([path])
        for i in range(len(source)):
            record = pickle.loads(source[i])
            video = np.frombuffer(record["raw_video"], dtype=np.uint8).reshape(record["sequence_length"], h, w, c)
            actions = record.get("actions")
            out.append({
                "file": os.path.basename(path),
                "index": i,
                "sequence_length": int(record["sequence_length"]),
                "frame_sum": int(video.sum(dtype=np.int64)),
                "last_pixel": video[-1, 0, 0].tolist(),
                "actions": None if actions is None else actions.tolist(),
                "actions_dtype": None if actions is None else str(actions.dtype),
                "video_file_name": record.get("video_file_name"),
            })
    print(json.dumps(out))


if __name__ == "__main__":
    main()
