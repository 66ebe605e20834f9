//! One refresh: walk, compare with the manifest, read and chunk what changed on a pool
//! of threads, write the changes, and commit chunks and manifest together.

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Instant;

use aptix_rag::Chunk;
use tantivy::query::TermQuery;
use tantivy::schema::IndexRecordOption;
use tantivy::{IndexWriter, TantivyDocument, Term};

use crate::IndexError;
use crate::chunker::{Chunker, LineIndex};
use crate::index::Inner;
use crate::manifest::{self, FileRecord, Payload};
use crate::progress::{FileOutcome, IndexProgress, IndexStats, SkipReason, SkippedFile};
use crate::store::{self, KIND_CHUNK};
use crate::walk::{self, Candidate};

/// How many leading bytes are searched for a NUL to call a file binary (git's rule).
const BINARY_SNIFF_BYTES: usize = 8 * 1024;

/// A file's text as the index reads it, and as the tools that read files for a model
/// do: `None` for a binary file (a NUL byte in its first 8 KiB, git's rule); invalid
/// UTF-8 is decoded lossily (each bad sequence as U+FFFD), so that a stray Latin-1 byte
/// in a comment does not hide a whole file that retrieval serves.
///
/// ```
/// assert_eq!(aptix_index::file_text(b"caf\xe9 = 1\n").as_deref(), Some("caf\u{fffd} = 1\n"));
/// assert_eq!(aptix_index::file_text(b"\x89PNG\r\n\x1a\n\0\0"), None);
/// ```
pub fn file_text(bytes: &[u8]) -> Option<std::borrow::Cow<'_, str>> {
    let sniff = bytes.get(..BINARY_SNIFF_BYTES).unwrap_or(bytes);
    memchr::memchr(0, sniff)
        .is_none()
        .then(|| String::from_utf8_lossy(bytes))
}

/// What a worker thread made of one file.
enum Work {
    /// New or changed content: its chunks and manifest record.
    Chunked {
        candidate: Candidate,
        chunks: Vec<(Chunk, Vec<String>)>,
        record: FileRecord,
        lines: usize,
    },
    /// Only size or time changed; the content hash is the same.
    Touched {
        candidate: Candidate,
        record: FileRecord,
    },
    /// Not chunked; `record` remembers why, so an unchanged file is not re-read.
    Skipped {
        candidate: Candidate,
        reason: SkipReason,
        record: Option<FileRecord>,
    },
}

pub(crate) fn refresh(
    inner: &Inner,
    progress: &dyn IndexProgress,
) -> Result<IndexStats, IndexError> {
    let started = Instant::now();
    let store_error = |source| IndexError::Store {
        path: inner.index_dir.clone(),
        source,
    };
    let mut writer: IndexWriter<TantivyDocument> = inner
        .index
        .writer_with_num_threads(inner.config.writer_threads, inner.config.writer_heap_bytes)
        .map_err(|source| match source {
            // Busy only: a lock file that cannot be made (a read-only folder) is a
            // store failure, not another process to wait for.
            tantivy::TantivyError::LockFailure(
                tantivy::directory::error::LockError::LockBusy,
                _,
            ) => IndexError::Locked {
                path: inner.index_dir.clone(),
            },
            source => store_error(source),
        })?;

    let rebuilt = inner.committed_fingerprint()? != Some(inner.fingerprint.clone());
    let manifest = if rebuilt {
        writer.delete_all_documents().map_err(store_error)?;
        HashMap::new()
    } else {
        inner.manifest()?
    };

    let threads = inner.config.reader_threads();
    let walk = walk::walk(&inner.root, &inner.config, threads);
    let mut stats = IndexStats {
        files_seen: (walk.candidates.len() + walk.skipped.len()) as u64,
        rebuilt,
        ..IndexStats::default()
    };
    progress.files_found(stats.files_seen);
    for skipped in &walk.skipped {
        progress.file_done(
            &skipped.path,
            &FileOutcome::Skipped(skipped.reason.clone()),
            0,
        );
    }

    // Deletions first: files indexed before that the walk no longer offers.
    let offered: HashSet<&str> = walk.candidates.iter().map(|c| c.path.as_str()).collect();
    for (path, record) in &manifest {
        if !offered.contains(path.as_str()) {
            writer.delete_term(Term::from_field_text(inner.fields.path, path));
            stats.files_deleted += 1;
            stats.chunks_removed += record.chunks;
        }
    }
    stats.skipped.extend(walk.skipped);

    // Files whose size and time match the manifest are not even opened.
    let mut to_read = Vec::new();
    for candidate in walk.candidates {
        match manifest.get(&candidate.path) {
            Some(record)
                if record.size == candidate.size && record.mtime_ns == candidate.mtime_ns =>
            {
                let outcome = match parse_skip_reason(record.skip_reason.as_deref()) {
                    Some(reason) => {
                        stats.skipped.push(SkippedFile {
                            path: candidate.path.clone(),
                            reason: reason.clone(),
                        });
                        FileOutcome::Skipped(reason)
                    }
                    None => {
                        stats.files_unchanged += 1;
                        FileOutcome::Unchanged
                    }
                };
                progress.file_done(&candidate.path, &outcome, candidate.size);
            }
            _ => to_read.push(candidate),
        }
    }

    let changed = process(
        inner, &manifest, to_read, threads, progress, &writer, &mut stats,
    )?;

    if progress.is_cancelled() {
        return Err(IndexError::Cancelled {
            files_done: stats.files_indexed + stats.files_unchanged,
        });
    }
    if changed || stats.files_deleted > 0 || rebuilt {
        progress.committing();
        let mut prepared = writer.prepare_commit().map_err(store_error)?;
        prepared.set_payload(
            &Payload {
                fingerprint: inner.fingerprint.clone(),
            }
            .to_json(),
        );
        prepared.commit().map_err(store_error)?;
        // Merges started by the commit finish here rather than being abandoned when
        // the writer is dropped, so the next open sees compact segments.
        writer.wait_merging_threads().map_err(store_error)?;
        inner.reader.reload().map_err(store_error)?;
    }
    stats.chunks_total = inner.count_chunks()?;
    stats.skipped.sort_by(|a, b| a.path.cmp(&b.path));
    stats.elapsed = started.elapsed();
    Ok(stats)
}

/// Reads and chunks `to_read` on `threads` threads while this thread writes the
/// results; returns whether anything was written.
fn process(
    inner: &Inner,
    manifest: &HashMap<String, FileRecord>,
    to_read: Vec<Candidate>,
    threads: usize,
    progress: &dyn IndexProgress,
    writer: &IndexWriter<TantivyDocument>,
    stats: &mut IndexStats,
) -> Result<bool, IndexError> {
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let (sender, receiver) = mpsc::sync_channel::<Work>(threads * 4);
    let to_read = &to_read;
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1) {
            let sender = sender.clone();
            let (next, stop) = (&next, &stop);
            scope.spawn(move || {
                let mut chunker = Chunker::default();
                while !stop.load(Ordering::Relaxed) && !progress.is_cancelled() {
                    let Some(candidate) = to_read.get(next.fetch_add(1, Ordering::Relaxed)) else {
                        break;
                    };
                    progress.file_started(&candidate.path);
                    let work = read_and_chunk(inner, manifest, candidate.clone(), &mut chunker);
                    if sender.send(work).is_err() {
                        break;
                    }
                }
            });
        }
        drop(sender);
        let mut changed = false;
        for work in receiver {
            if progress.is_cancelled() {
                stop.store(true, Ordering::Relaxed);
                continue;
            }
            match write(inner, manifest, work, writer, progress, stats) {
                Ok(wrote) => changed |= wrote,
                Err(error) => {
                    stop.store(true, Ordering::Relaxed);
                    return Err(error);
                }
            }
        }
        Ok(changed)
    })
}

/// Writes one file's result; returns whether the index changed.
fn write(
    inner: &Inner,
    manifest: &HashMap<String, FileRecord>,
    work: Work,
    writer: &IndexWriter<TantivyDocument>,
    progress: &dyn IndexProgress,
    stats: &mut IndexStats,
) -> Result<bool, IndexError> {
    let fields = &inner.fields;
    let add = |doc| {
        writer
            .add_document(doc)
            .map_err(|source| IndexError::Store {
                path: inner.index_dir.clone(),
                source,
            })
    };
    let remove_file = |path: &str, stats: &mut IndexStats| {
        if let Some(old) = manifest.get(path) {
            writer.delete_term(Term::from_field_text(fields.path, path));
            stats.chunks_removed += old.chunks;
        }
    };
    match work {
        Work::Chunked {
            candidate,
            chunks,
            record,
            lines,
        } => {
            remove_file(&candidate.path, stats);
            for (chunk, symbols) in &chunks {
                add(store::chunk_document(fields, chunk, symbols))?;
            }
            add(manifest::file_document(fields, &candidate.path, &record))?;
            stats.files_indexed += 1;
            stats.bytes_indexed += candidate.size;
            stats.lines_indexed += lines as u64;
            stats.chunks_added += chunks.len() as u64;
            let outcome = FileOutcome::Indexed {
                chunks: chunks.len(),
            };
            progress.file_done(&candidate.path, &outcome, candidate.size);
        }
        Work::Touched { candidate, record } => {
            writer.delete_term(Term::from_field_text(fields.file_key, &candidate.path));
            add(manifest::file_document(fields, &candidate.path, &record))?;
            stats.files_unchanged += 1;
            progress.file_done(&candidate.path, &FileOutcome::Unchanged, candidate.size);
        }
        Work::Skipped {
            candidate,
            reason,
            record,
        } => {
            remove_file(&candidate.path, stats);
            if let Some(record) = record {
                add(manifest::file_document(fields, &candidate.path, &record))?;
            }
            stats.skipped.push(SkippedFile {
                path: candidate.path.clone(),
                reason: reason.clone(),
            });
            progress.file_done(
                &candidate.path,
                &FileOutcome::Skipped(reason),
                candidate.size,
            );
        }
    }
    Ok(true)
}

fn read_and_chunk(
    inner: &Inner,
    manifest: &HashMap<String, FileRecord>,
    candidate: Candidate,
    chunker: &mut Chunker,
) -> Work {
    let config = &inner.config;
    let bytes = match read_limited(&candidate, config.max_file_bytes) {
        Ok(bytes) => bytes,
        Err(reason) => {
            return Work::Skipped {
                candidate,
                reason,
                record: None,
            };
        }
    };
    let content_hash = blake3::hash(&bytes).to_hex().to_string();
    let mut record = FileRecord {
        content_hash,
        size: candidate.size,
        mtime_ns: candidate.mtime_ns,
        chunks: 0,
        skip_reason: None,
    };
    if let Some(old) = manifest.get(&candidate.path)
        && old.content_hash == record.content_hash
        && old.skip_reason.is_none()
    {
        record.chunks = old.chunks;
        return Work::Touched { candidate, record };
    }
    let Some(text) = file_text(&bytes) else {
        return skipped_with_record(candidate, record, SkipReason::Binary);
    };
    // What has the shape of a credential never reaches the index, so never a model.
    let text = crate::secret::redact_secrets(&text);
    let lines = LineIndex::new(&text);
    let longest = lines.longest_line();
    if longest > config.max_line_bytes {
        let reason = SkipReason::LongLine {
            bytes: longest,
            limit: config.max_line_bytes,
        };
        return skipped_with_record(candidate, record, reason);
    }
    let chunks = chunker.chunk_file(&candidate.path, &text, &inner.repo, &config.chunking);
    record.chunks = chunks.len() as u64;
    Work::Chunked {
        candidate,
        chunks,
        record,
        lines: lines.len(),
    }
}

fn skipped_with_record(candidate: Candidate, mut record: FileRecord, reason: SkipReason) -> Work {
    record.skip_reason = Some(skip_reason_key(&reason));
    Work::Skipped {
        candidate,
        reason,
        record: Some(record),
    }
}

/// Reads a file, refusing to read past the limit (the file may have grown since the walk).
fn read_limited(candidate: &Candidate, limit: u64) -> Result<Vec<u8>, SkipReason> {
    let unreadable = |error: std::io::Error| SkipReason::Unreadable {
        message: error.to_string(),
    };
    let file = std::fs::File::open(&candidate.absolute).map_err(unreadable)?;
    let mut bytes = Vec::with_capacity(usize::try_from(candidate.size).unwrap_or(0));
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(unreadable)?;
    if bytes.len() as u64 > limit {
        return Err(SkipReason::TooLarge {
            bytes: bytes.len() as u64,
            limit,
        });
    }
    Ok(bytes)
}

/// Skip reasons stored in the manifest: only those decided by content, which stay
/// true while the file is unchanged.
fn skip_reason_key(reason: &SkipReason) -> String {
    match reason {
        SkipReason::LongLine { bytes, limit } => format!("long_line:{bytes}:{limit}"),
        _ => "binary".to_owned(),
    }
}

fn parse_skip_reason(key: Option<&str>) -> Option<SkipReason> {
    let key = key?;
    let mut parts = key.split(':');
    match parts.next()? {
        "long_line" => Some(SkipReason::LongLine {
            bytes: parts.next()?.parse().ok()?,
            limit: parts.next()?.parse().ok()?,
        }),
        _ => Some(SkipReason::Binary),
    }
}

/// Counts chunk documents of the committed index.
pub(crate) fn count_chunks(inner: &Inner) -> tantivy::Result<u64> {
    let query = TermQuery::new(
        Term::from_field_text(inner.fields.kind, KIND_CHUNK),
        IndexRecordOption::Basic,
    );
    let count = inner
        .reader
        .searcher()
        .search(&query, &tantivy::collector::Count)?;
    Ok(count as u64)
}
