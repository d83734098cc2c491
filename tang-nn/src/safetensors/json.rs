//! A strict, bounded JSON reader for safetensors headers, and the string escaping of the
//! format's reference writer.
//!
//! tang reads headers itself rather than through a general JSON library so that every
//! defect of a hostile header has its own typed error: a duplicate key (which a map-based
//! reader silently collapses), nesting past a fixed depth (no stack overflow), a lone
//! surrogate, a number that is not a non-negative integer. Nothing is allocated beyond
//! the strings and integers the header really holds.

use super::error::SafetensorsError;

/// Deepest nesting accepted inside an ignored value. A safetensors header needs three
/// levels (header, tensor entry, shape); unknown fields may hold a little more.
pub(crate) const MAX_DEPTH: usize = 64;

/// A position in a header being read.
pub(crate) struct Cursor<'a> {
    text: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `text` (already checked to be UTF-8).
    pub(crate) fn new(text: &'a str) -> Self {
        Cursor {
            text: text.as_bytes(),
            pos: 0,
        }
    }

    /// The current byte offset.
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    /// The header text between two offsets (lossy only if they split a character, which
    /// callers avoid by passing token boundaries).
    pub(crate) fn slice(&self, start: usize, end: usize) -> String {
        String::from_utf8_lossy(self.text.get(start..end).unwrap_or_default()).into_owned()
    }

    /// A syntax error at the current position.
    pub(crate) fn error(&self, detail: impl Into<String>) -> SafetensorsError {
        SafetensorsError::Json {
            offset: self.pos,
            detail: detail.into(),
        }
    }

    /// Skips JSON whitespace.
    pub(crate) fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.text.get(self.pos) {
            self.pos += 1;
        }
    }

    /// The next non-whitespace byte, without consuming it.
    pub(crate) fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.text.get(self.pos).copied()
    }

    /// Consumes `byte` (after whitespace) or reports what was found instead.
    pub(crate) fn expect(&mut self, byte: u8) -> Result<(), SafetensorsError> {
        match self.peek() {
            Some(b) if b == byte => {
                self.pos += 1;
                Ok(())
            }
            Some(b) => Err(self.error(format!(
                "expected '{}', found '{}'",
                byte as char,
                b.escape_ascii()
            ))),
            None => Err(self.error(format!("expected '{}', found the end", byte as char))),
        }
    }

    /// Consumes `byte` if it comes next (after whitespace).
    pub(crate) fn eat(&mut self, byte: u8) -> bool {
        if self.peek() == Some(byte) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// Whether only whitespace remains.
    pub(crate) fn at_end(&mut self) -> bool {
        self.peek().is_none()
    }

    /// Reads the separator after an element of an object or array: `true` when another
    /// element follows (`,`), `false` at the closing `close`.
    pub(crate) fn next_element(&mut self, close: u8) -> Result<bool, SafetensorsError> {
        if self.eat(b',') {
            Ok(true)
        } else if self.eat(close) {
            Ok(false)
        } else {
            Err(self.error(format!("expected ',' or '{}'", close as char)))
        }
    }

    /// Reads a string literal.
    pub(crate) fn string(&mut self) -> Result<String, SafetensorsError> {
        self.expect(b'"')?;
        let mut out = String::new();
        loop {
            let start = self.pos;
            while let Some(&b) = self.text.get(self.pos) {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.pos += 1;
            }
            // The text is UTF-8 and the run stops only at ASCII bytes, so it is a whole
            // sequence of characters.
            out.push_str(
                std::str::from_utf8(&self.text[start..self.pos])
                    .map_err(|_| self.error("invalid UTF-8 in a string"))?,
            );
            match self.text.get(self.pos) {
                None => return Err(self.error("unterminated string")),
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.pos += 1;
                    out.push(self.escape()?);
                }
                Some(_) => return Err(self.error("control character in a string")),
            }
        }
    }

    /// Reads the character of an escape sequence (after the backslash).
    fn escape(&mut self) -> Result<char, SafetensorsError> {
        let b = *self
            .text
            .get(self.pos)
            .ok_or_else(|| self.error("unterminated escape"))?;
        self.pos += 1;
        Ok(match b {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let first = self.hex4()?;
                match first {
                    0xD800..=0xDBFF => {
                        if self.text.get(self.pos..self.pos + 2) != Some(b"\\u") {
                            return Err(self.error("lone leading surrogate in a \\u escape"));
                        }
                        self.pos += 2;
                        let second = self.hex4()?;
                        if !(0xDC00..=0xDFFF).contains(&second) {
                            return Err(self.error("invalid trailing surrogate in a \\u escape"));
                        }
                        let c = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00);
                        char::from_u32(c).ok_or_else(|| self.error("invalid \\u escape"))?
                    }
                    0xDC00..=0xDFFF => {
                        return Err(self.error("lone trailing surrogate in a \\u escape"));
                    }
                    c => char::from_u32(c).ok_or_else(|| self.error("invalid \\u escape"))?,
                }
            }
            _ => return Err(self.error("invalid escape")),
        })
    }

    /// Reads four hex digits.
    fn hex4(&mut self) -> Result<u32, SafetensorsError> {
        let mut v = 0u32;
        for _ in 0..4 {
            let b = *self
                .text
                .get(self.pos)
                .ok_or_else(|| self.error("short \\u escape"))?;
            let d = (b as char)
                .to_digit(16)
                .ok_or_else(|| self.error("invalid hex digit in a \\u escape"))?;
            v = v * 16 + d;
            self.pos += 1;
        }
        Ok(v)
    }

    /// Reads a number token (JSON grammar) and returns its text.
    fn number_text(&mut self) -> Result<&'a str, SafetensorsError> {
        self.skip_ws();
        let start = self.pos;
        let digits = |c: &mut Self| {
            let s = c.pos;
            while c.text.get(c.pos).is_some_and(u8::is_ascii_digit) {
                c.pos += 1;
            }
            c.pos - s
        };
        if self.text.get(self.pos) == Some(&b'-') {
            self.pos += 1;
        }
        let int_start = self.pos;
        let n = digits(self);
        if n == 0 {
            return Err(self.error("expected a number"));
        }
        if n > 1 && self.text[int_start] == b'0' {
            return Err(self.error("leading zero in a number"));
        }
        if self.text.get(self.pos) == Some(&b'.') {
            self.pos += 1;
            if digits(self) == 0 {
                return Err(self.error("expected digits after '.'"));
            }
        }
        if let Some(b'e' | b'E') = self.text.get(self.pos) {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.text.get(self.pos) {
                self.pos += 1;
            }
            if digits(self) == 0 {
                return Err(self.error("expected digits in an exponent"));
            }
        }
        // The token is ASCII, so this slice is on character boundaries.
        std::str::from_utf8(&self.text[start..self.pos]).map_err(|_| self.error("bad number"))
    }

    /// Reads a value that must be a non-negative integer. `Ok(None)`: an integer too
    /// large for `u64`. The error for any other valid value (a negative or fractional
    /// number, a string, ...) is built by `not_integer` from its text.
    pub(crate) fn u64(
        &mut self,
        not_integer: impl FnOnce(&str) -> SafetensorsError,
    ) -> Result<Option<u64>, SafetensorsError> {
        if !matches!(self.peek(), Some(b'-' | b'0'..=b'9')) {
            let start = self.pos;
            // Integers sit three levels deep (header, tensor entry, shape or offsets).
            self.skip_value(3)?;
            return Err(not_integer(&self.slice(start, self.pos)));
        }
        let text = self.number_text()?;
        if !text.bytes().all(|b| b.is_ascii_digit()) {
            return Err(not_integer(text));
        }
        Ok(text.parse::<u64>().ok())
    }

    /// Skips one value of any kind, refusing nesting past [`MAX_DEPTH`] (`depth` levels
    /// are already open).
    pub(crate) fn skip_value(&mut self, depth: usize) -> Result<(), SafetensorsError> {
        match self.peek() {
            Some(open @ (b'{' | b'[')) => {
                if depth >= MAX_DEPTH {
                    return Err(SafetensorsError::JsonTooDeep {
                        offset: self.pos,
                        limit: MAX_DEPTH,
                    });
                }
                self.pos += 1;
                let close = if open == b'{' { b'}' } else { b']' };
                if self.eat(close) {
                    return Ok(());
                }
                loop {
                    if open == b'{' {
                        self.string()?;
                        self.expect(b':')?;
                    }
                    self.skip_value(depth + 1)?;
                    if !self.next_element(close)? {
                        return Ok(());
                    }
                }
            }
            Some(b'"') => self.string().map(drop),
            Some(b'-' | b'0'..=b'9') => self.number_text().map(drop),
            Some(_) => {
                for word in ["true", "false", "null"] {
                    if self.text[self.pos..].starts_with(word.as_bytes()) {
                        self.pos += word.len();
                        return Ok(());
                    }
                }
                Err(self.error("expected a value"))
            }
            None => Err(self.error("expected a value, found the end")),
        }
    }
}

/// Appends `s` as a JSON string literal, escaped as the format's reference writer
/// (serde_json) escapes it: quote, backslash and control characters only, with `\uXXXX`
/// in lowercase hex where there is no short form.
pub(crate) fn push_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}
