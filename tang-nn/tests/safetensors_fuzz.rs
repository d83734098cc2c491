//! Hostile files: mutations of the PyTorch fixtures (truncations, appended bytes, bit
//! flips, forged header lengths, and header edits of each kind: unknown dtypes, shape
//! overflow, wrong sizes, overlapping / out-of-range / holed offsets, duplicate keys,
//! non-UTF-8, deep JSON, bad numbers, trailing characters). Every mutation must give a
//! typed error (or, where the mutation can leave a valid file, a successful read), never
//! a panic; targeted edits must give their own error kind. The `safetensors` crate's
//! reader runs on the same bytes: it accepts exactly the files tang accepts, except that
//! it silently takes files with a duplicated key, which tang refuses.
//!
//! `cargo test -p tang-nn --test safetensors_fuzz` runs a few hundred mutations. The full
//! 10,000, with the counts by error kind printed:
//!
//! ```text
//! cargo test -p tang-nn --test safetensors_fuzz -- --ignored --nocapture
//! ```

mod safetensors_common;

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};

use safetensors_common::{bytes, data_file, data_section, fixture, header};
use tang_nn::safetensors::{MAX_HEADER_LEN, TensorInfo, read_bytes, read_file};

/// A small seeded generator (SplitMix64), so that every run mutates the same way. (The
/// workspace's test helpers crate has one, but it depends on tang-nn, so tang-nn's own
/// tests cannot use it.)
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo + 1)
    }
}

/// One tensor entry as raw JSON fragments, so that edits can put anything in them.
#[derive(Clone)]
struct Entry {
    name: String,
    dtype: String,
    shape: String,
    offsets: String,
    extra: String,
}

/// A well-formed file taken apart: metadata, entries (in header order) and data.
#[derive(Clone)]
struct Parts {
    metadata: Vec<(String, String)>,
    entries: Vec<Entry>,
    infos: Vec<TensorInfo>,
    data: Vec<u8>,
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
        .replace('\t', "\\t")
}

impl Parts {
    fn of(file: &[u8]) -> Parts {
        let h = header(file);
        let entries = h
            .tensors
            .iter()
            .map(|t| Entry {
                name: escape(&t.name),
                dtype: format!("\"{}\"", t.dtype),
                shape: format!("{:?}", t.shape).replace(' ', ""),
                offsets: format!("[{},{}]", t.data_offsets[0], t.data_offsets[1]),
                extra: String::new(),
            })
            .collect();
        Parts {
            metadata: h.metadata.into_iter().collect(),
            entries,
            infos: h.tensors,
            data: data_section(file).to_vec(),
        }
    }

    fn header_text(&self, metadata_raw: Option<&str>) -> String {
        let mut parts = Vec::new();
        match metadata_raw {
            Some(raw) => parts.push(format!("\"__metadata__\":{raw}")),
            None if !self.metadata.is_empty() => {
                let m: Vec<String> = self
                    .metadata
                    .iter()
                    .map(|(k, v)| format!("\"{}\":\"{}\"", escape(k), escape(v)))
                    .collect();
                parts.push(format!("\"__metadata__\":{{{}}}", m.join(",")));
            }
            None => {}
        }
        for e in &self.entries {
            parts.push(format!(
                "\"{}\":{{\"dtype\":{},\"shape\":{},\"data_offsets\":{}{}}}",
                e.name, e.dtype, e.shape, e.offsets, e.extra
            ));
        }
        format!("{{{}}}", parts.join(","))
    }
}

/// A file from header bytes and data, with the true header length.
fn pack(header: &[u8], data: &[u8]) -> Vec<u8> {
    let mut f = (header.len() as u64).to_le_bytes().to_vec();
    f.extend_from_slice(header);
    f.extend_from_slice(data);
    f
}

/// Index (into `infos`) of the tensors in data order, skipping empty ones.
fn data_order(p: &Parts) -> Vec<usize> {
    let mut order: Vec<usize> = (0..p.infos.len())
        .filter(|&i| p.infos[i].data_offsets[1] > p.infos[i].data_offsets[0])
        .collect();
    order.sort_by_key(|&i| p.infos[i].data_offsets);
    order
}

/// One mutation of `file` and the error kind it must give (`None`: any outcome but a
/// panic, for mutations that may leave a valid file).
fn mutate(file: &[u8], rng: &mut Rng) -> (&'static str, Vec<u8>, Option<&'static str>) {
    let p = Parts::of(file);
    let hdr = p.header_text(None);
    let rebuilt = |p: &Parts| pack(p.header_text(None).as_bytes(), &p.data);
    let n = 8 + hdr.len();
    let some_entry = |rng: &mut Rng| rng.below(p.entries.len());
    match rng.below(20) {
        0 => {
            // Into the length, the header or the data, equally often.
            let header_end = file.len() - data_section(file).len();
            let (len, want) = match rng.below(3) {
                0 => (rng.below(8), "too_short"),
                1 => (8 + rng.below(header_end - 8), "header_past_end"),
                _ => (
                    header_end + rng.below(file.len() - header_end),
                    "offset_out_of_range",
                ),
            };
            ("truncate", file[..len].to_vec(), Some(want))
        }
        1 => {
            let mut f = file.to_vec();
            for _ in 0..rng.range(1, 64) {
                f.push(rng.next_u64() as u8);
            }
            ("append", f, Some("trailing_bytes"))
        }
        2 => {
            let mut f = file.to_vec();
            let i = rng.below(f.len());
            f[i] ^= 1 << rng.below(8);
            ("bit_flip_anywhere", f, None)
        }
        3 => {
            let mut f = file.to_vec();
            for _ in 0..rng.range(1, 8) {
                let i = rng.below(n.min(f.len()));
                f[i] ^= 1 << rng.below(8);
            }
            ("bit_flips_in_header", f, None)
        }
        4 => {
            let mut f = file.to_vec();
            let claimed = rng.range(MAX_HEADER_LEN + 1, u64::MAX);
            f[..8].copy_from_slice(&claimed.to_le_bytes());
            ("header_len_over_cap", f, Some("header_too_large"))
        }
        5 => {
            let mut f = file.to_vec();
            let claimed = rng.range(f.len() as u64 - 7, MAX_HEADER_LEN);
            f[..8].copy_from_slice(&claimed.to_le_bytes());
            ("header_len_past_end", f, Some("header_past_end"))
        }
        6 => {
            let mut q = p.clone();
            let i = some_entry(rng);
            let bad = [
                "\"F33\"",
                "\"float32\"",
                "\"\"",
                "\"f32\"",
                "\"F32 \"",
                "\"I4\"",
            ];
            q.entries[i].dtype = bad[rng.below(bad.len())].to_string();
            ("unknown_dtype", rebuilt(&q), Some("unknown_dtype"))
        }
        7 => {
            let mut q = p.clone();
            let i = some_entry(rng);
            let bad = [
                "[4294967296,4294967296,4294967296]",
                "[18446744073709551615,2]",
                "[99999999999999999999999]",
                "[3037000500,3037000500]",
                "[2305843009213693952]",
            ];
            q.entries[i].shape = bad[rng.below(bad.len())].to_string();
            ("shape_overflow", rebuilt(&q), Some("shape_overflow"))
        }
        8 => {
            let mut q = p.clone();
            let i = some_entry(rng);
            let [b, e] = q.infos[i].data_offsets;
            q.entries[i].offsets = match rng.below(3) {
                0 => format!("[{b},{}]", e + rng.range(1, 9)),
                1 => format!("[{e},{b}]"),
                _ => format!("[{},{e}]", b + rng.range(1, 9)),
            };
            // A reversed pair of an empty tensor is no change at all.
            let want = (b != e).then_some("size_mismatch");
            ("wrong_size", rebuilt(&q), want)
        }
        9 => {
            let order = data_order(&p);
            let mut q = p.clone();
            let j = 1 + rng.below(order.len() - 1);
            let (prev, i) = (order[j - 1], order[j]);
            let prev_len = p.infos[prev].data_offsets[1] - p.infos[prev].data_offsets[0];
            let k = rng.range(1, prev_len);
            let [b, e] = p.infos[i].data_offsets;
            q.entries[i].offsets = format!("[{},{}]", b - k, e - k);
            ("overlap", rebuilt(&q), Some("overlapping_offsets"))
        }
        10 => {
            let order = data_order(&p);
            let mut q = p.clone();
            let at = p.infos[order[rng.below(order.len())]].data_offsets[0];
            let k = rng.range(1, 64);
            for (e, info) in q.entries.iter_mut().zip(&p.infos) {
                let [b, end] = info.data_offsets;
                if b >= at && end > b {
                    e.offsets = format!("[{},{}]", b + k, end + k);
                }
            }
            let junk: Vec<u8> = (0..k).map(|_| rng.next_u64() as u8).collect();
            q.data.splice(at as usize..at as usize, junk);
            ("hole", rebuilt(&q), Some("hole_in_offsets"))
        }
        11 => {
            let mut q = p.clone();
            let i = some_entry(rng);
            let [b, e] = p.infos[i].data_offsets;
            let start = p.data.len() as u64 + rng.range(1, 1 << 40);
            q.entries[i].offsets = format!("[{start},{}]", start + (e - b));
            ("out_of_range", rebuilt(&q), Some("offset_out_of_range"))
        }
        12 => {
            let mut q = p.clone();
            let i = some_entry(rng);
            if rng.below(2) == 0 {
                let copy = q.entries[i].clone();
                q.entries.insert(rng.below(q.entries.len() + 1), copy);
            } else {
                let fields = [
                    format!(",\"dtype\":{}", q.entries[i].dtype),
                    format!(",\"shape\":{}", q.entries[i].shape),
                    format!(",\"data_offsets\":{}", q.entries[i].offsets),
                ];
                q.entries[i].extra = fields[rng.below(3)].clone();
            }
            ("duplicate_key", rebuilt(&q), Some("duplicate_key"))
        }
        13 => {
            let mut h = hdr.clone().into_bytes();
            // Inside a tensor name (just after its opening quote).
            let name_at = hdr.rfind("\":{\"dtype\"").unwrap();
            let open = hdr[..name_at].rfind('"').unwrap() + 1;
            let bad: [&[u8]; 4] = [b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\x80"];
            let pos = open + rng.below(name_at - open + 1);
            h.splice(pos..pos, bad[rng.below(bad.len())].iter().copied());
            ("non_utf8", pack(&h, &p.data), Some("header_not_utf8"))
        }
        14 => {
            let mut q = p.clone();
            let i = some_entry(rng);
            let depth = rng.range(64, 100_000) as usize;
            q.entries[i].extra = format!(",\"x\":{}{}", "[".repeat(depth), "]".repeat(depth));
            ("deep_json", rebuilt(&q), Some("json_too_deep"))
        }
        15 => {
            let mut q = p.clone();
            let i = some_entry(rng);
            let bad = ["-1", "1.5", "1e3", "true", "null", "\"4\""];
            let v = bad[rng.below(bad.len())];
            if rng.below(2) == 0 {
                q.entries[i].shape = format!("[{v}]");
            } else {
                q.entries[i].offsets = format!("[0,{v}]");
            }
            ("bad_number", rebuilt(&q), Some("invalid_header"))
        }
        16 => {
            let tails = ["x", "}", "{}", ",", "\u{0}"];
            let h = format!("{hdr}{}", tails[rng.below(tails.len())]);
            (
                "trailing_characters",
                pack(h.as_bytes(), &p.data),
                Some("json"),
            )
        }
        17 => {
            let raws = ["[]", "\"config\"", "{\"a\":1}", "{\"a\":{}}"];
            let raw = raws[rng.below(raws.len())];
            let h = p.header_text(Some(raw));
            (
                "metadata_not_strings",
                pack(h.as_bytes(), &p.data),
                Some("invalid_header"),
            )
        }
        18 => {
            let mut h = hdr.clone().into_bytes();
            if !h.is_empty() {
                h.remove(rng.below(h.len()));
            }
            ("delete_header_byte", pack(&h, &p.data), None)
        }
        _ => {
            let raws = ["[]", "3", "\"x\"", "null"];
            let h = raws[rng.below(raws.len())];
            (
                "header_not_object",
                pack(h.as_bytes(), &p.data),
                Some("invalid_header"),
            )
        }
    }
}

/// The files mutations start from.
fn seeds() -> Vec<Vec<u8>> {
    let mut s: Vec<Vec<u8>> = [
        "gpt.safetensors",
        "gpt_f16.safetensors",
        "gpt_bf16.safetensors",
        "mlp.safetensors",
        "gpt_io.safetensors",
    ]
    .iter()
    .map(|f| bytes(&fixture(f)))
    .collect();
    s.push(bytes(&data_file("save_file_f32.safetensors")));
    s
}

/// Runs `count` mutations; returns the outcomes by error kind, and fails on any panic or
/// any targeted mutation that gave another outcome than its own error.
fn run(count: usize, seed: u64) -> BTreeMap<String, usize> {
    let seeds = seeds();
    let mut rng = Rng(seed);
    let mut outcomes = BTreeMap::new();
    let mut by_mutation: BTreeMap<&str, usize> = BTreeMap::new();
    let mut failures = Vec::new();
    let mut crate_differs: BTreeMap<String, usize> = BTreeMap::new();
    let dir = std::env::temp_dir().join(format!("tang-st-fuzz-{}-{seed}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for case in 0..count {
        let file = &seeds[rng.below(seeds.len())];
        let (what, mutated, want) = mutate(file, &mut rng);
        *by_mutation.entry(what).or_default() += 1;
        let got = match catch_unwind(AssertUnwindSafe(|| read_bytes(&mutated))) {
            Ok(Ok(_)) => "ok".to_string(),
            Ok(Err(e)) => e.kind().to_string(),
            Err(_) => "PANIC".to_string(),
        };
        // Every 16th case also goes through the file reader, which must agree.
        if case % 16 == 0 {
            let path = dir.join("case.safetensors");
            std::fs::write(&path, &mutated).unwrap();
            let from_file = match catch_unwind(AssertUnwindSafe(|| read_file(&path))) {
                Ok(Ok(_)) => "ok".to_string(),
                Ok(Err(e)) => e.kind().to_string(),
                Err(_) => "PANIC".to_string(),
            };
            if from_file != got {
                failures.push(format!("case {case} {what}: bytes {got}, file {from_file}"));
            }
        }
        // The safetensors crate's reader on the same bytes: a file it refuses must not
        // be accepted here (tang is stricter: it also refuses duplicate keys).
        let crate_ok =
            match catch_unwind(|| safetensors::SafeTensors::deserialize(&mutated).is_ok()) {
                Ok(true) => "ok",
                Ok(false) => "error",
                Err(_) => "panic",
            };
        if (crate_ok == "ok") != (got == "ok") {
            *crate_differs
                .entry(format!("{what}: crate {crate_ok}, tang {got}"))
                .or_default() += 1;
            if crate_ok != "ok" && got == "ok" {
                failures.push(format!(
                    "case {case} {what}: the crate refuses, tang accepts"
                ));
            }
        }
        if got == "PANIC" || want.is_some_and(|w| w != got) {
            failures.push(format!("case {case} {what}: want {want:?}, got {got}"));
        }
        *outcomes.entry(got).or_default() += 1;
    }
    std::fs::remove_dir_all(&dir).unwrap();
    println!("{count} mutated files, by mutation: {by_mutation:?}");
    println!("outcomes by kind: {outcomes:?}");
    println!("where the safetensors crate's reader differs: {crate_differs:?}");
    assert!(
        failures.is_empty(),
        "{} failures: {:#?}",
        failures.len(),
        &failures[..failures.len().min(20)]
    );
    assert!(!outcomes.contains_key("PANIC"));
    // tang and the crate accept and refuse the same files, but for duplicate keys.
    assert!(
        crate_differs
            .keys()
            .all(|k| k.starts_with("duplicate_key: crate ok")),
        "{crate_differs:?}"
    );
    outcomes
}

#[test]
fn a_few_hundred_mutated_fixtures_give_typed_errors_and_no_panic() {
    let outcomes = run(300, 13);
    // Each kind of targeted defect was produced and recognised.
    for kind in [
        "too_short",
        "header_too_large",
        "header_past_end",
        "header_not_utf8",
        "json",
        "json_too_deep",
        "duplicate_key",
        "invalid_header",
        "unknown_dtype",
        "shape_overflow",
        "size_mismatch",
        "overlapping_offsets",
        "hole_in_offsets",
        "offset_out_of_range",
        "trailing_bytes",
    ] {
        assert!(outcomes.contains_key(kind), "no {kind} in {outcomes:?}");
    }
}

#[test]
#[ignore = "10,000 mutations: run with -- --ignored --nocapture"]
fn ten_thousand_mutated_fixtures_give_typed_errors_and_no_panic() {
    let outcomes = run(10_000, 2026);
    assert_eq!(outcomes.values().sum::<usize>(), 10_000);
}

#[test]
fn the_unmutated_seeds_read_cleanly() {
    for (i, s) in seeds().iter().enumerate() {
        read_bytes(s).unwrap_or_else(|e| panic!("seed {i}: {e}"));
        // Taken apart and put back together unchanged, as the edits do.
        let p = Parts::of(s);
        read_bytes(&pack(p.header_text(None).as_bytes(), &p.data))
            .unwrap_or_else(|e| panic!("rebuilt seed {i}: {e}"));
    }
}
