//! A Rust tokenizer just fine enough for reading paths: comments (doc comments included)
//! are dropped, so a `crate::` in documentation is no import; string and character
//! literals become one token, so text inside a WGSL string is not read as code.

/// One token and the line it starts on (1-based).
#[derive(Clone, Debug, PartialEq)]
pub struct Token {
    /// What the token is.
    pub kind: Kind,
    /// The line of the source it starts on.
    pub line: usize,
}

/// The kinds of token the path reader tells apart.
#[derive(Clone, Debug, PartialEq)]
pub enum Kind {
    /// An identifier or keyword (`$crate` included; `r#type` as `type`).
    Ident(String),
    /// A string literal's text as written, escapes left in (only `#[path]` reads it).
    Str(String),
    /// `::`
    PathSep,
    /// Any other punctuation character.
    Punct(char),
    /// A number, character or lifetime: nothing the path reader needs.
    Other,
}

/// The tokens of `src`.
pub fn tokenize(src: &str) -> Vec<Token> {
    let c: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    // Advances over `c[from..to]`, counting the newlines inside.
    let skip = |from: usize, to: usize, line: &mut usize| {
        *line += c[from..to.min(c.len())]
            .iter()
            .filter(|&&ch| ch == '\n')
            .count();
        to.min(c.len())
    };
    while i < c.len() {
        let ch = c[i];
        let start_line = line;
        let mut push = |kind| {
            out.push(Token {
                kind,
                line: start_line,
            })
        };
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if c[i..].starts_with(&['/', '/']) {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if c[i..].starts_with(&['/', '*']) {
            i = skip(i, block_comment_end(&c, i), &mut line);
        } else if let Some((end, text)) = string_literal(&c, i) {
            push(Kind::Str(text));
            i = skip(i, end, &mut line);
        } else if ch == '\'' {
            let end = char_literal_end(&c, i);
            push(Kind::Other);
            i = skip(i, end, &mut line);
        } else if ch == '$' || ch == '_' || ch.is_alphabetic() {
            let mut end = i + 1;
            while end < c.len() && (c[end] == '_' || c[end].is_alphanumeric()) {
                end += 1;
            }
            let mut word: String = c[i..end].iter().collect();
            if word == "r" && c.get(end) == Some(&'#') {
                // A raw identifier, `r#type`.
                let from = end + 1;
                end = from;
                while end < c.len() && (c[end] == '_' || c[end].is_alphanumeric()) {
                    end += 1;
                }
                word = c[from..end].iter().collect();
            }
            push(Kind::Ident(word));
            i = end;
        } else if ch.is_ascii_digit() {
            while i < c.len() && (c[i] == '_' || c[i] == '.' || c[i].is_alphanumeric()) {
                // A range `0..n` is two numbers, not one.
                if c[i] == '.' && c.get(i + 1) == Some(&'.') {
                    break;
                }
                i += 1;
            }
            push(Kind::Other);
        } else if c[i..].starts_with(&[':', ':']) {
            push(Kind::PathSep);
            i += 2;
        } else {
            push(Kind::Punct(ch));
            i += 1;
        }
    }
    out
}

/// The index after the block comment starting at `i` (block comments nest in Rust).
fn block_comment_end(c: &[char], mut i: usize) -> usize {
    let mut depth = 0;
    while i < c.len() {
        if c[i..].starts_with(&['/', '*']) {
            depth += 1;
            i += 2;
        } else if c[i..].starts_with(&['*', '/']) {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else {
            i += 1;
        }
    }
    i
}

/// A string literal starting at `i` (`"…"`, `b"…"`, `c"…"`, `r#"…"#`, `br"…"`): the index
/// after it and its text.
fn string_literal(c: &[char], i: usize) -> Option<(usize, String)> {
    // An identifier character before the prefix makes it part of a longer word.
    if i > 0 && (c[i - 1] == '_' || c[i - 1].is_alphanumeric()) {
        return None;
    }
    let mut j = i;
    while j < c.len() && j - i < 2 && matches!(c[j], 'b' | 'c' | 'r') {
        j += 1;
    }
    let raw = c[i..j].contains(&'r');
    let mut hashes = 0;
    while raw && c.get(j) == Some(&'#') {
        hashes += 1;
        j += 1;
    }
    if c.get(j) != Some(&'"') {
        return None;
    }
    let from = j + 1;
    let mut k = from;
    while k < c.len() {
        if !raw && c[k] == '\\' {
            k += 2;
            continue;
        }
        if c[k] == '"'
            && c[k + 1..]
                .iter()
                .take(hashes)
                .filter(|&&h| h == '#')
                .count()
                == hashes
        {
            return Some((k + 1 + hashes, c[from..k].iter().collect()));
        }
        k += 1;
    }
    Some((c.len(), c[from..].iter().collect()))
}

/// The index after the character literal or lifetime starting at the quote `i`.
fn char_literal_end(c: &[char], i: usize) -> usize {
    if c.get(i + 1) == Some(&'\\') {
        // An escaped character: up to the closing quote.
        let mut k = i + 2;
        while k < c.len() && c[k] != '\'' {
            k += 1;
        }
        k + 1
    } else if c.get(i + 2) == Some(&'\'') {
        i + 3
    } else {
        // A lifetime or label, `'a`: the identifier that follows is read as an identifier.
        i + 1
    }
}
