//! The bench's results: a table on stdout as cases finish, and JSON (`--json PATH`) in
//! the shape of `torch_anchors.py`'s output so the two can be compared by name.

use std::fmt::Display;
use std::fmt::Write as _;

/// One measured case.
pub struct Entry {
    /// Case name (matches `torch_anchors.py` where there is a counterpart).
    pub name: String,
    /// Median milliseconds, or the error that stopped the case.
    pub ms: Result<f64, String>,
    /// A derived rate (GB/s, TFLOP/s, us/launch) and its unit.
    pub rate: Option<(f64, String)>,
}

/// Collected results, with the `--only` filter.
pub struct Report {
    device: String,
    only: Option<String>,
    entries: Vec<Entry>,
}

impl Report {
    /// An empty report for `device`; `only` keeps cases whose name contains it.
    pub fn new(device: String, only: Option<String>) -> Report {
        println!("device: {device}");
        Report {
            device,
            only,
            entries: Vec::new(),
        }
    }

    /// Whether a case (or a group of cases with this name prefix) should run.
    pub fn wants(&self, name: &str) -> bool {
        self.only
            .as_ref()
            .is_none_or(|o| name.contains(o.as_str()) || o.contains(name))
    }

    fn push(&mut self, e: Entry) {
        if !self.wants(&e.name) {
            return;
        }
        match (&e.ms, &e.rate) {
            (Ok(ms), Some((r, u))) => println!("{:44} {ms:10.4} ms {r:10.1} {u}", e.name),
            (Ok(ms), None) => println!("{:44} {ms:10.4} ms", e.name),
            (Err(err), _) => println!("{:44} FAILED: {err}", e.name),
        }
        self.entries.push(e);
    }

    /// Records a case measured in milliseconds.
    pub fn add(&mut self, name: &str, ms: f64) {
        self.push(Entry {
            name: name.into(),
            ms: Ok(ms),
            rate: None,
        });
    }

    /// Records a case with a derived rate.
    pub fn add_rate(&mut self, name: &str, ms: f64, rate: f64, unit: &str) {
        self.push(Entry {
            name: name.into(),
            ms: Ok(ms),
            rate: Some((rate, unit.into())),
        });
    }

    /// Records a case that failed (the run goes on).
    pub fn fail(&mut self, name: &str, err: &dyn Display) {
        self.push(Entry {
            name: name.into(),
            ms: Err(err.to_string()),
            rate: None,
        });
    }

    /// Number of failed cases.
    pub fn failures(&self) -> usize {
        self.entries.iter().filter(|e| e.ms.is_err()).count()
    }

    /// The results as JSON: `{"device": .., "results": {name: {"ms", "rate", "unit"}}}`.
    pub fn to_json(&self) -> String {
        let mut s = format!(
            "{{\n \"device\": {},\n \"results\": {{",
            json_str(&self.device)
        );
        for (i, e) in self.entries.iter().enumerate() {
            let sep = if i == 0 { "" } else { "," };
            let body = match (&e.ms, &e.rate) {
                (Ok(ms), Some((r, u))) => format!(
                    "{{\"ms\": {}, \"rate\": {}, \"unit\": {}}}",
                    num(*ms),
                    num(*r),
                    json_str(u)
                ),
                (Ok(ms), None) => {
                    format!("{{\"ms\": {}, \"rate\": null, \"unit\": \"\"}}", num(*ms))
                }
                (Err(err), _) => format!("{{\"ms\": null, \"error\": {}}}", json_str(err)),
            };
            let _ = write!(s, "{sep}\n  {}: {body}", json_str(&e.name));
        }
        s.push_str("\n }\n}\n");
        s
    }
}

fn num(v: f64) -> String {
    if v.is_finite() {
        format!("{v}")
    } else {
        "null".into()
    }
}

fn json_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
