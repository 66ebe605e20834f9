//! Counting tokens the way the model will; see [`TokenCounter`].

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};

use foldhash::fast::RandomState;
use tiktoken_rs::CoreBPE;

use crate::RagError;

/// The o200k BPE built by the first [`TokenCounter::o200k`] call of the process.
static O200K: OnceLock<Arc<CoreBPE>> = OnceLock::new();

/// Counts of texts already counted, shared by every counter of the process.
static MEMO: Memo = Memo {
    counts: Mutex::new(None),
};

/// Texts shorter than this are counted every time: the lookup would cost about as
/// much as the count.
const MEMO_MIN_BYTES: usize = 256;

/// The memo is emptied when the texts it holds reach this many bytes.
const MEMO_MAX_BYTES: usize = 16 * 1024 * 1024;

/// Exact counts of texts seen before, keyed by the whole text (no hash can collide).
/// The same chunks come back turn after turn (a session asking about the same code, a
/// retriever ranking the same files), and counting is BPE over every byte: about
/// 1 ms for the 20 KB of a typical `[CONTEXT]` block in a release build.
struct Memo {
    /// The counts and the bytes of text they hold.
    counts: Mutex<Option<Counts>>,
}

/// Token counts by text, and the bytes of text held.
type Counts = (HashMap<Box<str>, usize, RandomState>, usize);

impl Memo {
    fn get(&self, text: &str) -> Option<usize> {
        let guard = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        guard.as_ref()?.0.get(text).copied()
    }

    fn put(&self, text: &str, count: usize) {
        let mut guard = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        let (counts, bytes) = guard.get_or_insert_with(Default::default);
        if *bytes + text.len() > MEMO_MAX_BYTES {
            counts.clear();
            *bytes = 0;
        }
        if counts.insert(text.into(), count).is_none() {
            *bytes += text.len();
        }
    }
}

/// Counts tokens the way the model will: o200k_base, the encoding of the GPT-4o,
/// GPT-4.1, GPT-5 and `o` series models that the Responses API serves. Cheap to clone
/// and share across threads.
///
/// Building the o200k BPE tables decodes 200,000 base64 ranks (0.1 to 0.2 s in a release
/// build, see `benches/render.rs`; far more in debug), so a process builds them once:
/// [`TokenCounter::o200k`] hands out clones of one shared [`Arc`], and cloning a counter
/// is a reference-count increment. The vocabulary ships inside `tiktoken-rs`, so no
/// network is needed.
///
/// Counts of texts of 256 bytes or more are remembered for the process (see
/// [`TokenCounter::count`]): the same chunks come back turn after turn, and counting
/// them again was most of a turn's local cost (`docs/benchmarks.md`).
///
/// There is no approximate (bytes / 4) counter. `benches/render.rs` measures exact
/// packing of 20 chunks of 60 lines (44 KB) at 2 to 5 ms in a release build, and BPE's
/// worst case, 100 KB without a single word break, at tens of milliseconds: noise next
/// to a model call, while an estimate could overrun the very budget it exists to keep.
#[derive(Clone)]
pub struct TokenCounter {
    bpe: Arc<CoreBPE>,
}

impl TokenCounter {
    /// The o200k_base counter, built on first use and shared by every later call.
    ///
    /// Fails only if the vocabulary bundled in `tiktoken-rs` cannot be decoded, which
    /// would be a broken build rather than bad input.
    pub fn o200k() -> Result<TokenCounter, RagError> {
        if let Some(bpe) = O200K.get() {
            return Ok(TokenCounter {
                bpe: Arc::clone(bpe),
            });
        }
        let built = tiktoken_rs::o200k_base().map_err(|source| RagError::Tokenizer {
            encoding: "o200k_base",
            source: source.into(),
        })?;
        // Two threads racing here may both build the tables; `OnceLock` keeps the
        // first and the loser's copy is dropped. That costs one extra build at most,
        // once per process, and avoids holding a lock across a slow build.
        let bpe = O200K.get_or_init(|| Arc::new(built));
        Ok(TokenCounter {
            bpe: Arc::clone(bpe),
        })
    }

    /// How many tokens `text` is, as ordinary text: special-token spellings such as
    /// `<|endoftext|>` inside chunk content count as the plain text they are, which is
    /// also how the API treats them in user input.
    ///
    /// Counts of texts of 256 bytes or more are remembered for the process (up to
    /// 16 MiB of text, then forgotten at once), so a chunk counted once costs a hash
    /// lookup afterwards; the count is the same either way.
    pub fn count(&self, text: &str) -> usize {
        if text.len() < MEMO_MIN_BYTES {
            return self.bpe.encode_ordinary(text).len();
        }
        if let Some(count) = MEMO.get(text) {
            return count;
        }
        let count = self.bpe.encode_ordinary(text).len();
        MEMO.put(text, count);
        count
    }
}

impl fmt::Debug for TokenCounter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenCounter")
            .field("encoding", &"o200k_base")
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_o200k_tokens() {
        let counter = TokenCounter::o200k().unwrap();
        assert_eq!(counter.count(""), 0);
        // Pinned counts of the bundled o200k vocabulary: a change means the encoding
        // (and so every budget) changed underneath us.
        assert_eq!(counter.count("hello world"), 2);
        assert_eq!(counter.count("[CONTEXT]\n\n"), 4);
        assert_eq!(counter.count("<|endoftext|>"), 7);
    }

    #[test]
    fn a_remembered_count_is_the_count() {
        let counter = TokenCounter::o200k().unwrap();
        let text = "fn remembered_count(x: u32) -> u32 { x * 2 } // ".repeat(20);
        let direct = counter.bpe.encode_ordinary(&text).len();
        assert_eq!(counter.count(&text), direct);
        assert_eq!(MEMO.get(&text), Some(direct));
        assert_eq!(counter.count(&text), direct);
        let short = "fn f() {}";
        assert_eq!(counter.count(short), 4);
        assert_eq!(MEMO.get(short), None, "short texts are not remembered");
    }

    #[test]
    fn clones_share_one_table() {
        let first = TokenCounter::o200k().unwrap();
        let second = TokenCounter::o200k().unwrap();
        assert!(Arc::ptr_eq(&first.bpe, &second.bpe));
        assert!(Arc::ptr_eq(&first.bpe, &first.clone().bpe));
    }
}
