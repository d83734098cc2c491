//! GPT-2's tokenizer: the ids GPT-2 gives, and byte-exact round trips.

use tang_nn::tokenizer::{END_OF_TEXT, GPT2_VOCAB_SIZE, Gpt2Tokenizer, TokenizerError};

#[test]
fn ids_are_gpt2s() -> Result<(), TokenizerError> {
    let tok = Gpt2Tokenizer::new()?;
    assert_eq!(tok.encode("Hello world"), [15496, 995]);
    // The special token's text encodes as text (nanoGPT's encode_ordinary).
    let eot = tok.encode("<|endoftext|>");
    assert!(eot.len() > 1 && !eot.contains(&END_OF_TEXT));
    assert_eq!(tok.decode(&[END_OF_TEXT])?, "<|endoftext|>");
    assert_eq!(tok.vocab_size(), GPT2_VOCAB_SIZE);
    Ok(())
}

#[test]
fn the_rust_book_round_trips_byte_for_byte() -> Result<(), TokenizerError> {
    let tok = Gpt2Tokenizer::new()?;
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/data/rust-book.txt"
    );
    let ids = tok.encode_file(path)?;
    let text = std::fs::read(path).map_err(|e| TokenizerError::Io {
        path: path.into(),
        detail: e.to_string(),
    })?;
    // Byte-level BPE compresses English prose about fourfold.
    assert!(ids.len() < text.len() / 2, "{} ids", ids.len());
    assert!(ids.iter().all(|&id| (id as usize) < GPT2_VOCAB_SIZE));
    assert_eq!(tok.decode_bytes(&ids)?, text);
    Ok(())
}

#[test]
fn bad_ids_and_cut_characters_are_errors() -> Result<(), TokenizerError> {
    let tok = Gpt2Tokenizer::new()?;
    assert_eq!(
        tok.decode(&[15496, 50_257]),
        Err(TokenizerError::UnknownToken { id: 50_257 })
    );
    // A character of several tokens cut after its first token: bytes, not text.
    let ids = tok.encode("🦀");
    assert!(ids.len() > 1);
    assert!(matches!(
        tok.decode(&ids[..1]),
        Err(TokenizerError::NotUtf8 { at: 0 })
    ));
    assert_eq!(tok.decode_bytes(&ids)?, "🦀".as_bytes());
    let missing = tok.encode_file("/nonexistent/corpus.txt");
    assert!(matches!(missing, Err(TokenizerError::Io { .. })));
    Ok(())
}
