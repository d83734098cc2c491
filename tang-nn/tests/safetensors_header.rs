//! Hand-written headers: each defect's typed error and message, the JSON details a
//! header may use (escapes, surrogate pairs, unknown fields, padding), and what the
//! `safetensors` crate's reader does with the same bytes (why tang parses headers itself).

use tang_nn::safetensors::{Dtype, read_bytes};

/// A file of `header` followed by `data_len` zero bytes.
fn file(header: &str, data_len: usize) -> Vec<u8> {
    let mut f = (header.len() as u64).to_le_bytes().to_vec();
    f.extend_from_slice(header.as_bytes());
    f.resize(f.len() + data_len, 0);
    f
}

fn err(header: &str, data_len: usize) -> (String, String) {
    let e = read_bytes(&file(header, data_len)).unwrap_err();
    (e.kind().to_string(), e.to_string())
}

const ONE: &str = r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#;

#[test]
fn well_formed_details_are_accepted() {
    // Escapes and a surrogate pair in a name, an unknown field, JSON whitespace and
    // padding, a null metadata, an empty tensor at the end.
    let h = "{ \"__metadata__\" : null, \"w\\u00e9\\ud83d\\ude00\\n\" : {\"dtype\":\"BF16\", \
             \"future\": {\"x\": [1, 2.5, true]}, \"shape\":[1,2],\"data_offsets\":[0,4]}, \
             \"e\":{\"dtype\":\"I64\",\"shape\":[0],\"data_offsets\":[4,4]} }    ";
    let ck = read_bytes(&file(h, 4)).unwrap();
    let t = ck.tensors.get("wé😀\n").unwrap();
    assert_eq!((t.dtype(), t.shape()), (Dtype::BF16, &[1usize, 2][..]));
    assert_eq!(ck.tensors.get("e").unwrap().shape(), &[0]);
    let empty = read_bytes(&file("{}", 0)).unwrap();
    assert!(empty.tensors.is_empty() && empty.metadata.is_empty());
}

#[test]
fn each_defect_has_its_own_error_and_message() {
    let cases: &[(&str, usize, &str, &str)] = &[
        (ONE, 4, "offset_out_of_range", "the file is truncated"),
        (ONE, 12, "trailing_bytes", "trailing bytes"),
        (
            r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#,
            8,
            "duplicate_key",
            "names \"a\" twice in the header",
        ),
        (
            r#"{"a":{"dtype":"F32","dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#,
            8,
            "duplicate_key",
            "twice in tensor \"a\"",
        ),
        (
            r#"{"__metadata__":{"k":"1","k":"2"}}"#,
            0,
            "duplicate_key",
            "twice in __metadata__",
        ),
        (
            r#"{"a":{"dtype":"F31","shape":[2],"data_offsets":[0,8]}}"#,
            8,
            "unknown_dtype",
            "\"F31\"",
        ),
        (
            r#"{"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}}"#,
            8,
            "shape_overflow",
            "[4294967296, 4294967296]",
        ),
        (
            r#"{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}"#,
            8,
            "size_mismatch",
            "needs 12 bytes",
        ),
        (
            r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}"#,
            8,
            "overlapping_offsets",
            "\"a\" and \"b\" overlap",
        ),
        (
            r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}"#,
            12,
            "hole_in_offsets",
            "bytes 0..4",
        ),
        (
            r#"{"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}}"#,
            8,
            "invalid_header",
            "-2, not a size",
        ),
        (
            r#"{"a":{"dtype":"F32","shape":[2]}}"#,
            0,
            "invalid_header",
            "missing field \"data_offsets\"",
        ),
        (
            r#"{"a":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}}"#,
            2,
            "invalid_header",
            "12 bits of F4",
        ),
        (
            r#"{"a\ud800":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#,
            8,
            "json",
            "lone leading surrogate",
        ),
        (
            r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},}"#,
            8,
            "json",
            "expected '\"'",
        ),
        ("", 0, "invalid_header", "must be a JSON object"),
    ];
    for &(header, data_len, kind, words) in cases {
        let (got, message) = err(header, data_len);
        assert_eq!(got, kind, "{header}: {message}");
        assert!(message.contains(words), "{header}: {message}");
    }
}

#[test]
fn lengths_are_checked_before_anything_is_allocated() {
    let mut f = u64::MAX.to_le_bytes().to_vec();
    f.extend_from_slice(b"{}");
    let e = read_bytes(&f).unwrap_err();
    assert_eq!(e.kind(), "header_too_large", "{e}");
    let mut f = 100_000_000u64.to_le_bytes().to_vec();
    f.extend_from_slice(b"{}");
    let e = read_bytes(&f).unwrap_err();
    assert_eq!(e.kind(), "header_past_end", "{e}");
    assert!(e.to_string().contains("only 2 follow"), "{e}");
    assert_eq!(read_bytes(&[1, 2, 3]).unwrap_err().kind(), "too_short");
    let deep = format!(
        r#"{{"a":{{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":{}{}}}}}"#,
        "[".repeat(1_000_000),
        "]".repeat(1_000_000)
    );
    assert_eq!(err(&deep, 8).0, "json_too_deep");
    let mut bad = file(ONE, 8);
    bad[10] = 0xff;
    assert_eq!(read_bytes(&bad).unwrap_err().kind(), "header_not_utf8");
}

#[test]
fn the_safetensors_crate_accepts_a_duplicated_key_that_tang_refuses() {
    // Two entries named "a" with different dtypes and ranges: which one a reader keeps is
    // undefined. The crate keeps one silently; tang refuses the file.
    let h = r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"a":{"dtype":"I32","shape":[2],"data_offsets":[0,8]}}"#;
    let f = file(h, 8);
    assert!(safetensors::SafeTensors::deserialize(&f).is_ok());
    assert_eq!(read_bytes(&f).unwrap_err().kind(), "duplicate_key");
}
