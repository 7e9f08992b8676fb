//! Pickle opcode bytes (the subset this codec reads or writes) and their names for messages.

/// `\x80 <u8>`: protocol version.
pub const PROTO: u8 = 0x80;
/// `\x95 <u64>`: start of a frame of that many bytes (protocol 4+).
pub const FRAME: u8 = 0x95;
/// `.`: end of the pickle; the top of the stack is the result.
pub const STOP: u8 = b'.';
/// `(`: push a mark.
pub const MARK: u8 = b'(';
/// `}`: push an empty dict.
pub const EMPTY_DICT: u8 = b'}';
/// `s`: `dict[key] = value` from the two topmost items.
pub const SETITEM: u8 = b's';
/// `u`: set all key/value pairs above the last mark.
pub const SETITEMS: u8 = b'u';
/// `\x94`: memoize the top of the stack at the next free index (protocol 4+).
pub const MEMOIZE: u8 = 0x94;
/// `q <u8>`: memoize the top of the stack at an index.
pub const BINPUT: u8 = b'q';
/// `r <u32>`: memoize the top of the stack at an index.
pub const LONG_BINPUT: u8 = b'r';
/// `h <u8>`: push a memoized object.
pub const BINGET: u8 = b'h';
/// `j <u32>`: push a memoized object.
pub const LONG_BINGET: u8 = b'j';
/// `\x8c <u8 len> utf8`: short str.
pub const SHORT_BINUNICODE: u8 = 0x8c;
/// `X <u32 len> utf8`: str.
pub const BINUNICODE: u8 = b'X';
/// `\x8d <u64 len> utf8`: huge str.
pub const BINUNICODE8: u8 = 0x8d;
/// `C <u8 len> bytes`: short bytes.
pub const SHORT_BINBYTES: u8 = b'C';
/// `B <u32 len> bytes`: bytes.
pub const BINBYTES: u8 = b'B';
/// `\x8e <u64 len> bytes`: huge bytes.
pub const BINBYTES8: u8 = 0x8e;
/// `\x96 <u64 len> bytes`: bytearray (protocol 5, in-band buffers).
pub const BYTEARRAY8: u8 = 0x96;
/// `\x97`: out-of-band buffer (protocol 5); unsupported.
pub const NEXT_BUFFER: u8 = 0x97;
/// `\x98`: make the top buffer read-only (protocol 5); unsupported.
pub const READONLY_BUFFER: u8 = 0x98;
/// `J <i32>`: int.
pub const BININT: u8 = b'J';
/// `K <u8>`: int.
pub const BININT1: u8 = b'K';
/// `M <u16>`: int.
pub const BININT2: u8 = b'M';
/// `\x8a <u8 len> two's complement`: long int.
pub const LONG1: u8 = 0x8a;
/// `\x8b <u32 len> two's complement`: very long int.
pub const LONG4: u8 = 0x8b;
/// `\x88`: True.
pub const NEWTRUE: u8 = 0x88;
/// `\x89`: False.
pub const NEWFALSE: u8 = 0x89;
/// `N`: None.
pub const NONE: u8 = b'N';
/// `G <f64 big-endian>`: float.
pub const BINFLOAT: u8 = b'G';
/// `)`: empty tuple.
pub const EMPTY_TUPLE: u8 = b')';
/// `t`: tuple of the items above the last mark.
pub const TUPLE: u8 = b't';
/// `\x85`: 1-tuple of the top item.
pub const TUPLE1: u8 = 0x85;
/// `\x86`: 2-tuple of the two topmost items.
pub const TUPLE2: u8 = 0x86;
/// `\x87`: 3-tuple of the three topmost items.
pub const TUPLE3: u8 = 0x87;
/// `c module\nname\n`: push a global (protocol 0–3 spelling).
pub const GLOBAL: u8 = b'c';
/// `\x93`: push the global named by the two topmost str items (protocol 4+).
pub const STACK_GLOBAL: u8 = 0x93;
/// `R`: call the callable below the top with the top tuple as arguments.
pub const REDUCE: u8 = b'R';
/// `b`: `__setstate__` the object below the top with the top item.
pub const BUILD: u8 = b'b';

/// Name of an opcode byte as `pickletools` prints it, for error messages.
pub fn name(op: u8) -> &'static str {
    match op {
        PROTO => "PROTO",
        FRAME => "FRAME",
        STOP => "STOP",
        MARK => "MARK",
        EMPTY_DICT => "EMPTY_DICT",
        SETITEM => "SETITEM",
        SETITEMS => "SETITEMS",
        MEMOIZE => "MEMOIZE",
        BINPUT => "BINPUT",
        LONG_BINPUT => "LONG_BINPUT",
        BINGET => "BINGET",
        LONG_BINGET => "LONG_BINGET",
        SHORT_BINUNICODE => "SHORT_BINUNICODE",
        BINUNICODE => "BINUNICODE",
        BINUNICODE8 => "BINUNICODE8",
        SHORT_BINBYTES => "SHORT_BINBYTES",
        BINBYTES => "BINBYTES",
        BINBYTES8 => "BINBYTES8",
        BYTEARRAY8 => "BYTEARRAY8",
        NEXT_BUFFER => "NEXT_BUFFER",
        READONLY_BUFFER => "READONLY_BUFFER",
        BININT => "BININT",
        BININT1 => "BININT1",
        BININT2 => "BININT2",
        LONG1 => "LONG1",
        LONG4 => "LONG4",
        NEWTRUE => "NEWTRUE",
        NEWFALSE => "NEWFALSE",
        NONE => "NONE",
        BINFLOAT => "BINFLOAT",
        EMPTY_TUPLE => "EMPTY_TUPLE",
        TUPLE => "TUPLE",
        TUPLE1 => "TUPLE1",
        TUPLE2 => "TUPLE2",
        TUPLE3 => "TUPLE3",
        GLOBAL => "GLOBAL",
        STACK_GLOBAL => "STACK_GLOBAL",
        REDUCE => "REDUCE",
        BUILD => "BUILD",
        b'I' => "INT",
        b'L' => "LONG",
        b'S' => "STRING",
        b'T' => "BINSTRING",
        b'U' => "SHORT_BINSTRING",
        b'V' => "UNICODE",
        b'F' => "FLOAT",
        b']' => "EMPTY_LIST",
        b'a' => "APPEND",
        b'e' => "APPENDS",
        b'l' => "LIST",
        b'd' => "DICT",
        b'0' => "POP",
        b'1' => "POP_MARK",
        b'2' => "DUP",
        b'g' => "GET",
        b'p' => "PUT",
        b'i' => "INST",
        b'o' => "OBJ",
        0x81 => "NEWOBJ",
        0x92 => "NEWOBJ_EX",
        b'P' => "PERSID",
        b'Q' => "BINPERSID",
        0x82 => "EXT1",
        0x83 => "EXT2",
        0x84 => "EXT4",
        0x8f => "EMPTY_SET",
        0x90 => "ADDITEMS",
        0x91 => "FROZENSET",
        _ => "unknown opcode",
    }
}
