//! Searching the index: BM25 over the analysed query (see [`crate::query`]) on the
//! chunk text, the definitions' names and the path, weighted by file kind, with AGN-034
//! scope conditions translated into boolean clauses of the same tantivy query; then a
//! deterministic order, merging and a per-file cap (see [`crate::rank`]).
//!
//! BM25's statistics (document count, document frequencies, average lengths) are
//! computed over the live chunk documents only ([`CorpusStats`]), not tantivy's
//! per-segment counters, which still count deleted documents until a merge: the same
//! tree gives the same scores however the index got there.
//!
//! | operator | clause |
//! |---|---|
//! | `==` | must: any value's exact term |
//! | `!=` | must not: each value's exact term |
//! | `contains` | must: any value as a substring (a regex over the key's term dictionary) |
//! | `does_not_contain` | must not: each value as a substring |
//!
//! This gives [`ScopeCondition::accepts`]'s semantics exactly, including a chunk that
//! lacks the key (no `symbol` on a line window): it has no term, so it fails `==` and
//! `contains` and passes `!=` and `does_not_contain`. A key this index does not know is
//! reported as a warning and the condition is ignored (AGN-034 calls scope advisory:
//! a misspelt key should not silently empty the context).

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use aptix_model::contract::{ScopeCondition, ScopeOperator};
use aptix_rag::ScoredChunk;
use tantivy::collector::{Count, TopDocs};
use tantivy::index::SegmentId;
use tantivy::query::{
    AllQuery, Bm25StatisticsProvider, BooleanQuery, BoostQuery, ConstScoreQuery, EmptyQuery, Occur,
    Query, RegexQuery, TermQuery,
};
use tantivy::schema::Value as _;
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{DocId, DocSet, Score, Searcher, SegmentReader, TERMINATED, TantivyDocument, Term};

use crate::IndexError;
use crate::index::Inner;
use crate::kind::FileKind;
use crate::query::{self, Analysis, MAX_QUERY_TERMS};
use crate::rank;
use crate::store::{self, Fields, KIND_CHUNK, KIND_CODE_FIELD, SCOPE_KEYS};
use crate::tokenizer;

/// How much a term counts when it names a definition in the chunk (on top of its
/// occurrence in the text).
const SYMBOL_BOOST: f32 = 1.0;
/// How much a term counts when it is in a section heading the chunk holds (on top of
/// its occurrence in the text): a title says what its section is about.
const HEADING_BOOST: f32 = 1.5;
/// How much a term counts when it appears in the chunk's path. A path is short and
/// names what the whole file is about, so a match there counts more than one in text.
const PATH_BOOST: f32 = 1.5;
/// How much a term counts in the path when the question names a path or an area with
/// it (`axum-core/macros: ...`, `fix(sse): ...`, `routing/mod.rs`).
const PATH_LIKE_BOOST: f32 = 3.0;
/// The factor for a chunk that contains, verbatim, code the question quotes in
/// backticks (`map_response(IntoResponse::into_response)`), or defines the qualified
/// name it quotes (`Router::route`): quoted code names the places to change more surely
/// than any of its words alone.
const CODE_SPAN_BOOST: f32 = 2.0;
/// The factor for a chunk that holds, verbatim, a phrase the question puts in double
/// quotes, or a sentence of five words or more it quotes or is (a pasted error
/// message): the place that says it is the
/// answer, whatever a word of it matches in another file's name: it outweighs a
/// short chunk named for one of its words against a long one that says it once.
const MESSAGE_BOOST: f32 = 10.0;
/// The words a quoted span needs to count as a sentence ([`MESSAGE_BOOST`]).
const MESSAGE_WORDS: usize = 5;
/// How many chunks holding every term of a quoted span are read to check it verbatim.
const CODE_SPAN_CANDIDATES: usize = 200;

/// How many more hits than asked for are scored in full, so that merging and the
/// per-file cap still leave enough.
const FETCH_FACTOR: usize = 3;
/// ... plus this many.
const FETCH_EXTRA: usize = 20;
/// At least this many candidates are scored in full whatever the limit: what a default
/// retrieval (40 chunks, fetched twice over) scores. File evidence (see [`crate::rank`])
/// depends on the candidates, so this keeps a short search (`aptix search --limit 5`)
/// a prefix of the ranking `aptix ask` uses. (A larger pool, 500, lost 5 points of
/// hit@5 on the development set: more weak chunks of large files add up.)
const MIN_CANDIDATES: usize = 260;

/// What to search for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchQuery {
    /// Free text: an instruction, identifiers, a question.
    pub text: String,
    /// AGN-034 scope conditions, ANDed.
    pub scope: Vec<ScopeCondition>,
    /// The most hits to return (at least 1 is used).
    pub limit: usize,
}

impl SearchQuery {
    /// A query for `text` with no scope and a limit of 20.
    pub fn new(text: impl Into<String>) -> SearchQuery {
        SearchQuery {
            text: text.into(),
            scope: Vec::new(),
            limit: 20,
        }
    }

    /// The same query with these scope conditions.
    pub fn with_scope(mut self, scope: Vec<ScopeCondition>) -> SearchQuery {
        self.scope = scope;
        self
    }

    /// The same query with another limit.
    pub fn with_limit(mut self, limit: usize) -> SearchQuery {
        self.limit = limit;
        self
    }
}

/// What a search found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SearchResults {
    /// Chunks, best first.
    pub hits: Vec<ScoredChunk>,
    /// Why each hit matched, in the order of [`hits`](Self::hits).
    pub matches: Vec<HitMatch>,
    /// The query terms searched for, most telling first (weight times IDF).
    pub terms: Vec<String>,
    /// Soft problems: unknown scope keys, a query without searchable words or whose words
    /// the index does not hold.
    pub warnings: Vec<String>,
}

/// The query terms a hit contains, by field.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HitMatch {
    /// Terms found in the chunk's text.
    pub text: Vec<String>,
    /// Terms found in the names of the definitions the chunk holds.
    pub symbol: Vec<String>,
    /// Terms found in the chunk's section headings (Markdown `#` titles, also in Rust
    /// doc comments).
    pub heading: Vec<String>,
    /// Terms found in the file's path.
    pub path: Vec<String>,
}

/// What is wrong with a scope condition, for the workspace index: a key it does not
/// know (`pth contains x`), or a `kind` it never gives a chunk (`kind == sauce`). `None`
/// for a condition it applies as written. A search warns of these (an unknown key's
/// condition is ignored, as AGN-034 calls scope advisory); a front end that takes
/// conditions from a person can refuse them instead.
pub fn scope_problem(condition: &ScopeCondition) -> Option<String> {
    if !SCOPE_KEYS.contains(&condition.key.as_str()) {
        return Some(format!(
            "scope key {:?} is not known to the workspace index (known: {})",
            condition.key,
            SCOPE_KEYS.join(", ")
        ));
    }
    let exact = matches!(
        condition.operator,
        ScopeOperator::Equals | ScopeOperator::NotEquals
    );
    let unknown: Vec<&str> = condition
        .values
        .iter()
        .filter(|value| condition.key == "kind" && exact && FileKind::parse(value).is_none())
        .map(String::as_str)
        .collect();
    (!unknown.is_empty()).then(|| {
        let kinds: Vec<&str> = FileKind::ALL.iter().map(|kind| kind.as_str()).collect();
        format!(
            "scope kind {} is not a file kind (kinds: {})",
            unknown.join(", "),
            kinds.join(", ")
        )
    })
}

pub(crate) fn search(inner: &Inner, query: &SearchQuery) -> Result<SearchResults, IndexError> {
    let mut warnings = Vec::new();
    inner.reader.reload().map_err(|e| inner.store_error(e))?;
    let searcher = inner.reader.searcher();
    let corpus = inner
        .corpus_stats(&searcher)
        .map_err(|e| inner.store_error(e))?;
    let stats = ExactStats {
        searcher: &searcher,
        corpus: &corpus,
        frequencies: Mutex::new(HashMap::new()),
    };
    let analysis = query::analyse(&query.text);
    let chosen =
        choose_terms(&analysis, &stats, &inner.fields).map_err(|e| inner.store_error(e))?;
    if chosen.is_empty() {
        // An empty index (being built for the first time by another process, or a
        // workspace without a file to index) is no question about another project.
        let warning = if searcher.num_docs() == 0 {
            "the workspace index holds no chunk yet (the workspace has no file it indexes, or another process is building the index: try again when `aptix index` has run)".to_owned()
        } else {
            no_terms_warning(&analysis)
        };
        warnings.push(warning);
        return Ok(SearchResults {
            warnings,
            ..SearchResults::default()
        });
    }
    let mut clauses: Vec<(Occur, Box<dyn Query>)> =
        vec![(Occur::Must, text_query(&inner.fields, &chosen))];
    let mut scoped: Vec<(Field, &ScopeCondition)> = Vec::new();
    let warned_before_scope = warnings.len();
    for condition in &query.scope {
        match store::scope_field(&inner.fields, &condition.key) {
            Some(field) => {
                // A kind no chunk has matches nothing: said, and applied as asked.
                if let Some(problem) = scope_problem(condition) {
                    warnings.push(problem);
                }
                clauses.extend(scope_clauses(field, condition));
                scoped.push((field, condition));
            }
            None => warnings.push(format!(
                "{}; condition ignored",
                scope_problem(condition).unwrap_or_default()
            )),
        }
    }
    let query_object = BooleanQuery::new(clauses);

    let limit = query.limit.max(1);
    let fetch = limit
        .saturating_mul(FETCH_FACTOR)
        .saturating_add(FETCH_EXTRA)
        .max(MIN_CANDIDATES);
    let weights: Arc<[f32; FileKind::ALL.len()]> = Arc::new(kind_weights(&analysis.wanted_kinds));
    let verbatim = Arc::new(
        code_span_chunks(
            &searcher,
            &inner.fields,
            &analysis.code_spans,
            &analysis.quoted,
        )
        .map_err(|e| inner.store_error(e))?,
    );
    let collector = TopDocs::with_limit(fetch).tweak_score(move |segment: &SegmentReader| {
        let column = segment
            .fast_fields()
            .u64(KIND_CODE_FIELD)
            .ok()
            .map(|column| column.first_or_default_col(0));
        let weights = Arc::clone(&weights);
        let verbatim = Arc::clone(&verbatim);
        let segment_id = segment.segment_id();
        move |doc: DocId, score: Score| {
            let code = column.as_ref().map_or(0, |column| column.get_val(doc));
            let weight = usize::try_from(code)
                .ok()
                .and_then(|index| weights.get(index))
                .copied()
                .unwrap_or(1.0);
            let quoted = verbatim.get(&(segment_id, doc)).copied().unwrap_or(1.0);
            score * weight * quoted
        }
    });
    let top = searcher
        .search_with_statistics_provider(&query_object, &collector, &stats)
        .map_err(|e| inner.store_error(e))?;
    let mut hits = Vec::with_capacity(top.len());
    for (score, address) in top {
        let doc: TantivyDocument = searcher.doc(address).map_err(|e| inner.store_error(e))?;
        // An index written before a path counted as secret may still hold it until its
        // next refresh: its text is not handed out meanwhile.
        if let Some(chunk) = store::chunk_from_document(&inner.fields, &doc)
            && !inner.config.holds_secrets(&inner.root, &chunk.path)
        {
            hits.push(ScoredChunk { chunk, score });
        }
    }
    let hits = rank::finish(hits, limit);
    // No hit under a scope: say whether the scope itself leaves nothing to search (a
    // kind no file has, a value spelt otherwise than the index keeps it), which would
    // otherwise look like a question nothing answers.
    if hits.is_empty() && !scoped.is_empty() && warnings.len() == warned_before_scope {
        // Built again only here, where nothing was found: a search that finds
        // something pays for its scope's clauses once.
        let mut alone: Vec<(Occur, Box<dyn Query>)> = scoped
            .into_iter()
            .flat_map(|(field, condition)| scope_clauses(field, condition))
            .collect();
        alone.push((Occur::Must, Box::new(AllQuery)));
        let in_scope = searcher
            .search(&BooleanQuery::new(alone), &Count)
            .map_err(|e| inner.store_error(e))?;
        if in_scope == 0 {
            let conditions: Vec<String> = query.scope.iter().map(describe_condition).collect();
            warnings.push(format!(
                "no chunk of the index is in the scope {}: values are compared as the index keeps them (languages and kinds in lower case, extensions without the dot)",
                conditions.join(" and ")
            ));
        }
    }
    let terms: Vec<String> = chosen.into_iter().map(|(term, _, _)| term).collect();
    let matches = hits.iter().map(|hit| explain(hit, &terms)).collect();
    Ok(SearchResults {
        hits,
        matches,
        terms,
        warnings,
    })
}

/// The multiplier of each kind's scores ([`FileKind::code`] order). Source counts fully;
/// the kinds that answer questions less often count less, unless the question is about
/// them ("add a test for ...").
/// The chunks that contain one of `spans` verbatim: among the chunks holding every
/// term of a span (at most [`CODE_SPAN_CANDIDATES`] of them, read from the store), those
/// whose text has the span itself; and the chunks that define a qualified name a span
/// quotes (see [`query::named_definitions`]), whose text seldom holds the name as
/// written (`fn route` inside `impl Router` for `Router::route`).
fn code_span_chunks(
    searcher: &Searcher,
    fields: &Fields,
    spans: &[String],
    quoted: &[String],
) -> tantivy::Result<HashMap<(SegmentId, DocId), f32>> {
    let mut found: HashMap<(SegmentId, DocId), f32> = HashMap::new();
    let mut mark = |address: (SegmentId, DocId), boost: f32| {
        let known = found.entry(address).or_insert(boost);
        *known = known.max(boost);
    };
    for span in spans {
        // A phrase in double quotes is asked for as it is, however short.
        let boost = if quoted.contains(span) || span.split_whitespace().count() >= MESSAGE_WORDS {
            MESSAGE_BOOST
        } else {
            CODE_SPAN_BOOST
        };
        let mut terms: Vec<String> = tokenizer::tokens(span);
        terms.sort();
        terms.dedup();
        if terms.is_empty() {
            continue;
        }
        let all: Vec<(Occur, Box<dyn Query>)> = terms
            .iter()
            .map(|term| exact_term(Occur::Must, fields.text, term))
            .collect();
        let candidates = searcher.search(
            &BooleanQuery::new(all),
            &TopDocs::with_limit(CODE_SPAN_CANDIDATES).order_by_score(),
        )?;
        for (_, address) in candidates {
            let doc: TantivyDocument = searcher.doc(address)?;
            let holds = doc
                .get_first(fields.text)
                .and_then(|value| value.as_str())
                .is_some_and(|text| text.contains(span.as_str()));
            if holds {
                let segment = searcher.segment_reader(address.segment_ord).segment_id();
                mark((segment, address.doc_id), boost);
            }
        }
        let definitions: Vec<(Occur, Box<dyn Query>)> = query::named_definitions(span)
            .into_iter()
            .map(|name| exact_term(Occur::Should, fields.symbol, name))
            .collect();
        if definitions.is_empty() {
            continue;
        }
        let defining = searcher.search(
            &BooleanQuery::new(definitions),
            &TopDocs::with_limit(CODE_SPAN_CANDIDATES).order_by_score(),
        )?;
        for (_, address) in defining {
            let segment = searcher.segment_reader(address.segment_ord).segment_id();
            mark((segment, address.doc_id), CODE_SPAN_BOOST);
        }
    }
    Ok(found)
}

/// A clause matching the documents whose `field` holds `text` as a term.
fn exact_term(occur: Occur, field: Field, text: &str) -> (Occur, Box<dyn Query>) {
    (
        occur,
        Box::new(TermQuery::new(
            Term::from_field_text(field, text),
            IndexRecordOption::Basic,
        )),
    )
}

fn kind_weights(wanted: &[FileKind]) -> [f32; FileKind::ALL.len()] {
    let mut weights = [1.0; FileKind::ALL.len()];
    for kind in FileKind::ALL {
        let weight = match kind {
            FileKind::Source => 1.0,
            FileKind::Test => 0.6,
            FileKind::TestData => 0.3,
            FileKind::Example => 0.6,
            FileKind::Docs => 0.5,
            FileKind::Changelog => 0.2,
            FileKind::Config => 0.6,
            FileKind::Lockfile | FileKind::Generated | FileKind::Vendored => 0.2,
        };
        let wanted_weight = match kind {
            FileKind::TestData if wanted.contains(&FileKind::Test) => 0.8,
            _ if wanted.contains(&kind) => 1.0,
            _ => weight,
        };
        if let Some(slot) = usize::try_from(kind.code())
            .ok()
            .and_then(|index| weights.get_mut(index))
        {
            *slot = wanted_weight;
        }
    }
    weights
}

/// Why a query searched for nothing: it had no words worth searching (stop words,
/// punctuation), or none of its words occurs anywhere in the index (a question about
/// another project, or an index built before the code it asks about).
fn no_terms_warning(analysis: &Analysis) -> String {
    if analysis.terms.is_empty() {
        return NO_SEARCHABLE_WORDS.to_owned();
    }
    const SHOWN: usize = 8;
    let words: Vec<&str> = analysis
        .terms
        .iter()
        .take(SHOWN)
        .map(|term| term.term.as_str())
        .collect();
    let more = if analysis.terms.len() > SHOWN {
        ", ..."
    } else {
        ""
    };
    format!("{NO_WORD_INDEXED} ({}{more})", words.join(", "))
}

/// The warning of a query with no word to search for.
const NO_SEARCHABLE_WORDS: &str = "query has no searchable words";
/// How the warning of a query none of whose words the index holds begins.
const NO_WORD_INDEXED: &str = "none of the query's words occurs in the workspace index";

/// Whether `warning` is [`no_terms_warning`]'s: news to someone searching, none to a
/// turn's retrieval (a "thanks" or a "hello" has no code to find).
pub(crate) fn is_no_terms_warning(warning: &str) -> bool {
    warning == NO_SEARCHABLE_WORDS || warning.starts_with(NO_WORD_INDEXED)
}

/// The analysed terms the index holds, at most [`MAX_QUERY_TERMS`], chosen by weight
/// times IDF (ties by the term, so the choice is deterministic); each with its weight.
fn choose_terms(
    analysis: &Analysis,
    stats: &ExactStats<'_>,
    fields: &Fields,
) -> tantivy::Result<Vec<(String, f32, bool)>> {
    let documents = stats.corpus.chunks.max(1) as f32;
    let mut scored: Vec<(f32, String, f32, bool)> = Vec::with_capacity(analysis.terms.len());
    for term in &analysis.terms {
        let mut frequency = 0;
        for field in fields.ranked() {
            frequency = frequency.max(stats.doc_freq(&Term::from_field_text(field, &term.term))?);
        }
        if frequency == 0 {
            continue;
        }
        let frequency = frequency as f32;
        let idf = (1.0 + (documents - frequency + 0.5) / (frequency + 0.5)).ln();
        scored.push((
            term.weight * idf,
            term.term.clone(),
            term.weight,
            term.path_like,
        ));
    }
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    scored.truncate(MAX_QUERY_TERMS);
    Ok(scored
        .into_iter()
        .map(|(_, term, weight, path_like)| (term, weight, path_like))
        .collect())
}

/// BM25 over the text, boosted where the words name a symbol or a path, each term
/// scaled by its weight.
fn text_query(fields: &Fields, terms: &[(String, f32, bool)]) -> Box<dyn Query> {
    let term_query = |field: Field, word: &str, boost: f32| -> (Occur, Box<dyn Query>) {
        let query = Box::new(TermQuery::new(
            Term::from_field_text(field, word),
            IndexRecordOption::WithFreqs,
        ));
        (Occur::Should, Box::new(BoostQuery::new(query, boost)))
    };
    let mut should: Vec<(Occur, Box<dyn Query>)> = Vec::with_capacity(terms.len() * 4);
    for (word, weight, path_like) in terms {
        should.push(term_query(fields.text, word, *weight));
        should.push(term_query(fields.symbol_text, word, weight * SYMBOL_BOOST));
        should.push(term_query(
            fields.heading_text,
            word,
            weight * HEADING_BOOST,
        ));
        let path_boost = if *path_like {
            PATH_LIKE_BOOST
        } else {
            PATH_BOOST
        };
        should.push(term_query(fields.path_text, word, weight * path_boost));
    }
    Box::new(BooleanQuery::new(should))
}

/// Which of `terms` the hit holds in its text, symbols, headings and path.
fn explain(hit: &ScoredChunk, terms: &[String]) -> HitMatch {
    let chunk = &hit.chunk;
    let set = |text: &str| -> BTreeSet<String> { tokenizer::tokens(text).into_iter().collect() };
    let symbols = chunk
        .metadata
        .get("symbols")
        .or_else(|| chunk.metadata.get("symbol"))
        .map(String::as_str)
        .unwrap_or_default();
    let (text, symbol, path) = (set(&chunk.content), set(symbols), set(&chunk.path));
    let heading = set(&crate::chunker::headings(&chunk.content, &chunk.language).join("\n"));
    let found = |set: &BTreeSet<String>| -> Vec<String> {
        terms.iter().filter(|t| set.contains(*t)).cloned().collect()
    };
    HitMatch {
        text: found(&text),
        symbol: found(&symbol),
        heading: found(&heading),
        path: found(&path),
    }
}

/// Corpus-wide BM25 statistics over the live chunk documents of one searcher
/// generation: the same for the same set of chunks, however the segments look.
#[derive(Debug, Clone, Default)]
pub(crate) struct CorpusStats {
    /// Live chunk documents.
    pub(crate) chunks: u64,
    /// Live tokens per ranked field (sum of the field norms of live documents).
    pub(crate) tokens: HashMap<Field, u64>,
}

impl CorpusStats {
    /// Counts over every segment of `searcher`, skipping deleted documents.
    pub(crate) fn compute(searcher: &Searcher, fields: &Fields) -> tantivy::Result<CorpusStats> {
        let mut stats = CorpusStats::default();
        let chunk_term = Term::from_field_text(fields.kind, KIND_CHUNK);
        stats.chunks = live_doc_freq(searcher, &chunk_term)?;
        for field in fields.ranked() {
            let mut total = 0u64;
            for segment in searcher.segment_readers() {
                let norms = segment.get_fieldnorms_reader(field)?;
                for doc in segment.doc_ids_alive() {
                    total += u64::from(norms.fieldnorm(doc));
                }
            }
            stats.tokens.insert(field, total);
        }
        Ok(stats)
    }
}

/// How many live documents hold `term`.
fn live_doc_freq(searcher: &Searcher, term: &Term) -> tantivy::Result<u64> {
    let mut count = 0u64;
    for segment in searcher.segment_readers() {
        let inverted = segment.inverted_index(term.field())?;
        match segment.alive_bitset() {
            None => count += u64::from(inverted.doc_freq(term)?),
            Some(alive) => {
                if let Some(mut postings) =
                    inverted.read_postings(term, IndexRecordOption::Basic)?
                {
                    let mut doc = postings.doc();
                    while doc != TERMINATED {
                        if alive.is_alive(doc) {
                            count += 1;
                        }
                        doc = postings.advance();
                    }
                }
            }
        }
    }
    Ok(count)
}

/// [`Bm25StatisticsProvider`] over live documents only.
///
/// Document frequencies are remembered for the search: choosing the terms and weighting
/// the query ask for the same ones, and a term's count over a segment with deletions
/// walks its postings.
struct ExactStats<'a> {
    searcher: &'a Searcher,
    corpus: &'a CorpusStats,
    frequencies: Mutex<HashMap<Term, u64>>,
}

impl Bm25StatisticsProvider for ExactStats<'_> {
    fn total_num_tokens(&self, field: Field) -> tantivy::Result<u64> {
        Ok(self.corpus.tokens.get(&field).copied().unwrap_or(0))
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        Ok(self.corpus.chunks)
    }

    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        if let Some(known) = self
            .frequencies
            .lock()
            .ok()
            .and_then(|known| known.get(term).copied())
        {
            return Ok(known);
        }
        let frequency = live_doc_freq(self.searcher, term)?;
        if let Ok(mut known) = self.frequencies.lock() {
            known.insert(term.clone(), frequency);
        }
        Ok(frequency)
    }
}

/// `kind == test`, `path contains src, lib`: a condition as a person wrote it.
fn describe_condition(condition: &ScopeCondition) -> String {
    format!(
        "`{} {} {}`",
        condition.key,
        condition.operator.as_str(),
        condition.values.join(", ")
    )
}

/// The clauses of one scope condition on its exact field. Filters score zero so that
/// they narrow the results without reordering them.
fn scope_clauses(field: Field, condition: &ScopeCondition) -> Vec<(Occur, Box<dyn Query>)> {
    let exact = |value: &str| -> Box<dyn Query> {
        Box::new(TermQuery::new(
            Term::from_field_text(field, value),
            IndexRecordOption::Basic,
        ))
    };
    let substring = |value: &str| -> Box<dyn Query> {
        match RegexQuery::from_pattern(&substring_pattern(value), field) {
            Ok(query) => Box::new(query),
            // The pattern escapes every character, so this cannot happen; matching
            // nothing is the safe reading of a condition that cannot be expressed.
            Err(_) => Box::new(EmptyQuery),
        }
    };
    let alternatives = |make: &dyn Fn(&str) -> Box<dyn Query>| -> Box<dyn Query> {
        let any: Vec<(Occur, Box<dyn Query>)> = condition
            .values
            .iter()
            .map(|value| (Occur::Should, make(value)))
            .collect();
        if any.is_empty() {
            return Box::new(EmptyQuery);
        }
        Box::new(ConstScoreQuery::new(Box::new(BooleanQuery::new(any)), 0.0))
    };
    match condition.operator {
        ScopeOperator::Equals => vec![(Occur::Must, alternatives(&exact))],
        ScopeOperator::Contains => vec![(Occur::Must, alternatives(&substring))],
        ScopeOperator::NotEquals => condition
            .values
            .iter()
            .map(|value| (Occur::MustNot, exact(value)))
            .collect(),
        ScopeOperator::DoesNotContain => condition
            .values
            .iter()
            .map(|value| (Occur::MustNot, substring(value)))
            .collect(),
    }
}

/// A regex matching any term that contains `value`: every character is escaped as a
/// code point, so no character of the value is ever read as regex syntax.
fn substring_pattern(value: &str) -> String {
    let mut pattern = String::with_capacity(value.len() * 4 + 8);
    pattern.push_str("(?s).*");
    for c in value.chars() {
        if c.is_ascii_alphanumeric() {
            pattern.push(c);
        } else {
            pattern.push_str(&format!("\\x{{{:x}}}", u32::from(c)));
        }
    }
    pattern.push_str(".*");
    pattern
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substring_patterns_escape_everything() {
        assert_eq!(substring_pattern("a.b/c"), "(?s).*a\\x{2e}b\\x{2f}c.*");
        for value in ["(", "[", "\\", "é", "*", "{2}", ""] {
            let field = Field::from_field_id(0);
            assert!(
                RegexQuery::from_pattern(&substring_pattern(value), field).is_ok(),
                "{value}"
            );
        }
    }
}
