//! Counting what went wrong in a stream, to report each kind of anomaly once.
//!
//! A proxy that duplicates every event would otherwise add thousands of warnings to one
//! envelope; a count and the first occurrence say the same in one line.

use crate::warning::MappingWarning;

/// The stream anomalies seen so far.
#[derive(Debug, Default)]
pub(crate) struct Anomalies {
    /// Count, previous sequence number, received one (of the first).
    out_of_order: Option<(u64, u64, u64)>,
    /// Missing numbers, and the number before the first gap.
    gaps: Option<(u64, u64)>,
    /// Count and the first reason.
    undecodable: Option<(u64, String)>,
    /// Count, the first event type and its output index.
    orphans: Option<(u64, String, u64)>,
    /// Events after the final response.
    after_final: u64,
}

impl Anomalies {
    pub(crate) fn out_of_order(&mut self, previous: u64, received: u64) {
        match &mut self.out_of_order {
            Some((count, ..)) => *count += 1,
            None => self.out_of_order = Some((1, previous, received)),
        }
    }

    pub(crate) fn gap(&mut self, missing: u64, after: u64) {
        match &mut self.gaps {
            Some((total, _)) => *total = total.saturating_add(missing),
            None => self.gaps = Some((missing, after)),
        }
    }

    pub(crate) fn undecodable(&mut self, reason: impl FnOnce() -> String) {
        match &mut self.undecodable {
            Some((count, _)) => *count += 1,
            None => self.undecodable = Some((1, reason())),
        }
    }

    pub(crate) fn orphan(&mut self, event_type: &str, output_index: u64) {
        match &mut self.orphans {
            Some((count, ..)) => *count += 1,
            None => self.orphans = Some((1, event_type.to_owned(), output_index)),
        }
    }

    pub(crate) fn after_final(&mut self) {
        self.after_final += 1;
    }

    /// One warning per kind of anomaly seen, in a fixed order.
    pub(crate) fn into_warnings(self) -> Vec<MappingWarning> {
        let mut warnings = Vec::new();
        if let Some((count, first_previous, first_received)) = self.out_of_order {
            warnings.push(MappingWarning::OutOfOrderEvents {
                count,
                first_previous,
                first_received,
            });
        }
        if let Some((missing, first_after)) = self.gaps {
            warnings.push(MappingWarning::SequenceGaps {
                missing,
                first_after,
            });
        }
        if let Some((count, first_reason)) = self.undecodable {
            warnings.push(MappingWarning::UndecodableEvents {
                count,
                first_reason,
            });
        }
        if let Some((count, first_event_type, first_output_index)) = self.orphans {
            warnings.push(MappingWarning::OrphanEvents {
                count,
                first_event_type,
                first_output_index,
            });
        }
        if self.after_final > 0 {
            warnings.push(MappingWarning::EventsAfterFinal {
                count: self.after_final,
            });
        }
        warnings
    }
}
