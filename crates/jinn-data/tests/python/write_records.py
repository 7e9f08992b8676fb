"""Write records into ArrayRecord files with Python's array_record.

Usage: write_records.py IN OUT OPTIONS [OUT OPTIONS ...]
IN holds, per record, its length as u64 little-endian then its bytes; each OUT is written
with its writer options string (e.g. "group_size:8,brotli:6").
"""
import struct
import sys

from array_record.python import array_record_module


def main():
    src, pairs = sys.argv[1], sys.argv[2:]
    assert pairs and len(pairs) % 2 == 0, __doc__
    data = open(src, "rb").read()
    records = []
    at = 0
    while at < len(data):
        (n,) = struct.unpack_from("<Q", data, at)
        records.append(data[at + 8 : at + 8 + n])
        at += 8 + n
    for out, options in zip(pairs[::2], pairs[1::2]):
        writer = array_record_module.ArrayRecordWriter(out, options)
        for record in records:
            writer.write(record)
        writer.close()


if __name__ == "__main__":
    main()
