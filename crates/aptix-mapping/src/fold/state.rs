//! The output items as the stream builds them, keyed by `output_index`.
//!
//! Keyed by index, not by position, because reasoning items usually come first and an
//! index is what every event carries. A map rather than a vector, so that a hostile
//! `output_index` of 2^60 costs one entry, not memory for every index below it.
//!
//! Each method reports an event it cannot place as [`Orphan`]: an index with no item,
//! an item of another type, or a part index past the end of the item's parts (parts
//! are appended in order, so index `len` is the next one and anything beyond it is a
//! hole the stream never filled).

use std::collections::BTreeMap;

use aptix_model::wire::{
    ContentPart, FunctionCall, ItemStatus, OutputItem, OutputMessage, OutputText, ReasoningItem,
    Refusal, Role, SummaryPart,
};

/// An event that refers to an item or part the stream never added.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Orphan;

/// The items built so far.
#[derive(Debug, Default)]
pub(crate) struct OutputState {
    items: BTreeMap<u64, OutputItem>,
}

impl OutputState {
    /// `output_item.added` and `output_item.done`: the event's item replaces whatever
    /// was at the index (`.done` is authoritative; a repeated `.added` restarts it).
    pub(crate) fn set_item(&mut self, output_index: u64, item: OutputItem) {
        self.items.insert(output_index, item);
    }

    /// The item at an index.
    pub(crate) fn item(&self, output_index: u64) -> Option<&OutputItem> {
        self.items.get(&output_index)
    }

    /// Every item, in index order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u64, &OutputItem)> {
        self.items.iter().map(|(index, item)| (*index, item))
    }

    /// The items in index order, for the folded output.
    pub(crate) fn to_items(&self) -> Vec<OutputItem> {
        self.items.values().cloned().collect()
    }

    /// `content_part.added` / `.done`: sets the part at `content_index`.
    pub(crate) fn set_part(
        &mut self,
        output_index: u64,
        content_index: u64,
        item_id: Option<&str>,
        part: ContentPart,
    ) -> Result<(), Orphan> {
        let message = self.message(output_index, item_id)?;
        put(&mut message.content, content_index, part)
    }

    /// `output_text.delta`: appends to an `output_text` part.
    pub(crate) fn push_text(
        &mut self,
        output_index: u64,
        content_index: u64,
        item_id: Option<&str>,
        delta: &str,
    ) -> Result<(), Orphan> {
        let message = self.message(output_index, item_id)?;
        match slot(&mut message.content, content_index, empty_output_text)? {
            ContentPart::OutputText(part) => part.text.push_str(delta),
            _ => return Err(Orphan),
        }
        Ok(())
    }

    /// `output_text.done`: the part's full text.
    pub(crate) fn set_text(
        &mut self,
        output_index: u64,
        content_index: u64,
        item_id: Option<&str>,
        text: &str,
    ) -> Result<(), Orphan> {
        let message = self.message(output_index, item_id)?;
        match slot(&mut message.content, content_index, empty_output_text)? {
            ContentPart::OutputText(part) => text.clone_into(&mut part.text),
            _ => return Err(Orphan),
        }
        Ok(())
    }

    /// `refusal.delta` (`replace = false`) and `refusal.done` (`replace = true`).
    pub(crate) fn refusal(
        &mut self,
        output_index: u64,
        content_index: u64,
        item_id: Option<&str>,
        text: &str,
        replace: bool,
    ) -> Result<(), Orphan> {
        let message = self.message(output_index, item_id)?;
        let empty_refusal = || {
            ContentPart::Refusal(Refusal {
                refusal: String::new(),
            })
        };
        match slot(&mut message.content, content_index, empty_refusal)? {
            ContentPart::Refusal(part) if replace => text.clone_into(&mut part.refusal),
            ContentPart::Refusal(part) => part.refusal.push_str(text),
            _ => return Err(Orphan),
        }
        Ok(())
    }

    /// `function_call_arguments.delta`: appends; returns the call id for the delta.
    pub(crate) fn push_arguments(
        &mut self,
        output_index: u64,
        delta: &str,
    ) -> Result<&FunctionCall, Orphan> {
        match self.items.get_mut(&output_index) {
            Some(OutputItem::FunctionCall(call)) => {
                call.arguments.push_str(delta);
                Ok(call)
            }
            _ => Err(Orphan),
        }
    }

    /// `function_call_arguments.done`: the full arguments, and the name when the event
    /// has one (the spec says it does; the wire omits it) and the call has none yet.
    pub(crate) fn set_arguments(
        &mut self,
        output_index: u64,
        arguments: &str,
        name: Option<&str>,
    ) -> Result<(), Orphan> {
        match self.items.get_mut(&output_index) {
            Some(OutputItem::FunctionCall(call)) => {
                arguments.clone_into(&mut call.arguments);
                if let Some(name) = name.filter(|_| call.name.is_empty()) {
                    name.clone_into(&mut call.name);
                }
                Ok(())
            }
            _ => Err(Orphan),
        }
    }

    /// `reasoning_summary_part.added` / `.done`.
    pub(crate) fn set_summary_part(
        &mut self,
        output_index: u64,
        summary_index: u64,
        part: SummaryPart,
    ) -> Result<(), Orphan> {
        let reasoning = self.reasoning(output_index)?;
        put(&mut reasoning.summary, summary_index, part)
    }

    /// `reasoning_summary_text.delta` (`replace = false`) and `.done` (`replace = true`).
    pub(crate) fn summary_text(
        &mut self,
        output_index: u64,
        summary_index: u64,
        text: &str,
        replace: bool,
    ) -> Result<(), Orphan> {
        let reasoning = self.reasoning(output_index)?;
        let empty = || SummaryPart::SummaryText {
            text: String::new(),
        };
        match slot(&mut reasoning.summary, summary_index, empty)? {
            SummaryPart::SummaryText { text: summary } if replace => text.clone_into(summary),
            SummaryPart::SummaryText { text: summary } => summary.push_str(text),
            SummaryPart::Other(_) => return Err(Orphan),
        }
        Ok(())
    }

    /// The message at an index. An empty index gets a new message with the event's
    /// item id, for servers that skip `output_item.added`.
    fn message(
        &mut self,
        output_index: u64,
        item_id: Option<&str>,
    ) -> Result<&mut OutputMessage, Orphan> {
        let item = self.items.entry(output_index).or_insert_with(|| {
            OutputItem::Message(OutputMessage {
                id: item_id.map(str::to_owned),
                role: Role::Assistant,
                status: Some(ItemStatus::InProgress),
                content: Vec::new(),
            })
        });
        match item {
            OutputItem::Message(message) => Ok(message),
            _ => Err(Orphan),
        }
    }

    fn reasoning(&mut self, output_index: u64) -> Result<&mut ReasoningItem, Orphan> {
        match self.items.get_mut(&output_index) {
            Some(OutputItem::Reasoning(reasoning)) => Ok(reasoning),
            _ => Err(Orphan),
        }
    }
}

/// The element at `index`, appending a new one when `index` is the next position.
fn slot<T>(list: &mut Vec<T>, index: u64, make: impl FnOnce() -> T) -> Result<&mut T, Orphan> {
    let index = usize::try_from(index).map_err(|_| Orphan)?;
    if index == list.len() {
        list.push(make());
    }
    list.get_mut(index).ok_or(Orphan)
}

/// Sets the element at `index`, appending when `index` is the next position.
fn put<T>(list: &mut Vec<T>, index: u64, value: T) -> Result<(), Orphan> {
    let index = usize::try_from(index).map_err(|_| Orphan)?;
    if index == list.len() {
        list.push(value);
        return Ok(());
    }
    *list.get_mut(index).ok_or(Orphan)? = value;
    Ok(())
}

fn empty_output_text() -> ContentPart {
    ContentPart::OutputText(OutputText {
        text: String::new(),
        annotations: Some(Vec::new()),
        logprobs: None,
    })
}
