//! [`ShownAnswer`]: what a reader of a streamed turn shows of the answer when a model
//! call is cut and sent again from its start.

use super::delta::StreamDelta;

/// The answer text a reader of a streamed turn shows, across model calls that are cut
/// and sent again: the one rule every front end (the terminal, an editor, a client of
/// `aptix serve`) applies to [`StreamDelta`]s before showing them.
///
/// A model call sent again from its start ([`StreamDelta::Retrying`] with `resumed`
/// `false`) streams its answer anew. It usually repeats the text already shown, and
/// that repeated part is skipped; what goes beyond it is shown as more text. A model
/// is free to answer differently the second time, though: from the first delta that
/// departs from what was shown, the new answer is given whole
/// ([`AnswerText::Restarted`]), so that the reader never shows a sentence the model
/// did not write (the shown beginning of one answer joined to the end of another).
/// The final envelope holds the new answer. Text a cut attempt showed that the new
/// answer ends without repeating stays where it was shown (a reader cannot take back
/// what it printed); [`settle`](ShownAnswer::settle) then gives the answer whole.
/// Where the call sent again ends short of that text instead (it called a tool this
/// time), the text stays shown but belongs to no answer: the next text shown, in a
/// later model call or at `settle`, is given whole, apart from it.
///
/// Refusal text counts as answer text (it is the model's answer in words).
///
/// ```
/// use aptix_mapping::{AnswerText, RetryCause, ShownAnswer, StreamDelta};
///
/// let text = |text: &str| StreamDelta::TextDelta {
///     output_index: 0,
///     content_index: 0,
///     text: text.into(),
/// };
/// let retry = StreamDelta::Retrying {
///     cause: RetryCause::StreamCut,
///     attempt: 2,
///     max_attempts: 3,
///     wait_ms: 500,
///     reason: "the connection was lost".into(),
///     events: 5,
///     resumed: false,
/// };
/// let mut shown = ShownAnswer::new();
/// assert_eq!(shown.delta(&text("The answer ")), Some(AnswerText::More("The answer ".into())));
/// shown.delta(&retry);
/// // The same words again: nothing new to show, then what goes beyond them.
/// assert_eq!(shown.delta(&text("The ")), None);
/// assert_eq!(shown.delta(&text("answer is 42.")), Some(AnswerText::More("is 42.".into())));
///
/// // Cut again, and this time the model says something else: shown whole.
/// shown.delta(&retry);
/// assert_eq!(
///     shown.delta(&text("Well, it depends.")),
///     Some(AnswerText::Restarted("Well, it depends.".into()))
/// );
/// ```
#[derive(Debug, Default, Clone)]
pub struct ShownAnswer {
    /// The answer text shown for the current model call.
    call_text: String,
    /// The call was sent again from its start: its next text repeats from the top.
    restarting: bool,
    /// While a restarted answer repeats what was shown: how much of `call_text` it has
    /// matched so far.
    replay: Option<usize>,
    /// The text shown for the last model call that finished.
    finished_text: String,
    /// A model call sent again ended without repeating all the text shown for it: that
    /// text is no part of any answer, and the next text shown must stand apart from it.
    abandoned: bool,
}

/// What of a text delta to show (see [`ShownAnswer`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AnswerText {
    /// Text to show after what is shown.
    More(String),
    /// The model call was sent again and its new answer departs from the text shown for
    /// it: this is the new answer so far, whole. Say so, and show it apart from the text
    /// above.
    Restarted(String),
}

impl ShownAnswer {
    /// Nothing shown yet.
    pub fn new() -> ShownAnswer {
        ShownAnswer::default()
    }

    /// Takes the turn's next delta; for a text or refusal delta, what of it to show
    /// (`None`: nothing, it repeats text already shown).
    pub fn delta(&mut self, delta: &StreamDelta) -> Option<AnswerText> {
        match delta {
            StreamDelta::Started { .. } => {
                if self.restarting {
                    self.restarting = false;
                    self.replay = Some(0);
                } else {
                    // A new model call (after tools ran) has text of its own.
                    self.call_text.clear();
                    self.replay = None;
                }
                None
            }
            StreamDelta::Retrying { resumed, .. } => {
                if !resumed {
                    self.restarting = true;
                }
                None
            }
            StreamDelta::Done { .. } => {
                // The model call is over: a request sent again after this (the next
                // call's, failed before its reply) repeats nothing of its text. Sent
                // again itself and ended short of the text shown for it (a tool call in
                // place of the words), it left that text abandoned.
                let abandoned = self.abandoned
                    || self
                        .replay
                        .is_some_and(|matched| matched < self.call_text.len());
                let finished = std::mem::take(&mut self.call_text);
                *self = ShownAnswer {
                    finished_text: finished,
                    abandoned,
                    ..ShownAnswer::default()
                };
                None
            }
            StreamDelta::TextDelta { text, .. } | StreamDelta::RefusalDelta { text, .. } => {
                if self.restarting {
                    self.restarting = false;
                    self.replay = Some(0);
                }
                let shown = match self.beyond_replay(text)? {
                    // The first text after abandoned text: apart from it, whole.
                    AnswerText::More(more) if self.abandoned => {
                        AnswerText::Restarted(format!("{}{more}", self.call_text))
                    }
                    shown => shown,
                };
                self.abandoned = false;
                match &shown {
                    AnswerText::More(more) => self.call_text.push_str(more),
                    AnswerText::Restarted(whole) => self.call_text.clone_from(whole),
                }
                Some(shown)
            }
            _ => None,
        }
    }

    /// Takes the turn's final answer (the envelope's `text`, or its `refusal`), once
    /// every delta is in: what to show so that the reader shows that answer. `None`
    /// when the text shown for the last model call is the answer (spacing aside: a
    /// reader puts its own breaks between messages); [`AnswerText::More`] with the
    /// rest when it shows only the answer's start (or nothing of it: a reply that came
    /// whole); [`AnswerText::Restarted`] with the whole answer when the text shown is
    /// not the answer (a server whose deltas do not spell its final response): say so,
    /// and show it apart.
    ///
    /// ```
    /// use aptix_mapping::{AnswerText, ShownAnswer, StreamDelta};
    ///
    /// let mut shown = ShownAnswer::new();
    /// shown.delta(&StreamDelta::TextDelta { output_index: 0, content_index: 0, text: "Hello! How cow".into() });
    /// assert_eq!(
    ///     shown.settle("Hello! How can I help?"),
    ///     Some(AnswerText::Restarted("Hello! How can I help?".into()))
    /// );
    /// ```
    pub fn settle(&mut self, answer: &str) -> Option<AnswerText> {
        if std::mem::take(&mut self.abandoned) && !answer.is_empty() {
            // Nothing shown since abandoned text: the answer whole, apart from it.
            return Some(AnswerText::Restarted(answer.to_owned()));
        }
        let shown = if self.call_text.is_empty() {
            std::mem::take(&mut self.finished_text)
        } else {
            std::mem::take(&mut self.call_text)
        };
        let unspaced =
            |text: &str| -> String { text.chars().filter(|c| !c.is_whitespace()).collect() };
        let shown = unspaced(&shown);
        let mut answer_chars = answer.char_indices().filter(|(_, c)| !c.is_whitespace());
        // Walk the answer's visible characters along the shown ones.
        for expected in shown.chars() {
            match answer_chars.next() {
                Some((_, found)) if found == expected => {}
                _ => return Some(AnswerText::Restarted(answer.to_owned())),
            }
        }
        let rest = match answer_chars.next() {
            Some((at, _)) => &answer[at..],
            None => return None,
        };
        if shown.is_empty() {
            return Some(AnswerText::More(answer.to_owned()));
        }
        // The rest keeps the spacing before it.
        let start = answer[..answer.len() - rest.len()].trim_end().len();
        Some(AnswerText::More(answer[start..].to_owned()))
    }

    /// `text` against what a restarted answer may repeat.
    fn beyond_replay(&mut self, text: &str) -> Option<AnswerText> {
        let Some(matched) = self.replay else {
            return (!text.is_empty()).then(|| AnswerText::More(text.to_owned()));
        };
        let shown = self.call_text.get(matched..).unwrap_or_default();
        if shown.starts_with(text) {
            self.replay = Some(matched + text.len());
            return None;
        }
        self.replay = None;
        if let Some(rest) = text.strip_prefix(shown) {
            return Some(AnswerText::More(rest.to_owned()));
        }
        let mut whole = self.call_text.get(..matched).unwrap_or_default().to_owned();
        whole.push_str(text);
        Some(AnswerText::Restarted(whole))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(text: &str) -> StreamDelta {
        StreamDelta::TextDelta {
            output_index: 0,
            content_index: 0,
            text: text.into(),
        }
    }

    fn retry(resumed: bool) -> StreamDelta {
        StreamDelta::Retrying {
            cause: crate::RetryCause::StreamCut,
            attempt: 2,
            max_attempts: 3,
            wait_ms: 0,
            reason: "cut".into(),
            events: 3,
            resumed,
        }
    }

    fn started() -> StreamDelta {
        StreamDelta::Started {
            response_id: "resp_1".into(),
            model: None,
        }
    }

    /// What a reader shows: the text it appends, a restart starting over.
    fn show(deltas: &[StreamDelta]) -> String {
        let mut shown = ShownAnswer::new();
        let mut screen = String::new();
        for delta in deltas {
            match shown.delta(delta) {
                Some(AnswerText::More(more)) => screen.push_str(&more),
                Some(AnswerText::Restarted(whole)) => {
                    screen.push_str(" | ");
                    screen.push_str(&whole);
                }
                None => {}
            }
        }
        screen
    }

    #[test]
    fn settling_shows_the_final_answer_whatever_the_deltas_spelt() {
        let settle = |deltas: &[StreamDelta], answer: &str| {
            let mut shown = ShownAnswer::new();
            for delta in deltas {
                shown.delta(delta);
            }
            shown.settle(answer)
        };
        let done = StreamDelta::Done {
            response_id: "resp_1".into(),
            status: None,
            finish_reason: None,
        };
        // Shown as it is (two messages, which the reader spaced its own way).
        assert_eq!(
            settle(&[text("One."), text("Two."), done.clone()], "One.\n\nTwo."),
            None
        );
        // A delta sent twice, or out of order: the answer is shown whole, apart.
        for spelt in [
            ["Hello! How cow", " can I help?"],
            ["help? ", "Hello! How can I "],
        ] {
            let deltas: Vec<StreamDelta> = spelt.iter().map(|t| text(t)).collect();
            assert_eq!(
                settle(&deltas, "Hello! How can I help?"),
                Some(AnswerText::Restarted("Hello! How can I help?".into()))
            );
        }
        // A stream that lost its tail: the rest, with its spacing.
        assert_eq!(
            settle(&[text("Hello!")], "Hello! How can I help?"),
            Some(AnswerText::More(" How can I help?".into()))
        );
        // Nothing streamed: the answer whole.
        assert_eq!(
            settle(&[started()], "Hi."),
            Some(AnswerText::More("Hi.".into()))
        );
        // An empty answer with nothing shown: nothing to show.
        assert_eq!(settle(&[started()], ""), None);
    }

    #[test]
    fn a_restart_that_repeats_the_answer_shows_it_once() {
        let deltas = [
            started(),
            text("The answer "),
            text("is"),
            retry(false),
            started(),
            text("The "),
            text("answer is 4"),
            text("2."),
        ];
        assert_eq!(show(&deltas), "The answer is 42.");
    }

    #[test]
    fn a_restart_that_departs_shows_the_new_answer_whole_never_a_splice() {
        // The shape the ACP review found: "The answer is 42 " cut, then "Well, it
        // depends on the input." was shown as "The answer is 42 on the input."
        let deltas = [
            started(),
            text("The answer is 42 "),
            retry(false),
            started(),
            text("Well, it depends"),
            text(" on the input."),
        ];
        assert_eq!(
            show(&deltas),
            "The answer is 42  | Well, it depends on the input."
        );
        // Departing after a matched beginning: the beginning is part of the whole.
        let deltas = [
            text("The answer is 42."),
            retry(false),
            text("The answer "),
            text("was 41."),
        ];
        assert_eq!(show(&deltas), "The answer is 42. | The answer was 41.");
    }

    #[test]
    fn multibyte_text_cut_anywhere_is_never_doubled_or_split() {
        let deltas = [
            text("Grüße, "),
            text("naïve"),
            retry(false),
            text("Grü"),
            text("ße, naïve café"),
        ];
        assert_eq!(show(&deltas), "Grüße, naïve café");
    }

    #[test]
    fn a_resumed_stream_continues_and_a_new_model_call_starts_afresh() {
        let deltas = [
            text("Hello"),
            retry(true),
            text(", world"),
            started(),
            text("Hello"),
        ];
        assert_eq!(show(&deltas), "Hello, worldHello");
    }

    #[test]
    fn a_retry_of_the_next_model_call_does_not_replay_the_last_one() {
        // After tools ran, the next model call's request fails before its reply (a 429)
        // and is sent again: its text is new, even where it starts like the last one's.
        let done = StreamDelta::Done {
            response_id: "resp_1".into(),
            status: Some("completed".into()),
            finish_reason: None,
        };
        let deltas = [
            started(),
            text("Let me look."),
            done,
            retry(false),
            started(),
            text("Let me "),
            text("explain."),
        ];
        assert_eq!(show(&deltas), "Let me look.Let me explain.");
    }

    #[test]
    fn text_a_restarted_call_abandoned_for_a_tool_call_is_set_apart_from_the_answer() {
        // Cut after "Alpha bravo charlie"; sent again, the model calls a tool with no
        // text; the next call answers. Shown glued, it read "Alpha bravo charlieFinal".
        let done = StreamDelta::Done {
            response_id: "resp_2".into(),
            status: Some("completed".into()),
            finish_reason: None,
        };
        let deltas = [
            started(),
            text("Alpha bravo charlie"),
            retry(false),
            started(),
            done.clone(),
            started(),
            text("Final answer "),
            text("here."),
            done.clone(),
        ];
        assert_eq!(show(&deltas), "Alpha bravo charlie | Final answer here.");
        // The same with a final answer no delta spelt: settling gives it whole.
        let mut shown = ShownAnswer::new();
        for delta in &deltas[..5] {
            shown.delta(delta);
        }
        shown.delta(&started());
        shown.delta(&done);
        assert_eq!(
            shown.settle("Final answer here."),
            Some(AnswerText::Restarted("Final answer here.".into()))
        );
        // A restart that repeated all it showed before its tool call abandoned nothing.
        let deltas = [
            text("Let me look."),
            retry(false),
            started(),
            text("Let me look."),
            done,
            started(),
            text("Found it."),
        ];
        assert_eq!(show(&deltas), "Let me look.Found it.");
    }

    #[test]
    fn a_request_sent_again_before_any_text_shows_everything() {
        let deltas = [retry(false), started(), text("Hi"), text(" there")];
        assert_eq!(show(&deltas), "Hi there");
    }

    #[test]
    fn refusals_count_as_answer_text() {
        let refusal = |text: &str| StreamDelta::RefusalDelta {
            output_index: 0,
            content_index: 0,
            text: text.into(),
        };
        let deltas = [refusal("I can't"), retry(false), refusal("I can't help.")];
        assert_eq!(show(&deltas), "I can't help.");
    }
}
