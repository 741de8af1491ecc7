#!/usr/bin/env python3
"""Generate the safetensors test corpus: hostile files and good files.

Plain Python 3 (struct + json), no torch. Run from the repository root:

    python3 tools/make_bad_safetensors.py

It writes test/data/bad/*.safetensors (each must be rejected by bertc with a
message containing the substring listed in BAD below; test/test_safetensors.c
holds the same table) and test/data/good_*.safetensors with these values:

good_all_dtypes.safetensors  (header in this order; metadata
                              {"format": "pt", "source": "make_bad_safetensors.py"})
    f32    F32  [2, 3]  0.0, 1.5, -2.25, 1024.0, 3.4028234663852886e38, -1.1754943508222875e-38
    f16    F16  [6]     1.0, -2.0, 0.5, 65504.0, 2**-24 (smallest subnormal), -0.0
    f16inf F16  [2]     +inf, -inf
    bf16   BF16 [4]     1.0, -3.5, 2**100, 0.0078125
    f64    F64  [3]     0.1, -1e10, 1e-3   (read as float32: the nearest float of each)
    i64    I64  [2, 2]  0, -1, 2147483647, -2147483648
    i32    I32  [3]     7, -7, 2147483647
    u8     U8   [4]     0, 1, 128, 255
    bool   BOOL [5]     1, 0, 0, 1, 1
    scalar F32  []      42.0
    empty  F32  [0, 3]  (no elements)
    i8     I8   [2]     1, -1  (a valid file entry bertc refuses to convert)

good_hf_layout.safetensors  exactly what huggingface/safetensors `serialize` writes:
    entries sorted by dtype (I64 before F32) then name, compact JSON,
    "__metadata__" first, header padded with spaces to a multiple of 8.
    metadata {"format": "pt"}
    b  I64 [2]     1, -2
    a  F32 [2, 2]  1.0, 2.0, 3.0, 4.0
    c  F32 [1]     0.5
    bertc's writer must reproduce this file byte for byte.

good_spaced.safetensors  legal but unusual: a pretty-printed header with
    newlines, entries not in offset order, a non-ASCII name.
    "z"          F32 [2]  -1.0, 1.0     (data_offsets [12, 20])
    "caf\u00e9"  I32 [3]  10, 20, 30    (data_offsets [0, 12])
"""

import json
import os
import struct
import zlib

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
DATA = os.path.join(ROOT, "test", "data")
BAD_DIR = os.path.join(DATA, "bad")


def f32(*v):
    return struct.pack("<%df" % len(v), *v)


def pad8(header):
    return header + b" " * ((8 - len(header) % 8) % 8)


def file_bytes(header, data, pad=True, length=None):
    """8-byte little-endian length, the header (bytes or a JSON-able dict), data."""
    if not isinstance(header, bytes):
        header = json.dumps(header, separators=(",", ":")).encode()
    if pad:
        header = pad8(header)
    n = len(header) if length is None else length
    return struct.pack("<Q", n) + header + data


def entry(dtype, shape, begin, end):
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}


def write(path, content):
    with open(path, "wb") as f:
        f.write(content)


# --------------------------------------------------------------------------
# Good files
# --------------------------------------------------------------------------

def bf16(v):
    return struct.unpack("<I", struct.pack("<f", v))[0] >> 16


def good_all_dtypes():
    parts = [
        ("f32", "F32", [2, 3], f32(0.0, 1.5, -2.25, 1024.0, 3.4028234663852886e38,
                                   -1.1754943508222875e-38)),
        ("f16", "F16", [6], struct.pack("<6e", 1.0, -2.0, 0.5, 65504.0, 2.0**-24, -0.0)),
        ("f16inf", "F16", [2], struct.pack("<2H", 0x7C00, 0xFC00)),
        ("bf16", "BF16", [4], struct.pack("<4H", *[bf16(v) for v in (1.0, -3.5, 2.0**100,
                                                                    0.0078125)])),
        ("f64", "F64", [3], struct.pack("<3d", 0.1, -1e10, 1e-3)),
        ("i64", "I64", [2, 2], struct.pack("<4q", 0, -1, 2147483647, -2147483648)),
        ("i32", "I32", [3], struct.pack("<3i", 7, -7, 2147483647)),
        ("u8", "U8", [4], bytes([0, 1, 128, 255])),
        ("bool", "BOOL", [5], bytes([1, 0, 0, 1, 1])),
        ("scalar", "F32", [], f32(42.0)),
        ("empty", "F32", [0, 3], b""),
        ("i8", "I8", [2], struct.pack("<2b", 1, -1)),
    ]
    header = {"__metadata__": {"format": "pt", "source": "make_bad_safetensors.py"}}
    data = b""
    for name, dtype, shape, raw in parts:
        header[name] = entry(dtype, shape, len(data), len(data) + len(raw))
        data += raw
    return file_bytes(header, data)


def good_hf_layout():
    header = {"__metadata__": {"format": "pt"},
              "b": entry("I64", [2], 0, 16),
              "a": entry("F32", [2, 2], 16, 32),
              "c": entry("F32", [1], 32, 36)}
    data = struct.pack("<2q", 1, -2) + f32(1.0, 2.0, 3.0, 4.0) + f32(0.5)
    return file_bytes(header, data)


def good_spaced():
    header = ('{\n  "z": {"dtype": "F32", "shape": [2], "data_offsets": [12, 20]},\n'
              '  "caf\\u00e9" : { "shape" : [ 3 ], "dtype" : "I32",\n'
              '                 "data_offsets" : [ 0 , 12 ] }\n}\n').encode()
    data = struct.pack("<3i", 10, 20, 30) + f32(-1.0, 1.0)
    return file_bytes(header, data, pad=False)


# --------------------------------------------------------------------------
# Bad files: (name, content, stage, substring bertc's message must contain)
# stage "open": st_open_* fails; "f32"/"i32": opening works, reading the
# tensor "x" as float32/int32 fails.
# --------------------------------------------------------------------------

def one(dtype, shape, begin, end, data, name="x"):
    return file_bytes({name: entry(dtype, shape, begin, end)}, data)


def raw_header(text, data=b""):
    return file_bytes(text.encode() if isinstance(text, str) else text, data)


GOOD_X = one("F32", [2], 0, 8, f32(1.0, 2.0))


def with_crc32(crc, data, flip=None):
    """x F32 [2] as bertc's st_write_file stores it: "bertc.crc32" in
    __metadata__ (zlib's CRC-32 of the data section, 8 hex digits). `crc` is
    the value to store (None: the right one); flip=i flips the low bit of data
    byte i after the CRC was taken, as a bad disk or copy would."""
    crc = "%08x" % zlib.crc32(data) if crc is None else crc
    if flip is not None:
        data = data[:flip] + bytes([data[flip] ^ 1]) + data[flip + 1:]
    return file_bytes({"__metadata__": {"format": "pt", "bertc.crc32": crc},
                       "x": entry("F32", [2], 0, 8)}, data)


BAD = [
    ("empty", b"", "open", "shorter than the 8-byte"),
    ("short", b"\x05\x00\x00\x00\x00", "open", "shorter than the 8-byte"),
    ("truncated", GOOD_X[:-3], "open", "run past the end of the data section"),
    ("header_past_eof", struct.pack("<Q", 1000) + b"{}" + b" " * 40, "open",
     "runs past the end of the file"),
    ("header_2pow63", struct.pack("<Q", 2**63) + b"{}" + b" " * 6, "open",
     "runs past the end of the file"),
    ("header_4gb", struct.pack("<Q", 2**32) + b"{}" + b" " * 1014, "open",
     "runs past the end of the file"),
    ("header_empty", struct.pack("<Q", 0), "open", "expected a JSON value"),
    ("json_syntax", raw_header('{"x": {"dtype": "F32", "shape": [2],}}'), "open",
     "trailing comma"),
    ("json_garbage", raw_header('{"x": 1} trailing'), "open", "after the end of the JSON value"),
    ("json_utf8", raw_header(b'{"\xff": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]}}'),
     "open", "invalid UTF-8"),
    ("not_object", raw_header('[1, 2]'), "open", "expected a JSON object"),
    ("entry_not_object", raw_header('{"x": 5}'), "open", "a tensor entry must be an object"),
    ("unknown_dtype", one("F33", [2], 0, 8, f32(1, 2)), "open", "unknown dtype"),
    ("dtype_not_string", raw_header('{"x": {"dtype": 4, "shape": [], "data_offsets": [0, 4]}}',
                                    f32(1)), "open", "expected a string"),
    ("missing_offsets", raw_header('{"x": {"dtype": "F32", "shape": [1]}}', f32(1)), "open",
     "has no \"data_offsets\""),
    ("unknown_field", raw_header('{"x": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4],'
                                 ' "strides": [1]}}', f32(1)), "open", "unknown field"),
    ("offsets_not_pair", raw_header('{"x": {"dtype": "F32", "shape": [1], "data_offsets": [0]}}',
                                    f32(1)), "open", "data_offsets must be an array"),
    ("overlap", file_bytes({"x": entry("F32", [2], 0, 8), "y": entry("F32", [2], 4, 12)},
                           f32(1, 2, 3)), "open", "overlap"),
    # holes and trailing bytes: the reference library refuses both
    ("hole", file_bytes({"x": entry("F32", [2], 0, 8), "y": entry("F32", [2], 12, 20)},
                        f32(1, 2, 0, 3, 4)), "open", "[8, 12) belong to no tensor"),
    ("hole_at_start", one("F32", [2], 4, 12, f32(0, 1, 2)), "open",
     "[0, 4) belong to no tensor"),
    ("trailing_bytes", one("F32", [2], 0, 8, f32(1, 2) + b"\0" * 4), "open",
     "4 trailing bytes [8, 12)"),
    ("no_tensors_trailing", file_bytes({"__metadata__": {"format": "pt"}}, b"\0" * 8), "open",
     "8 trailing bytes"),
    ("empty_inside", file_bytes({"x": entry("F32", [2], 0, 8), "y": entry("F32", [0], 4, 4)},
                                f32(1, 2)), "open", "overlap"),
    ("offsets_out_of_range", one("F32", [2], 8, 16, f32(1, 2)), "open",
     "run past the end of the data section"),
    ("begin_gt_end", one("F32", [0], 8, 4, f32(1, 2)), "open", "begin > end"),
    ("shape_bytes_mismatch", one("F32", [3], 0, 8, f32(1, 2)), "open", "needs 3 x 4 bytes"),
    ("negative_shape", one("F32", [-2], 0, 8, f32(1, 2)), "open", "non-negative"),
    ("shape_float", one("F32", [2.0], 0, 8, f32(1, 2)), "open", "expected an integer"),
    ("shape_overflow", one("F32", [2**32, 2**32], 0, 8, f32(1, 2)), "open", "overflows"),
    ("too_many_dims", one("F32", [1] * 7, 0, 4, f32(1)), "open", "supports up to 6"),
    ("duplicate_key", raw_header('{"x": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},'
                                 ' "x": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}',
                                 f32(1, 2)), "open", "duplicate key"),
    ("metadata_not_object", raw_header('{"__metadata__": ["pt"]}'), "open",
     "__metadata__ must be an object"),
    ("metadata_not_string", raw_header('{"__metadata__": {"epoch": 3}}'), "open",
     "__metadata__ values must be strings"),
    ("nul_name", raw_header('{"a\\u0000b": {"dtype": "F32", "shape": [1], '
                            '"data_offsets": [0, 4]}}', f32(1)), "open", "NUL"),
    # "F32\u0000junk" must not read as "F32", nor a field "dtype\u0000" as "dtype"
    ("dtype_nul", raw_header('{"x": {"dtype": "F32\\u0000junk", "shape": [1], '
                             '"data_offsets": [0, 4]}}', f32(1)), "open", "NUL character"),
    ("field_nul", raw_header('{"x": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4], '
                             '"dtype\\u0000": "F32"}}', f32(1)), "open", "unknown field"),
    ("metadata_key_nul", raw_header('{"__metadata__\\u0000": {"a": "b"}}'), "open",
     "NUL character"),
    ("huge_tensor", one("F32", [2**30], 0, 2**32, f32(1, 2)), "open",
     "run past the end of the data section"),
    ("deep_nesting", raw_header("[" * 100000), "open", "nesting deeper than 64"),
    ("header_1gb", struct.pack("<Q", 2**30) + b"{}" + b" " * 1014, "open",
     "runs past the end of the file"),
    ("tensor_1gb", one("F32", [2**28], 0, 2**30, f32(1, 2)), "open",
     "run past the end of the data section"),
    ("shape_wraps_to_zero", one("F32", [2**62, 4], 0, 0, b""), "open", "overflows 2^63"),
    ("shape_beyond_int64", one("F32", [2**64], 0, 4, f32(1)), "open",
     "outside the int64 range"),
    ("shape_not_array", raw_header('{"x": {"dtype": "F32", "shape": 2, "data_offsets": [0, 8]}}',
                                   f32(1, 2)), "open", "shape must be an array of integers"),
    ("offsets_negative", one("F32", [2], -8, 0, f32(1, 2)), "open",
     "must be a non-negative integer"),
    ("offsets_float", raw_header('{"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8.0]}}',
                                 f32(1, 2)), "open", "written with a fraction or exponent"),
    ("header_nul_padding", file_bytes(b'{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}'
                                      + b"\x00" * 7, f32(1, 2), pad=False), "open",
     "unexpected byte 0x00 after the end"),
    ("bool_byte", one("BOOL", [3], 0, 3, bytes([0, 1, 2])), "f32", "must be 0 or 1"),
    ("i64_out_of_int32", one("I64", [2], 0, 16, struct.pack("<2q", 5, 2**40)), "i32",
     "outside the int32 range"),
    ("float_as_int", GOOD_X, "i32", "cannot read as int32"),
    ("i8_unsupported", one("I8", [2], 0, 2, b"\x01\xff"), "f32", "cannot read as float32"),
    ("crc_flipped_bit", with_crc32(None, f32(1, 2), flip=5), "open",
     "data section checksum mismatch"),
    ("crc_not_hex", with_crc32("0xcbf439", f32(1, 2)), "open",
     '"bertc.crc32" is "0xcbf439", not 8 hex digits'),
    ("crc_too_short", with_crc32("cbf4392", f32(1, 2)), "open", "not 8 hex digits"),
]


def main():
    os.makedirs(BAD_DIR, exist_ok=True)
    for name, content, _, _ in BAD:
        write(os.path.join(BAD_DIR, name + ".safetensors"), content)
    write(os.path.join(DATA, "good_all_dtypes.safetensors"), good_all_dtypes())
    write(os.path.join(DATA, "good_hf_layout.safetensors"), good_hf_layout())
    write(os.path.join(DATA, "good_spaced.safetensors"), good_spaced())
    print("wrote %d bad files to %s and 3 good files to %s" % (len(BAD), BAD_DIR, DATA))


if __name__ == "__main__":
    main()
