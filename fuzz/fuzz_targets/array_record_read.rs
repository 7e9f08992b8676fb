//! Arbitrary bytes as an ArrayRecord file: opening and reading every record may fail, never
//! panic or allocate beyond the input.
#![no_main]

use jinn_data::array_record::ArrayRecordReader;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(reader) = ArrayRecordReader::from_bytes("fuzz", data.to_vec()) {
        for i in 0..reader.len() {
            let _ = reader.read(i);
        }
    }
});
