//! Hand-built hostile and edge-case pickles. Golden files from CPython live in
//! `tests/pickle_golden.rs`.

use super::opcodes as op;
use super::*;
use crate::episode::ActionDtype;

/// Small valid record with int64 actions.
fn sample() -> EpisodeRecord {
    EpisodeRecord {
        raw_video: (0..36).collect(),
        sequence_length: 2,
        actions: Some(ActionArray::from_i64(vec![3, -4])),
        video_file_name: Some("v.mp4".into()),
    }
}

fn pickle_err(bytes: &[u8]) -> (usize, String) {
    match decode_episode(bytes) {
        Err(DataError::Pickle { offset, reason }) => (offset, reason),
        other => panic!("expected a pickle error, got {other:?}"),
    }
}

/// `\x80\x04` + body (no frame).
fn p4(body: &[u8]) -> Vec<u8> {
    let mut v = vec![op::PROTO, 4];
    v.extend_from_slice(body);
    v
}

#[test]
fn round_trip_every_dtype_and_shape() {
    for (dtype, values, shape) in [
        (ActionDtype::I64, vec![i64::MIN, -1, 0, i64::MAX], vec![4]),
        (ActionDtype::I64, vec![1, 2, 3, 4, 5, 6], vec![3, 2]),
        (ActionDtype::I8, vec![-128, 127, 0], vec![3]),
        (ActionDtype::U8, vec![0, 255, 1, 2], vec![2, 2]),
        (ActionDtype::U8, vec![], vec![0]),
        (ActionDtype::I32, vec![i32::MIN.into(), 14, i32::MAX.into()], vec![3]),
        (ActionDtype::I16, vec![i16::MIN.into(), i16::MAX.into()], vec![1, 2]),
        (ActionDtype::U16, vec![0, u16::MAX.into()], vec![2]),
        (ActionDtype::U32, vec![0, u32::MAX.into()], vec![2]),
        (ActionDtype::U64, vec![0, i64::MAX], vec![2]),
    ] {
        let mut r = sample();
        r.actions = Some(ActionArray { dtype, shape, values });
        for module in [NumpyModule::Core, NumpyModule::UnderscoreCore] {
            let bytes = encode_episode_with(&r, module).unwrap();
            assert_eq!(decode_episode(&bytes).unwrap(), r);
        }
    }
    let mut r = sample();
    r.actions = None;
    r.video_file_name = None;
    r.sequence_length = i64::MAX as usize; // LONG1
    assert_eq!(decode_episode(&encode_episode(&r)).unwrap(), r);
}

#[test]
fn borrowed_decode_does_not_copy_the_video() {
    let bytes = encode_episode(&sample());
    let r = decode_episode_borrowed(&bytes).unwrap();
    let std::borrow::Cow::Borrowed(video) = r.raw_video else { panic!("video was copied") };
    let range = bytes.as_ptr_range();
    assert!(range.contains(&video.as_ptr()));
}

#[test]
fn encoder_rejects_inconsistent_actions() {
    for (dtype, values, shape) in [
        (ActionDtype::I8, vec![128], vec![1]),
        (ActionDtype::U8, vec![-1], vec![1]),
        (ActionDtype::I32, vec![1 << 31], vec![1]),
        (ActionDtype::U16, vec![1 << 16], vec![1]),
        (ActionDtype::U64, vec![-1], vec![1]),
        (ActionDtype::I64, vec![1, 2], vec![3]),
        (ActionDtype::I64, vec![1], vec![1, 1, 1]),
    ] {
        let mut r = sample();
        r.actions = Some(ActionArray { dtype, shape, values });
        let e = try_encode_episode(&r).unwrap_err().to_string();
        assert!(e.contains("actions"), "{e}");
    }
}

#[test]
fn truncation_at_every_offset_is_an_error() {
    let bytes = encode_episode(&sample());
    for n in 0..bytes.len() {
        assert!(decode_episode(&bytes[..n]).is_err(), "prefix of {n} bytes decoded");
    }
}

#[test]
fn trailing_bytes_are_rejected() {
    let mut bytes = encode_episode(&sample());
    bytes.push(0);
    let (_, reason) = pickle_err(&bytes);
    assert!(reason.contains("after STOP"), "{reason}");
}

#[test]
fn foreign_globals_are_named() {
    // GLOBAL 'os system'
    let (offset, reason) = pickle_err(&p4(b"cos\nsystem\n)R."));
    assert_eq!(offset, 2);
    assert!(reason.contains("GLOBAL") && reason.contains("`os.system`"), "{reason}");
    // STACK_GLOBAL builtins.eval
    let mut b = vec![op::SHORT_BINUNICODE, 8];
    b.extend_from_slice(b"builtins");
    b.extend_from_slice(&[op::SHORT_BINUNICODE, 4]);
    b.extend_from_slice(b"eval");
    b.push(op::STACK_GLOBAL);
    let (offset, reason) = pickle_err(&p4(&b));
    assert_eq!(offset, 2 + 10 + 6);
    assert!(reason.contains("STACK_GLOBAL") && reason.contains("builtins.eval"), "{reason}");
}

#[test]
fn unknown_and_unsupported_opcodes_are_named() {
    let (_, reason) = pickle_err(&p4(b"]."));
    assert!(reason.contains("EMPTY_LIST"), "{reason}");
    let (_, reason) = pickle_err(&p4(&[0xff]));
    assert!(reason.contains("0xff"), "{reason}");
    let (_, reason) = pickle_err(&p4(&[op::NEXT_BUFFER]));
    assert!(reason.contains("out-of-band"), "{reason}");
    let (_, reason) = pickle_err(&[op::PROTO, 9, op::NONE, op::STOP]);
    assert!(reason.contains("protocol 9"), "{reason}");
}

#[test]
fn absurd_lengths_are_bounded_by_the_input() {
    for opcode in [op::BINBYTES8, op::BINUNICODE8, op::BYTEARRAY8, op::FRAME] {
        let mut b = vec![opcode];
        b.extend_from_slice(&u64::MAX.to_le_bytes());
        let (offset, reason) = pickle_err(&p4(&b));
        assert_eq!(offset, 2);
        assert!(reason.contains(op::name(opcode)) && reason.contains("left"), "{reason}");
    }
    let mut b = vec![op::BINBYTES];
    b.extend_from_slice(&u32::MAX.to_le_bytes());
    assert!(pickle_err(&p4(&b)).1.contains("BINBYTES"));
    let mut b = vec![op::LONG4];
    b.extend_from_slice(&u32::MAX.to_le_bytes());
    assert!(pickle_err(&p4(&b)).1.contains("LONG4"));
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    // A million MARKs, then STOP: marks are a plain Vec, no recursion.
    let mut b = vec![op::MARK; 1_000_000];
    b.push(op::STOP);
    assert!(pickle_err(&p4(&b)).1.contains("MARK"));
    // Tuples nested a million deep would overflow the stack when dropped; refused at depth 33.
    let mut b = vec![op::EMPTY_TUPLE];
    b.extend(std::iter::repeat_n(op::TUPLE1, 1_000_000));
    b.push(op::STOP);
    let (offset, reason) = pickle_err(&p4(&b));
    assert!(reason.contains("nested deeper"), "{reason}");
    assert_eq!(offset, 2 + 32); // EMPTY_TUPLE is depth 1, the 32nd TUPLE1 would be 33
                                // MARK ... TUPLE nesting likewise.
    let mut b = vec![op::MARK; 100];
    b.extend(std::iter::repeat_n(op::TUPLE, 100));
    assert!(pickle_err(&p4(&b)).1.contains("nested deeper"));
}

#[test]
fn memo_and_stack_misuse_are_errors() {
    assert!(pickle_err(&p4(&[op::BINGET, 7])).1.contains("memo index 7"));
    assert!(pickle_err(&p4(&[op::MEMOIZE])).1.contains("underflow"));
    assert!(pickle_err(&p4(&[op::TUPLE3])).1.contains("underflow"));
    assert!(pickle_err(&p4(&[op::SETITEMS])).1.contains("MARK"));
    assert!(pickle_err(&p4(&[op::NONE, op::NONE, op::STOP])).1.contains("2"));
    // A mark fences the stack: TUPLE1 right after MARK may not reach below it.
    assert!(pickle_err(&p4(&[op::NONE, op::MARK, op::TUPLE1])).1.contains("underflow"));
    // A dict may not go inside itself (no reference cycles).
    let b = [op::EMPTY_DICT, op::MEMOIZE, op::NONE, op::BINGET, 0, op::SETITEM, op::STOP];
    assert!(pickle_err(&p4(&b)).1.contains("dict"));
    // Nor be its own key (found by the fuzzer as a leak: an Rc cycle).
    let b = [op::EMPTY_DICT, op::MEMOIZE, op::BINGET, 0, op::NONE, op::SETITEM, op::STOP];
    assert!(pickle_err(&p4(&b)).1.contains("dict"));
}

#[test]
fn symbolic_calls_check_their_arguments() {
    // numpy.dtype(None): wrong argument types.
    let b = b"cnumpy\ndtype\nN\x85R.";
    let (_, reason) = pickle_err(&p4(b));
    assert!(reason.contains("REDUCE") && reason.contains("numpy.dtype"), "{reason}");
    // _codecs.encode with a code point above U+00FF.
    let mut b = b"c_codecs\nencode\n".to_vec();
    b.extend_from_slice(&[op::SHORT_BINUNICODE, 3]);
    b.extend_from_slice("ā".as_bytes());
    b.push(b'x');
    b.extend_from_slice(&[op::SHORT_BINUNICODE, 6]);
    b.extend_from_slice(b"latin1");
    b.extend_from_slice(&[op::TUPLE2, op::REDUCE, op::STOP]);
    assert!(pickle_err(&p4(&b)).1.contains("U+0101"));
    // BUILD on an int.
    assert!(pickle_err(&p4(&[op::NONE, op::EMPTY_TUPLE, op::BUILD])).1.contains("BUILD on a None"));
}

#[test]
fn wrong_field_types_name_the_field() {
    let dict = |items: &[u8]| {
        let mut b = vec![op::EMPTY_DICT, op::MARK];
        b.extend_from_slice(items);
        b.extend_from_slice(&[op::SETITEMS, op::STOP]);
        p4(&b)
    };
    let key = |k: &str| {
        let mut b = vec![op::SHORT_BINUNICODE, k.len() as u8];
        b.extend_from_slice(k.as_bytes());
        b
    };
    let mut ok = key("raw_video");
    ok.extend_from_slice(&[op::SHORT_BINBYTES, 0]);
    let mut b = ok.clone();
    b.extend(key("sequence_length"));
    b.extend(key("3"));
    let (_, reason) = pickle_err(&dict(&b));
    assert!(reason.contains("`sequence_length`") && reason.contains("found str"), "{reason}");
    let mut b = ok.clone();
    b.extend(key("sequence_length"));
    b.push(op::NEWTRUE);
    assert!(pickle_err(&dict(&b)).1.contains("found bool"));
    let mut b = ok.clone();
    b.extend(key("sequence_length"));
    b.extend_from_slice(&[op::BININT, 0xff, 0xff, 0xff, 0xff]);
    assert!(pickle_err(&dict(&b)).1.contains("-1"));
    let mut b = ok.clone();
    b.extend(key("sequence_length"));
    b.extend_from_slice(&[op::LONG1, 9, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    assert!(pickle_err(&dict(&b)).1.contains("too large"));
    let mut b = key("raw_video");
    b.push(op::NONE);
    assert!(pickle_err(&dict(&b)).1.contains("`raw_video`: expected bytes, found None"));
    let mut b = ok.clone();
    b.extend(key("video_file_name"));
    b.extend_from_slice(&[op::BININT1, 1]);
    assert!(pickle_err(&dict(&b)).1.contains("`video_file_name`"));
    let mut b = ok.clone();
    b.extend(key("actions"));
    b.extend_from_slice(&[op::BININT1, 1]);
    assert!(pickle_err(&dict(&b)).1.contains("`actions`"));
    assert!(pickle_err(&dict(&ok)).1.contains("no `sequence_length`"));
}

#[test]
fn array_data_length_must_match_shape() {
    let bytes = encode_episode(&sample());
    // Shape (2,) → (3,): BININT1 2 right after BININT1 1 (version) in the array state.
    let at = bytes.windows(4).position(|w| w == [op::BININT1, 1, op::BININT1, 2]).unwrap();
    let mut bad = bytes.clone();
    bad[at + 3] = 3;
    let (_, reason) = pickle_err(&bad);
    assert!(
        reason.contains("`actions`") && reason.contains("needs 24 bytes") && reason.contains("16"),
        "{reason}"
    );
}

#[test]
fn dtype_ranges_and_decoding_match_numpy() {
    assert_eq!(ActionDtype::I8.range(), (-128, 127));
    assert_eq!(ActionDtype::U32.range(), (0, u32::MAX.into()));
    assert_eq!(ActionDtype::U64.range(), (0, i64::MAX));
    assert_eq!(ActionDtype::I16.decode(&[0xff, 0x7f], false), 32767);
    assert_eq!(ActionDtype::I16.decode(&[0xff, 0x7f], true), -129);
    assert_eq!(ActionDtype::U64.decode(&[0xff; 8], false), u64::MAX.into());
    assert_eq!(ActionDtype::I64.decode(&[0xff; 8], false), -1);
    for d in ActionDtype::ALL {
        assert_eq!(ActionDtype::from_descr(d.descr()), Some(d));
    }
}
