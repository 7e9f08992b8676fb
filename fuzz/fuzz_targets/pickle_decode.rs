//! Arbitrary bytes through the pickle reader: it may return errors, never panic, hang or
//! allocate beyond the input. Decoded records must survive an encode/decode round trip.
#![no_main]

use jinn_data::pickle::{decode_episode, decode_episode_borrowed, try_encode_episode};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let owned = decode_episode(data);
    let borrowed = decode_episode_borrowed(data);
    assert_eq!(owned.is_ok(), borrowed.is_ok());
    if let Ok(record) = owned {
        assert_eq!(borrowed.unwrap().into_owned(), record);
        let bytes = try_encode_episode(&record).expect("a decoded record is encodable");
        assert_eq!(decode_episode(&bytes).expect("own encoding decodes"), record);
    }
});
