//! The per-file manifest: what was indexed from each file, so that a refresh re-reads
//! only files whose size or modification time changed and re-chunks only those whose
//! content hash changed.
//!
//! Records are documents of the tantivy index itself (`kind = file`), committed in the
//! same commit as the chunks they describe, so an interrupted refresh can never leave
//! the manifest and the chunks disagreeing. The commit payload holds the configuration
//! fingerprint: a different fingerprint means the next refresh rebuilds everything.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use tantivy::collector::DocSetCollector;
use tantivy::query::TermQuery;
use tantivy::schema::{IndexRecordOption, Value};
use tantivy::{Searcher, TantivyDocument, Term};

use crate::store::{Fields, KIND_FILE};

/// What the index knows about one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileRecord {
    /// blake3 of the content, hex.
    pub(crate) content_hash: String,
    pub(crate) size: u64,
    pub(crate) mtime_ns: u64,
    /// Chunks stored for the file.
    pub(crate) chunks: u64,
    /// Why the file was not chunked (binary, a very long line), if it was not.
    pub(crate) skip_reason: Option<String>,
}

/// The commit payload.
#[derive(Debug, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct Payload {
    pub(crate) fingerprint: String,
}

impl Payload {
    pub(crate) fn parse(text: Option<&str>) -> Option<Payload> {
        serde_json::from_str(text?).ok()
    }

    pub(crate) fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// Every file record of the committed index the searcher sees.
pub(crate) fn load(
    searcher: &Searcher,
    fields: &Fields,
) -> tantivy::Result<HashMap<String, FileRecord>> {
    let query = TermQuery::new(
        Term::from_field_text(fields.kind, KIND_FILE),
        IndexRecordOption::Basic,
    );
    let addresses = searcher.search(&query, &DocSetCollector)?;
    let mut records = HashMap::with_capacity(addresses.len());
    for address in addresses {
        let doc: TantivyDocument = searcher.doc(address)?;
        let text = |field| {
            doc.get_first(field)
                .and_then(|v| v.as_str())
                .map(str::to_owned)
        };
        let number = |field| doc.get_first(field).and_then(|v| v.as_u64()).unwrap_or(0);
        let Some(path) = text(fields.path) else {
            continue;
        };
        records.insert(
            path,
            FileRecord {
                content_hash: text(fields.content_hash).unwrap_or_default(),
                size: number(fields.size),
                mtime_ns: number(fields.mtime_ns),
                chunks: number(fields.chunk_count),
                skip_reason: text(fields.skip_reason),
            },
        );
    }
    Ok(records)
}

/// The manifest document of one file.
pub(crate) fn file_document(fields: &Fields, path: &str, record: &FileRecord) -> TantivyDocument {
    let mut doc = TantivyDocument::new();
    doc.add_text(fields.kind, KIND_FILE);
    doc.add_text(fields.path, path);
    doc.add_text(fields.file_key, path);
    doc.add_text(fields.content_hash, &record.content_hash);
    doc.add_u64(fields.size, record.size);
    doc.add_u64(fields.mtime_ns, record.mtime_ns);
    doc.add_u64(fields.chunk_count, record.chunks);
    if let Some(reason) = &record.skip_reason {
        doc.add_text(fields.skip_reason, reason);
    }
    doc
}
