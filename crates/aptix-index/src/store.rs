//! The tantivy schema: one document per chunk plus one per indexed file (the
//! manifest), and the conversions between documents and [`Chunk`]s.
//!
//! Keeping the manifest in the same index as the chunks makes the two consistent by
//! construction: a commit publishes both or neither.

use std::collections::BTreeMap;
use std::path::Path;

use aptix_rag::{Chunk, ChunkId, LineSpan};
use tantivy::schema::{
    FAST, Field, IndexRecordOption, STORED, STRING, Schema, TextFieldIndexing, TextOptions, Value,
};
use tantivy::{Index, TantivyDocument};

use crate::IndexError;
use crate::kind::{FileKind, classify};
use crate::tokenizer::{CODE_TOKENIZER, CodeTokenizer};

/// `doc` (document type) of a chunk document.
pub(crate) const KIND_CHUNK: &str = "chunk";
/// `doc` (document type) of a manifest (file) document.
pub(crate) const KIND_FILE: &str = "file";

/// The fast field holding [`FileKind::code`], read by ranking.
pub(crate) const KIND_CODE_FIELD: &str = "kind_code";

/// The fields of the schema, resolved once.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fields {
    /// The document type: `chunk` or `file`.
    pub(crate) kind: Field,
    /// The [`FileKind`] of a chunk's file, exact (for scope conditions).
    pub(crate) file_kind: Field,
    /// The same as a small number in a fast field, for ranking.
    pub(crate) kind_code: Field,
    /// Relative path, exact; on both kinds so one delete removes a whole file.
    pub(crate) path: Field,
    /// The path again, only on the file document, to replace just that record.
    pub(crate) file_key: Field,
    pub(crate) id: Field,
    pub(crate) language: Field,
    pub(crate) repo: Field,
    pub(crate) extension: Field,
    /// Exact qualified names, one value per definition in the chunk.
    pub(crate) symbol: Field,
    pub(crate) start_line: Field,
    pub(crate) end_line: Field,
    /// The chunk text, code-tokenized for BM25, and stored to rebuild the chunk.
    pub(crate) text: Field,
    /// Symbols, code-tokenized, so a query naming a definition ranks it first.
    pub(crate) symbol_text: Field,
    /// Section headings ([`crate::chunker::headings`]), code-tokenized: a query naming
    /// what a section is about finds it.
    pub(crate) heading_text: Field,
    /// The path, code-tokenized, so a query naming a file or folder finds it.
    pub(crate) path_text: Field,
    pub(crate) content_hash: Field,
    pub(crate) size: Field,
    pub(crate) mtime_ns: Field,
    pub(crate) chunk_count: Field,
    pub(crate) skip_reason: Field,
}

impl Fields {
    /// The fields BM25 ranks over, each with its own statistics.
    pub(crate) fn ranked(&self) -> [Field; 4] {
        [
            self.text,
            self.symbol_text,
            self.heading_text,
            self.path_text,
        ]
    }
}

/// The raw (exact) field behind a scope key, for the keys this index knows.
pub(crate) fn scope_field(fields: &Fields, key: &str) -> Option<Field> {
    match key {
        "path" => Some(fields.path),
        "language" => Some(fields.language),
        "repo" => Some(fields.repo),
        "extension" => Some(fields.extension),
        "symbol" => Some(fields.symbol),
        "id" => Some(fields.id),
        "kind" => Some(fields.file_kind),
        _ => None,
    }
}

/// The scope keys [`scope_field`] knows, for warnings.
pub(crate) const SCOPE_KEYS: &[&str] = &[
    "path",
    "language",
    "repo",
    "extension",
    "symbol",
    "id",
    "kind",
];

fn schema() -> (Schema, Fields) {
    let mut builder = Schema::builder();
    // Positions are not indexed: retrieval uses no phrase queries, and frequencies are
    // all BM25 needs; this keeps the index smaller and indexing faster.
    let code = |stored: bool| {
        let indexing = TextFieldIndexing::default()
            .set_tokenizer(CODE_TOKENIZER)
            .set_index_option(IndexRecordOption::WithFreqs);
        let options = TextOptions::default().set_indexing_options(indexing);
        if stored {
            options.set_stored()
        } else {
            options
        }
    };
    let fields = Fields {
        kind: builder.add_text_field("doc", STRING),
        file_kind: builder.add_text_field("kind", STRING | STORED),
        kind_code: builder.add_u64_field(KIND_CODE_FIELD, FAST),
        path: builder.add_text_field("path", STRING | STORED),
        file_key: builder.add_text_field("file_key", STRING),
        id: builder.add_text_field("id", STRING | STORED),
        language: builder.add_text_field("language", STRING | STORED),
        repo: builder.add_text_field("repo", STRING | STORED),
        extension: builder.add_text_field("extension", STRING | STORED),
        symbol: builder.add_text_field("symbol", STRING | STORED),
        start_line: builder.add_u64_field("start_line", STORED),
        end_line: builder.add_u64_field("end_line", STORED),
        text: builder.add_text_field("text", code(true)),
        symbol_text: builder.add_text_field("symbol_text", code(false)),
        heading_text: builder.add_text_field("heading_text", code(false)),
        path_text: builder.add_text_field("path_text", code(false)),
        content_hash: builder.add_text_field("content_hash", STORED),
        size: builder.add_u64_field("size", STORED),
        mtime_ns: builder.add_u64_field("mtime_ns", STORED),
        chunk_count: builder.add_u64_field("chunk_count", STORED),
        skip_reason: builder.add_text_field("skip_reason", STORED),
    };
    (builder.build(), fields)
}

/// Opens the index in `dir`, creating it when absent; a folder holding an index of
/// another schema (an older format) is wiped and recreated, since it is only a cache.
pub(crate) fn open_or_create(dir: &Path) -> Result<(Index, Fields), IndexError> {
    let store_error = |source| IndexError::Store {
        path: dir.to_owned(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(|source| IndexError::Io {
        path: dir.to_owned(),
        source,
    })?;
    let (schema, fields) = schema();
    let exists = dir.join("meta.json").is_file();
    let index = match exists.then(|| Index::open_in_dir(dir)) {
        Some(Ok(index)) if index.schema() == schema => index,
        // An I/O problem may pass; the index is left alone.
        Some(Err(source @ tantivy::TantivyError::IoError(_))) => return Err(store_error(source)),
        // A different schema (an older format) or unreadable metadata: the index is
        // only a cache of the workspace, so it is rebuilt.
        Some(_) => {
            wipe(dir)?;
            Index::create_in_dir(dir, schema).map_err(store_error)?
        }
        None => Index::create_in_dir(dir, schema).map_err(store_error)?,
    };
    index.tokenizers().register(CODE_TOKENIZER, CodeTokenizer);
    Ok((index, fields))
}

fn wipe(dir: &Path) -> Result<(), IndexError> {
    let io = |source| IndexError::Io {
        path: dir.to_owned(),
        source,
    };
    std::fs::remove_dir_all(dir).map_err(io)?;
    std::fs::create_dir_all(dir).map_err(io)
}

/// The stable id of a chunk: the same path, span and content always give the same id.
pub(crate) fn chunk_id(path: &str, start_line: u32, end_line: u32, content: &str) -> ChunkId {
    let mut hasher = blake3::Hasher::new();
    hasher.update(path.as_bytes());
    hasher.update(b"\0");
    hasher.update(&start_line.to_le_bytes());
    hasher.update(&end_line.to_le_bytes());
    hasher.update(content.as_bytes());
    ChunkId::new(
        hasher
            .finalize()
            .to_hex()
            .chars()
            .take(16)
            .collect::<String>(),
    )
}

/// The document of one chunk.
pub(crate) fn chunk_document(
    fields: &Fields,
    chunk: &Chunk,
    symbols: &[String],
) -> TantivyDocument {
    let mut doc = TantivyDocument::new();
    doc.add_text(fields.kind, KIND_CHUNK);
    doc.add_text(fields.path, &chunk.path);
    doc.add_text(fields.path_text, &chunk.path);
    doc.add_text(fields.id, chunk.id.as_str());
    doc.add_text(fields.language, &chunk.language);
    doc.add_u64(fields.start_line, u64::from(chunk.lines.start()));
    doc.add_u64(fields.end_line, u64::from(chunk.lines.end()));
    doc.add_text(fields.text, &chunk.content);
    if let Some(repo) = chunk.metadata.get("repo") {
        doc.add_text(fields.repo, repo);
    }
    if let Some(extension) = chunk.metadata.get("extension") {
        doc.add_text(fields.extension, extension);
    }
    let kind = chunk
        .metadata
        .get("kind")
        .and_then(|kind| FileKind::parse(kind))
        .unwrap_or_else(|| classify(&chunk.path));
    doc.add_text(fields.file_kind, kind.as_str());
    doc.add_u64(fields.kind_code, kind.code());
    for symbol in symbols {
        doc.add_text(fields.symbol, symbol);
        doc.add_text(fields.symbol_text, symbol);
    }
    for heading in crate::chunker::headings(&chunk.content, &chunk.language) {
        doc.add_text(fields.heading_text, heading);
    }
    doc
}

/// Rebuilds the chunk a document stores; `None` for a document that is not a
/// well-formed chunk (which a search then skips rather than failing).
pub(crate) fn chunk_from_document(fields: &Fields, doc: &TantivyDocument) -> Option<Chunk> {
    let text = |field| {
        doc.get_first(field)
            .and_then(|v| v.as_str())
            .map(str::to_owned)
    };
    let number = |field| {
        doc.get_first(field)
            .and_then(|v| v.as_u64())
            .and_then(|n| u32::try_from(n).ok())
    };
    let lines = LineSpan::new(number(fields.start_line)?, number(fields.end_line)?).ok()?;
    let mut metadata = BTreeMap::new();
    for (key, field) in [
        ("repo", fields.repo),
        ("extension", fields.extension),
        ("kind", fields.file_kind),
    ] {
        if let Some(value) = text(field) {
            metadata.insert(key.to_owned(), value);
        }
    }
    let symbols: Vec<&str> = doc
        .get_all(fields.symbol)
        .filter_map(|v| v.as_str())
        .collect();
    if let Some(first) = symbols.first() {
        metadata.insert("symbol".to_owned(), (*first).to_owned());
    }
    if symbols.len() > 1 {
        metadata.insert("symbols".to_owned(), symbols.join(","));
    }
    Some(Chunk {
        id: ChunkId::new(text(fields.id)?),
        path: text(fields.path)?,
        lines,
        language: text(fields.language)?,
        content: text(fields.text)?,
        metadata,
    })
}
