"""Read every record of ArrayRecord files with Python's array_record and dump them.

Usage: read_records.py FILE OUT [FILE OUT ...]
Each OUT gets, per record, its length as u64 little-endian then its bytes. stdout gets one
line per FILE: its writer options string. Records are read twice (sequentially with
read_all and by random access through ArrayRecordDataSource) and must agree.
"""
import struct
import sys

from array_record.python import array_record_data_source, array_record_module


def dump(path, out):
    reader = array_record_module.ArrayRecordReader(path)
    n = reader.num_records()
    records = reader.read_all() if n else []
    options = reader.writer_options_string()
    reader.close()
    assert len(records) == n, (len(records), n)
    if n:
        source = array_record_data_source.ArrayRecordDataSource([path])
        assert len(source) == n, (len(source), n)
        order = list(range(n - 1, -1, -1))
        for i, record in zip(order, source.__getitems__(order)):
            assert record == records[i], f"{path}: record {i} differs between read_all and random access"
    with open(out, "wb") as f:
        for record in records:
            f.write(struct.pack("<Q", len(record)))
            f.write(record)
    print(options)


def main():
    args = sys.argv[1:]
    assert args and len(args) % 2 == 0, __doc__
    for path, out in zip(args[::2], args[1::2]):
        dump(path, out)


if __name__ == "__main__":
    main()
