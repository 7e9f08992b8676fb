"""Read every record of an ArrayRecord file with Python's array_record and dump them.

Usage: read_records.py FILE OUT
OUT gets, per record, its length as u64 little-endian then its bytes. The first line of
stdout is the file's writer options string. Records are read twice (sequentially with
read_all and by random access through ArrayRecordDataSource) and must agree.
"""
import struct
import sys

from array_record.python import array_record_data_source, array_record_module


def main():
    path, out = sys.argv[1], sys.argv[2]
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
            assert record == records[i], f"record {i} differs between read_all and random access"
    with open(out, "wb") as f:
        for record in records:
            f.write(struct.pack("<Q", len(record)))
            f.write(record)
    print(options)


if __name__ == "__main__":
    main()
