//! GPT-2's tokenizer: byte-level BPE with GPT-2's 50,257 tokens (OpenAI's `r50k_base`,
//! the vocabulary and merges of Hugging Face's `gpt2` tokenizer), for fine-tuning
//! pretrained GPT-2 checkpoints on text.
//!
//! The vocabulary ships inside the `tiktoken-rs` crate (a well-kept port of OpenAI's
//! `tiktoken`, which nanoGPT's `prepare.py` uses), so nothing is downloaded at run time.
//! Encoding is byte-level: every string encodes, and decoding the tokens of a string
//! gives its bytes back exactly.
//!
//! ```
//! use tang_nn::tokenizer::Gpt2Tokenizer;
//! let tok = Gpt2Tokenizer::new()?; // tiktoken.get_encoding("gpt2")
//! let ids = tok.encode("Hello world"); // enc.encode_ordinary("Hello world")
//! assert_eq!(ids, [15496, 995]);
//! assert_eq!(tok.decode(&ids)?, "Hello world");
//! # Ok::<(), tang_nn::tokenizer::TokenizerError>(())
//! ```

use std::fmt;
use std::path::Path;

/// GPT-2's vocabulary size (50,000 merges, 256 bytes and `<|endoftext|>`).
pub const GPT2_VOCAB_SIZE: usize = 50_257;

/// The id of `<|endoftext|>`, which separates documents in GPT-2's training data.
pub const END_OF_TEXT: u32 = 50_256;

/// What can go wrong tokenizing.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TokenizerError {
    /// The bundled vocabulary did not load (a broken build of the `tiktoken-rs` crate).
    Vocabulary(String),
    /// A token id is not in the vocabulary.
    UnknownToken {
        /// The id.
        id: u32,
    },
    /// The tokens decode to bytes that are not UTF-8 (a sequence cut inside a
    /// character); [`Gpt2Tokenizer::decode_bytes`] gives the bytes.
    NotUtf8 {
        /// Where the first invalid byte is.
        at: usize,
    },
    /// A text file could not be read.
    Io {
        /// The file.
        path: String,
        /// What the system said.
        detail: String,
    },
}

impl fmt::Display for TokenizerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TokenizerError::Vocabulary(e) => write!(
                f,
                "GPT-2's vocabulary did not load ({e}); rebuild with a clean tiktoken-rs"
            ),
            TokenizerError::UnknownToken { id } => write!(
                f,
                "token id {id} is not in GPT-2's vocabulary (ids are below {GPT2_VOCAB_SIZE})"
            ),
            TokenizerError::NotUtf8 { at } => write!(
                f,
                "the tokens decode to bytes that are not UTF-8 at byte {at} (a sequence cut \
                 inside a character); use decode_bytes for the raw bytes"
            ),
            TokenizerError::Io { path, detail } => write!(f, "cannot read {path}: {detail}"),
        }
    }
}

crate::macros::debug_as_display!(TokenizerError);

impl std::error::Error for TokenizerError {}

/// GPT-2's byte-level BPE tokenizer (`tiktoken.get_encoding("gpt2")`, the same ids as
/// Hugging Face's `GPT2Tokenizer`).
pub struct Gpt2Tokenizer {
    bpe: tiktoken_rs::CoreBPE,
}

impl fmt::Debug for Gpt2Tokenizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Gpt2Tokenizer")
    }
}

impl Gpt2Tokenizer {
    /// Loads the vocabulary bundled with the crate (a few hundred milliseconds: keep
    /// one tokenizer and reuse it).
    ///
    /// # Errors
    /// [`TokenizerError::Vocabulary`] only when the bundled file is broken.
    pub fn new() -> Result<Gpt2Tokenizer, TokenizerError> {
        let bpe =
            tiktoken_rs::r50k_base().map_err(|e| TokenizerError::Vocabulary(e.to_string()))?;
        Ok(Gpt2Tokenizer { bpe })
    }

    /// The ids of `text`, as nanoGPT's `enc.encode_ordinary`: `<|endoftext|>` in the
    /// text is encoded as ordinary text, never as the special token (append
    /// [`END_OF_TEXT`] between documents yourself, as nanoGPT's `prepare.py` does).
    ///
    /// ```
    /// # let tok = tang_nn::tokenizer::Gpt2Tokenizer::new()?;
    /// assert_eq!(tok.encode(" the"), [262]);
    /// # Ok::<(), tang_nn::tokenizer::TokenizerError>(())
    /// ```
    pub fn encode(&self, text: &str) -> Vec<u32> {
        self.bpe.encode_ordinary(text)
    }

    /// The bytes `ids` stand for.
    ///
    /// ```
    /// # let tok = tang_nn::tokenizer::Gpt2Tokenizer::new()?;
    /// // "é" is two bytes; its first token alone is half a character.
    /// let ids = tok.encode("é");
    /// assert_eq!(tok.decode_bytes(&ids)?, "é".as_bytes());
    /// # Ok::<(), tang_nn::tokenizer::TokenizerError>(())
    /// ```
    ///
    /// # Errors
    /// [`TokenizerError::UnknownToken`] for an id outside the vocabulary.
    pub fn decode_bytes(&self, ids: &[u32]) -> Result<Vec<u8>, TokenizerError> {
        if let Some(&id) = ids.iter().find(|&&id| id as usize >= GPT2_VOCAB_SIZE) {
            return Err(TokenizerError::UnknownToken { id });
        }
        self.bpe
            .decode_bytes(ids)
            .map_err(|e| TokenizerError::UnknownToken { id: e.token })
    }

    /// The text `ids` stand for.
    ///
    /// # Errors
    /// As [`Gpt2Tokenizer::decode_bytes`]; [`TokenizerError::NotUtf8`] when the bytes are
    /// not UTF-8.
    pub fn decode(&self, ids: &[u32]) -> Result<String, TokenizerError> {
        String::from_utf8(self.decode_bytes(ids)?).map_err(|e| TokenizerError::NotUtf8 {
            at: e.utf8_error().valid_up_to(),
        })
    }

    /// The ids of a UTF-8 text file, for a token-window data set
    /// ([`crate::data::DeviceTokenBatcher`] over them, as nanoGPT's `train.bin`).
    ///
    /// # Errors
    /// [`TokenizerError::Io`] when the file cannot be read or is not UTF-8.
    pub fn encode_file(&self, path: impl AsRef<Path>) -> Result<Vec<u32>, TokenizerError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| TokenizerError::Io {
            path: path.display().to_string(),
            detail: e.to_string(),
        })?;
        Ok(self.encode(&text))
    }

    /// The vocabulary size, [`GPT2_VOCAB_SIZE`].
    pub fn vocab_size(&self) -> usize {
        GPT2_VOCAB_SIZE
    }
}
