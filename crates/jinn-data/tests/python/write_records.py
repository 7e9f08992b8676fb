"""Write records into an ArrayRecord file with Python's array_record.

Usage: write_records.py IN OUT OPTIONS
IN holds, per record, its length as u64 little-endian then its bytes; OPTIONS is the
writer options string (e.g. "group_size:8,brotli:6").
"""
import struct
import sys

from array_record.python import array_record_module


def main():
    src, out, options = sys.argv[1], sys.argv[2], sys.argv[3]
    data = open(src, "rb").read()
    writer = array_record_module.ArrayRecordWriter(out, options)
    at = 0
    while at < len(data):
        (n,) = struct.unpack_from("<Q", data, at)
        at += 8
        writer.write(data[at : at + n])
        at += n
    writer.close()


if __name__ == "__main__":
    main()
