//! Searching the index: BM25 over the code-tokenized query text, with AGN-034 scope
//! conditions translated into boolean clauses of the same tantivy query.
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

use aptix_model::contract::{ScopeCondition, ScopeOperator};
use aptix_rag::ScoredChunk;
use tantivy::collector::TopDocs;
use tantivy::query::{
    BooleanQuery, BoostQuery, ConstScoreQuery, EmptyQuery, Occur, Query, RegexQuery, TermQuery,
};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{TantivyDocument, Term};

use crate::IndexError;
use crate::index::Inner;
use crate::store::{self, Fields, SCOPE_KEYS};
use crate::tokenizer;

/// Queries use at most this many distinct terms; the rest of a very long instruction
/// adds little to the ranking and would slow the search down.
const MAX_QUERY_TERMS: usize = 64;

/// How much more a term counts when it names a definition in the chunk.
const SYMBOL_BOOST: f32 = 1.5;
/// How much a term counts when it appears in the chunk's path.
const PATH_BOOST: f32 = 0.5;

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
    /// Soft problems: unknown scope keys, a query without searchable words.
    pub warnings: Vec<String>,
}

pub(crate) fn search(inner: &Inner, query: &SearchQuery) -> Result<SearchResults, IndexError> {
    let mut warnings = Vec::new();
    let Some(text_query) = text_query(&inner.fields, &query.text) else {
        warnings.push("query has no searchable words".to_owned());
        return Ok(SearchResults {
            hits: Vec::new(),
            warnings,
        });
    };
    let mut clauses: Vec<(Occur, Box<dyn Query>)> = vec![(Occur::Must, text_query)];
    for condition in &query.scope {
        match store::scope_field(&inner.fields, &condition.key) {
            Some(field) => clauses.extend(scope_clauses(field, condition)),
            None => warnings.push(format!(
                "scope key {:?} is not known to the workspace index (known: {}); condition ignored",
                condition.key,
                SCOPE_KEYS.join(", ")
            )),
        }
    }
    let query_object = BooleanQuery::new(clauses);

    inner.reader.reload().map_err(|e| inner.store_error(e))?;
    let searcher = inner.reader.searcher();
    let top = searcher
        .search(
            &query_object,
            &TopDocs::with_limit(query.limit.max(1)).order_by_score(),
        )
        .map_err(|e| inner.store_error(e))?;
    let mut hits = Vec::with_capacity(top.len());
    for (score, address) in top {
        let doc: TantivyDocument = searcher.doc(address).map_err(|e| inner.store_error(e))?;
        if let Some(chunk) = store::chunk_from_document(&inner.fields, &doc) {
            hits.push(ScoredChunk { chunk, score });
        }
    }
    Ok(SearchResults { hits, warnings })
}

/// BM25 over the text, boosted where the words name a symbol or a path; `None` when the
/// text has no word to search for.
fn text_query(fields: &Fields, text: &str) -> Option<Box<dyn Query>> {
    let mut terms: Vec<String> = Vec::new();
    for token in tokenizer::tokens(text) {
        if terms.len() >= MAX_QUERY_TERMS {
            break;
        }
        if !terms.contains(&token) {
            terms.push(token);
        }
    }
    if terms.is_empty() {
        return None;
    }
    let term_query = |field: Field, word: &str| -> Box<dyn Query> {
        Box::new(TermQuery::new(
            Term::from_field_text(field, word),
            IndexRecordOption::WithFreqs,
        ))
    };
    let mut should: Vec<(Occur, Box<dyn Query>)> = Vec::with_capacity(terms.len() * 3);
    for word in &terms {
        should.push((Occur::Should, term_query(fields.text, word)));
        should.push((
            Occur::Should,
            Box::new(BoostQuery::new(
                term_query(fields.symbol_text, word),
                SYMBOL_BOOST,
            )),
        ));
        should.push((
            Occur::Should,
            Box::new(BoostQuery::new(
                term_query(fields.path_text, word),
                PATH_BOOST,
            )),
        ));
    }
    Some(Box::new(BooleanQuery::new(should)))
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
