//! Taking the API key out of text: the one rule, for what the HTTP providers send and
//! read, what the orchestrator stores and what a front end prints.

/// Takes a secret (an API key) out of text, as `[redacted]`. Its `Debug` shows nothing
/// of the secret.
pub struct Redactor {
    secret: secrecy::SecretString,
}

impl Redactor {
    /// A redactor of `secret`.
    pub fn new(secret: &str) -> Redactor {
        Redactor {
            secret: secrecy::SecretString::from(secret.to_owned()),
        }
    }

    /// `text` with every occurrence of the secret replaced by `[redacted]`, and the
    /// masked forms a server echoes (`sk-...abcd`, `***abcd`) too, or `None` when it
    /// holds none (the common case: one vectorised search, no copy).
    pub fn redact(&self, text: &str) -> Option<String> {
        use secrecy::ExposeSecret as _;
        if !self.holds(text.as_bytes()) {
            return None;
        }
        let clean = scrub(text, Some(self.secret.expose_secret()));
        (clean != text).then_some(clean)
    }

    /// Whether `bytes` may hold the secret or a masked form of it (a vectorised search
    /// for its last characters, or for the whole of a short one).
    pub(crate) fn holds(&self, bytes: &[u8]) -> bool {
        use secrecy::ExposeSecret as _;
        let secret = self.secret.expose_secret();
        let needle = key_tail(secret).unwrap_or(secret);
        !needle.is_empty() && memchr::memmem::find(bytes, needle.as_bytes()).is_some()
    }
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Redactor { .. }")
    }
}

/// Keys shorter than this are placeholders, not secrets.
const MIN_SCRUBBED_KEY: usize = 12;

/// Whether `key` is scrubbed from content (reply bodies, streamed text, what the
/// command sends and prints): a key of at least 12 characters. Local servers take
/// placeholders (`ollama`, `EMPTY`, `x`); scrubbed, such a "key" would rewrite ordinary
/// words in the question sent and the answer read (a `red` in an answer, the `x` of
/// `text`), while no real API key is that short. Error texts (an error body, a failure
/// message) are scrubbed of any key, where a word is worth less than a secret, and the
/// `Authorization` header is never logged, whatever its length.
pub(crate) fn is_scrubbed_key(key: &str) -> bool {
    key.trim().len() >= MIN_SCRUBBED_KEY
}

/// `text` with every occurrence of the secret replaced, and with the masked forms a
/// server may echo (`sk-...abcd`, `***abcd`, `sk-proj-****abcd`: a word that ends with
/// the key's last four characters after mask characters) replaced as well.
pub(crate) fn scrub(text: &str, secret: Option<&str>) -> String {
    let Some(secret) = secret.filter(|secret| !secret.is_empty()) else {
        return text.to_owned();
    };
    let mut text = if text.contains(secret) {
        text.replace(secret, "[redacted]")
    } else {
        text.to_owned()
    };
    if let Some(tail) = key_tail(secret)
        && text.contains(tail)
    {
        text = scrub_masked(&text, tail);
    }
    text
}

/// The last four characters of a key long enough for its masked forms to mean it.
pub(crate) fn key_tail(secret: &str) -> Option<&str> {
    if !is_scrubbed_key(secret) || !secret.is_ascii() {
        return None;
    }
    secret.get(secret.len() - 4..)
}

/// Replaces each word that ends with `tail` after mask characters (`*`, `...`, `…`,
/// `xxxx`) with `[redacted]`.
fn scrub_masked(text: &str, tail: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut from = 0;
    while let Some(found) = text.get(from..).and_then(|rest| rest.find(tail)) {
        let at = from + found;
        let end = at + tail.len();
        let mut start = at;
        loop {
            while start > copied
                && bytes
                    .get(start - 1)
                    .is_some_and(|b| b.is_ascii_alphanumeric() || b"-_*.".contains(b))
            {
                start -= 1;
            }
            // `…` is three bytes: part of the word too.
            match text.get(copied..start) {
                Some(before) if before.ends_with('…') => start -= '…'.len_utf8(),
                _ => break,
            }
        }
        let word = text.get(start..at).unwrap_or_default();
        let masked = word.contains('*')
            || word.contains("...")
            || word.contains('…')
            || word.to_ascii_lowercase().contains("xxxx");
        if masked {
            out.push_str(text.get(copied..start).unwrap_or_default());
            out.push_str("[redacted]");
            copied = end;
        }
        from = end;
    }
    out.push_str(text.get(copied..).unwrap_or_default());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_redactor_takes_out_the_key_and_the_masked_forms_a_server_echoes() {
        let redactor = Redactor::new("sk-proj-0123456789abcdef");
        assert_eq!(redactor.redact("nothing here"), None);
        assert_eq!(
            redactor.redact("key sk-proj-0123456789abcdef, shown as sk-proj-****cdef or ...cdef"),
            Some("key [redacted], shown as [redacted] or [redacted]".to_owned())
        );
        // The last characters alone, not masked, are no key.
        assert_eq!(redactor.redact("abcdef"), None);
        assert!(!format!("{redactor:?}").contains("0123"));
        // A placeholder key only matches whole.
        let placeholder = Redactor::new("ollama");
        assert_eq!(placeholder.redact("***lama"), None);
        assert_eq!(
            placeholder.redact("key ollama"),
            Some("key [redacted]".to_owned())
        );
    }
}
