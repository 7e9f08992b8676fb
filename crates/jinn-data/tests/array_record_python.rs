//! ArrayRecord interoperability with Python's `array_record`: the Jasmine fixtures, files
//! written by jinn read by Python, and files written by Python read by jinn.

mod common;

use common::*;
use jinn_data::array_record::{ArrayRecordReader, ArrayRecordWriter};

#[test]
fn fixtures_have_expected_counts_and_pickle_records() {
    let expected: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixtures().join("jasmine_schema_expected.json")).unwrap())
            .unwrap();
    let files = expected.as_array().unwrap();
    assert_eq!(files.len(), 3);
    for entry in files {
        let name = entry["file"].as_str().unwrap();
        let count = entry["records"].as_array().unwrap().len() as u64;
        let reader = ArrayRecordReader::open(&fixtures().join(name)).unwrap();
        assert_eq!(reader.len(), count, "{name}");
        let group = entry["writer_options"].as_str().unwrap();
        assert!(reader.options_string().unwrap().starts_with(&format!("{group},")), "{name}");
        for i in 0..reader.len() {
            let record = reader.read(i).unwrap();
            assert_eq!(record.first(), Some(&0x80), "{name} record {i} is not a pickle");
            assert_eq!(record.last(), Some(&b'.'), "{name} record {i} is not a pickle");
        }
    }
    let counts: Vec<u64> = files.iter().map(|e| e["records"].as_array().unwrap().len() as u64).collect();
    assert_eq!(counts, [5, 5, 1]);
}

#[test]
fn fixtures_match_python_bytes() {
    if !python_available("fixtures_match_python_bytes") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let copies: Vec<_> = [
        "jasmine_schema_group1.array_record",
        "jasmine_schema_group8_uint8.array_record",
        "jasmine_schema_no_actions.array_record",
    ]
    .iter()
    .map(|name| {
        let copy = dir.path().join(name);
        std::fs::copy(fixtures().join(name), &copy).unwrap();
        copy
    })
    .collect();
    for (copy, (options, records)) in copies.iter().zip(python_read(&copies)) {
        let reader = ArrayRecordReader::open(copy).unwrap();
        assert_eq!(reader.options_string(), Some(options.as_str()));
        assert_reads(&reader, &records);
    }
}

#[test]
fn python_reads_jinn_files() {
    if !python_available("python_reads_jinn_files") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let records = varied_records(7);
    let mut paths = Vec::new();
    let mut all_options = Vec::new();
    for (i, compression) in CODECS.into_iter().enumerate() {
        for group_size in [1, 3, 8] {
            let opts = options(group_size, compression);
            let path = dir.path().join(format!("c{i}_g{group_size}.array_record"));
            let mut w = ArrayRecordWriter::create(&path, opts).unwrap();
            for r in &records {
                w.write_record(r).unwrap();
            }
            assert_eq!(w.finish().unwrap(), records.len() as u64);
            paths.push(path);
            all_options.push(opts);
        }
    }
    // An empty file, too.
    let empty = dir.path().join("empty.array_record");
    assert_eq!(ArrayRecordWriter::create(&empty, Default::default()).unwrap().finish().unwrap(), 0);
    paths.push(empty);
    let mut read = python_read(&paths);
    let (_, empty_records) = read.pop().unwrap();
    assert!(empty_records.is_empty());
    for ((py_options, py_records), opts) in read.into_iter().zip(all_options) {
        assert_eq!(py_options, opts.to_options_string());
        assert!(py_records == records, "{opts:?}: Python read different records");
    }
}

#[test]
fn jinn_reads_python_files() {
    if !python_available("jinn_reads_python_files") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let records = varied_records(11);
    let input = dir.path().join("records.bin");
    std::fs::write(&input, encode_length_prefixed(&records)).unwrap();
    let option_strings = [
        "group_size:1",
        "group_size:8",
        "group_size:3,zstd:5",
        "group_size:2,brotli:4",
        "group_size:4,snappy",
        "group_size:1,uncompressed",
        "group_size:5,uncompressed,pad_to_block_boundary:true",
    ];
    let paths: Vec<String> = (0..option_strings.len())
        .map(|i| dir.path().join(format!("py{i}.array_record")).to_str().unwrap().to_string())
        .collect();
    let mut args = vec![input.to_str().unwrap()];
    for (p, o) in paths.iter().zip(option_strings) {
        args.push(p);
        args.push(o);
    }
    run_python("write_records.py", &args);
    for (path, opts) in paths.iter().zip(option_strings) {
        let reader = ArrayRecordReader::open(std::path::Path::new(path)).unwrap();
        assert_eq!(reader.options_string().unwrap().split(',').next(), opts.split(',').next());
        assert_reads(&reader, &records);
    }
}
