//! The key split across streamed deltas. Every event is scrubbed of the key on its own
//! (`redact::scrub`), but a model that echoes the key (one it was shown, or a
//! server that repeats the `Authorization` header) streams it in token-sized pieces, no
//! one of which holds it whole: printed as they come, the pieces spell it out.
//!
//! [`DeltaGuard`] sits on the Responses events a stream yields: a `*.delta` event whose
//! text, with the text held before it, ends in what could be the start of the key is
//! held back, and let go once the next delta of the same part shows it was not the key,
//! or before any other event, or at the end: every held event in its order, the first
//! with the texts joined and scrubbed, the others with an empty `delta`, so that each
//! keeps its sequence number (a merged event would read as events missing from the
//! stream). Held events are not passed on, so a stream resumed after the last event its
//! consumer saw sends them again: nothing is lost or repeated.

use std::borrow::Cow;

use aptix_sse::SseEvent;
use serde::Deserialize;

use crate::redact::scrub;
use crate::sse_body::Items;

/// Holds back deltas that may end in the start of the key.
pub(crate) struct DeltaGuard {
    secret: String,
    held: Option<Held>,
}

/// Deltas of one part held back: their events, in order, and their text so far,
/// scrubbed.
struct Held {
    part: String,
    events: Vec<SseEvent>,
    text: String,
}

impl Held {
    /// The held events, the first carrying the text, into `out`.
    fn release(self, out: &mut Items) {
        let mut text = self.text.as_str();
        for event in self.events {
            out.push(Ok(with_delta(event, text)));
            text = "";
        }
    }
}

/// What a delta event says of itself.
#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    delta: Option<Cow<'a, str>>,
    #[serde(borrow)]
    item_id: Option<Cow<'a, str>>,
    output_index: Option<u64>,
    content_index: Option<u64>,
    summary_index: Option<u64>,
}

impl DeltaGuard {
    /// A guard for `secret`; `None` for a secret it cannot mean (empty, or not ASCII,
    /// as no API key is).
    pub(crate) fn new(secret: Option<&str>) -> Option<DeltaGuard> {
        let secret =
            secret.filter(|secret| crate::redact::is_scrubbed_key(secret) && secret.is_ascii())?;
        Some(DeltaGuard {
            secret: secret.to_owned(),
            held: None,
        })
    }

    /// Passes `event` on to `out`, holding it back (with the deltas held before it) when
    /// its text may end in the start of the key.
    pub(crate) fn pass(&mut self, event: SseEvent, out: &mut Items) {
        let parsed = if event.data.contains("\"delta\"") {
            serde_json::from_str::<Delta<'_>>(&event.data).ok()
        } else {
            None
        };
        let Some((part, delta)) = parsed.and_then(|probe| {
            let delta = probe.delta?;
            probe.kind.ends_with(".delta").then(|| {
                let part = format!(
                    "{}|{}|{:?}|{:?}|{:?}",
                    probe.kind,
                    probe.item_id.as_deref().unwrap_or_default(),
                    probe.output_index,
                    probe.content_index,
                    probe.summary_index
                );
                (part, delta.into_owned())
            })
        }) else {
            self.flush(out);
            out.push(Ok(event));
            return;
        };
        let (before, mut events) = match self.held.take() {
            Some(held) if held.part == part => (held.text, held.events),
            other => {
                if let Some(held) = other {
                    held.release(out);
                }
                (String::new(), Vec::new())
            }
        };
        let alone = events.is_empty();
        let whole = before + &delta;
        let text = scrub(&whole, Some(&self.secret));
        let may_end_in_the_key = self.may_end_in_the_key(&text);
        if alone && !may_end_in_the_key && text == whole {
            // Nothing held before it, nothing scrubbed: as it came.
            out.push(Ok(event));
            return;
        }
        events.push(event);
        let held = Held { part, events, text };
        if may_end_in_the_key {
            self.held = Some(held);
        } else {
            held.release(out);
        }
    }

    /// Lets go of what is held (the stream moves on, or ends).
    pub(crate) fn flush(&mut self, out: &mut Items) {
        if let Some(held) = self.held.take() {
            held.release(out);
        }
    }

    /// Whether `text` ends in the start of the key (at least its first character, not
    /// all of it: a whole key was scrubbed already), or in a word that may be a masked
    /// form of it still coming (`sk-proj-****`, whose last characters, which make it
    /// one, are in a later delta).
    fn may_end_in_the_key(&self, text: &str) -> bool {
        if crate::redact::key_tail(&self.secret).is_some() && ends_in_a_mask(text) {
            return true;
        }
        let secret = self.secret.as_bytes();
        let bytes = text.as_bytes();
        let from = bytes.len().saturating_sub(secret.len() - 1);
        (from..bytes.len()).any(|at| {
            // The secret is ASCII: a match starts on a character boundary.
            bytes.get(at..).is_some_and(|tail| secret.starts_with(tail))
        })
    }
}

/// Whether the last word of `text` holds mask characters (`*`, `...`, `…`, `xxxx`), as
/// the masked forms of a key `redact::scrub` takes out do: the key's last characters may
/// follow in the next delta.
fn ends_in_a_mask(text: &str) -> bool {
    let word_start = text
        .char_indices()
        .rev()
        .find(|(_, c)| !(c.is_ascii_alphanumeric() || "-_*.…".contains(*c)))
        .map_or(0, |(at, c)| at + c.len_utf8());
    let word = &text[word_start..];
    word.contains('*')
        || word.contains("...")
        || word.contains('…')
        || word.to_ascii_lowercase().contains("xxxx")
}

/// `event` with its `delta` set to `text`.
fn with_delta(mut event: SseEvent, text: &str) -> SseEvent {
    if let Ok(serde_json::Value::Object(mut data)) = serde_json::from_str(&event.data) {
        data.insert("delta".to_owned(), serde_json::Value::from(text));
        if let Ok(json) = serde_json::to_string(&data) {
            event.data = json;
        }
    }
    event
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "sk-proj-SECRETKEY1234567890abcdefWXYZ";

    fn delta(item: &str, text: &str, sequence: u64) -> SseEvent {
        SseEvent {
            event: Some("response.output_text.delta".to_owned()),
            data: serde_json::json!({
                "type": "response.output_text.delta", "item_id": item, "output_index": 0,
                "content_index": 0, "delta": text, "sequence_number": sequence
            })
            .to_string(),
            id: None,
            retry: None,
        }
    }

    fn other(kind: &str) -> SseEvent {
        SseEvent {
            event: Some(kind.to_owned()),
            data: serde_json::json!({"type": kind, "sequence_number": 99}).to_string(),
            id: None,
            retry: None,
        }
    }

    /// The events out of `events`, through a guard, then its end.
    fn guarded(events: Vec<SseEvent>) -> Vec<SseEvent> {
        let mut guard = DeltaGuard::new(Some(KEY)).unwrap();
        let mut out = Items::new();
        for event in events {
            guard.pass(event, &mut out);
        }
        guard.flush(&mut out);
        out.into_iter().map(Result::unwrap).collect()
    }

    /// `answer` streamed in deltas of `size` bytes then `output_text.done`, through a
    /// guard: the text the events show, checked after each never to hold `never`, and
    /// the events.
    fn shown_in_pieces(answer: &str, size: usize, never: &str) -> (String, Vec<SseEvent>) {
        let events: Vec<SseEvent> = answer
            .as_bytes()
            .chunks(size)
            .enumerate()
            .map(|(n, chunk)| delta("msg_1", std::str::from_utf8(chunk).unwrap(), n as u64))
            .chain(std::iter::once(other("response.output_text.done")))
            .collect();
        let out = guarded(events);
        let mut shown = String::new();
        for event in &out {
            shown.push_str(&texts(std::slice::from_ref(event)));
            assert!(!shown.contains(never), "pieces of {size}: {shown}");
        }
        (shown, out)
    }

    fn texts(events: &[SseEvent]) -> String {
        events
            .iter()
            .filter_map(|event| serde_json::from_str::<serde_json::Value>(&event.data).ok())
            .filter_map(|data| data["delta"].as_str().map(str::to_owned))
            .collect()
    }

    #[test]
    fn a_key_split_anywhere_across_deltas_never_comes_out() {
        let answer = format!("You sent me Bearer {KEY} as your key, thanks");
        for size in 1..=12 {
            // Never in one event, nor spelt out by those before it.
            let (shown, out) = shown_in_pieces(&answer, size, KEY);
            assert_eq!(
                shown, "You sent me Bearer [redacted] as your key, thanks",
                "pieces of {size}"
            );
            assert_eq!(
                out.last().unwrap().event.as_deref(),
                Some("response.output_text.done")
            );
        }
    }

    #[test]
    fn a_masked_key_split_across_deltas_never_comes_out() {
        // A server's message echoed by the model: `sk-proj-****...WXYZ`, the mask in one
        // delta and the key's last characters, which make it one, in the next.
        let masked = "sk-proj-************************WXYZ";
        let answer = format!("Incorrect API key provided: {masked}. Check your key");
        for size in 1..=12 {
            let (shown, _) = shown_in_pieces(&answer, size, "**WXYZ");
            assert_eq!(
                shown, "Incorrect API key provided: [redacted]. Check your key",
                "pieces of {size}"
            );
        }
        // Markdown's bold is held until its word ends, and comes out as it was.
        let out = guarded(vec![
            delta("msg_1", "It is **", 1),
            delta("msg_1", "done** now", 2),
            other("response.output_text.done"),
        ]);
        assert_eq!(texts(&out), "It is **done** now");
    }

    #[test]
    fn text_that_is_not_the_key_passes_as_it_came_or_a_delta_later() {
        let events = vec![
            delta("msg_1", "Tests pass", 1),
            delta("msg_1", "; the task is done.", 2),
            other("response.output_text.done"),
        ];
        let out = guarded(events.clone());
        // "pass" ends in "s", the key's first character: held one delta, then let go
        // joined, in the first event; each event keeps its sequence number (a merged
        // one read as events missing from the stream).
        assert_eq!(texts(&out), "Tests pass; the task is done.");
        assert_eq!(out.len(), 3);
        let fields = |event: &SseEvent| {
            let data: serde_json::Value = serde_json::from_str(&event.data).unwrap();
            (data["sequence_number"].as_u64(), data["delta"].clone())
        };
        assert_eq!(
            fields(&out[0]),
            (Some(1), "Tests pass; the task is done.".into())
        );
        assert_eq!(fields(&out[1]), (Some(2), "".into()));
        // Deltas that cannot start the key are passed on untouched.
        let plain = vec![delta("msg_1", "Done", 1), delta("msg_1", " now.", 2)];
        assert_eq!(guarded(plain.clone()), plain);
    }

    #[test]
    fn held_text_is_let_go_before_another_part_or_event_and_at_the_end() {
        let out = guarded(vec![delta("msg_1", "yes", 1), delta("msg_2", "no", 2)]);
        assert_eq!(texts(&out), "yesno");
        assert!(out[0].data.contains("msg_1"), "{}", out[0].data);
        let out = guarded(vec![delta("msg_1", "a sk-", 1)]);
        assert_eq!(texts(&out), "a sk-");
        let out = guarded(vec![
            delta("msg_1", "it works", 1),
            other("response.completed"),
        ]);
        assert_eq!(texts(&out[..1]), "it works");
        assert_eq!(out[1].event.as_deref(), Some("response.completed"));
    }

    #[test]
    fn without_a_usable_secret_there_is_no_guard() {
        assert!(DeltaGuard::new(None).is_none());
        assert!(DeltaGuard::new(Some("")).is_none());
        assert!(DeltaGuard::new(Some("clé-secrète")).is_none());
    }
}
