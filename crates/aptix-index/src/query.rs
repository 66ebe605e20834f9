//! Query analysis: from a developer's instruction to the weighted terms a search uses.
//!
//! Instructions are noisy. Besides the words that matter they carry URLs, commit
//! hashes, issue numbers, pasted shell sessions, sign-off trailers and the little words
//! of English; a search over all of that ranks files by how much noise they share with
//! the question (a lockfile full of hex, a changelog full of issue numbers). So:
//!
//! 1. **Noise is dropped** before tokenizing: fenced code blocks that are shell or log
//!    transcripts (an info string such as `sh`, `console` or `text`, or a line starting
//!    with a prompt `$ `), unfenced prompt lines, URLs, e-mail addresses, commit hashes
//!    (7 to 64 hex digits with both digits and letters), issue references (`#123`,
//!    `GH-123`, `owner/repo#123`, `[1]`), `@mentions` and trailer lines
//!    (`Signed-off-by:` ...). Code blocks in a programming language are kept: they name
//!    the code.
//! 2. **Identifiers weigh more than prose**: a word in backticks, in CamelCase or
//!    camelCase, with `_`, `::`, `/`, `.` between word characters or a call's `()` is an
//!    identifier; its whole term (every spelling joined and lower-cased) gets
//!    [`IDENTIFIER_WEIGHT`], its parts and prose words weigh 1. English stop words are
//!    dropped (an identifier's whole term never is).
//! 3. **Terms are chosen by how telling they are**: the search keeps the
//!    [`MAX_QUERY_TERMS`] terms with the highest weight times IDF, not the first ones.
//!
//! The analysis also notes which non-source kinds the question asks about ("add a test
//! for ...", "fix the docs of ..."), so that ranking does not push them down then.

use std::collections::BTreeMap;

use crate::kind::FileKind;
use crate::tokenizer;

/// The most distinct terms a search uses.
pub(crate) const MAX_QUERY_TERMS: usize = 64;

/// The weight of an identifier's whole term, relative to 1 for prose words and parts.
pub(crate) const IDENTIFIER_WEIGHT: f32 = 2.0;

/// One query term and how much it counts.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct QueryTerm {
    /// The term as the code tokenizer emits it.
    pub(crate) term: String,
    /// Its weight before IDF: [`IDENTIFIER_WEIGHT`] for an identifier's whole term,
    /// else 1, raised a little when the term is repeated.
    pub(crate) weight: f32,
    /// Whether it is the whole term of an identifier.
    pub(crate) identifier: bool,
    /// Whether it comes from a word that names a place in the tree: a path
    /// (`axum/src/routing`, `sse.rs`) or the area prefix of a subject line
    /// (`routing: ...`, `fix(sse): ...`), which should match file paths above all.
    pub(crate) path_like: bool,
}

/// What [`analyse`] makes of an instruction.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Analysis {
    /// Distinct terms, in order of first appearance.
    pub(crate) terms: Vec<QueryTerm>,
    /// Non-source kinds the question is about (tests, docs, ...).
    pub(crate) wanted_kinds: Vec<FileKind>,
    /// Quoted code worth finding verbatim: backtick spans of the prose that are more
    /// than one word (`map_response(IntoResponse::into_response)`, `serde_json::Value`),
    /// in order of appearance, at most [`MAX_CODE_SPANS`].
    pub(crate) code_spans: Vec<String>,
    /// The spans of `code_spans` the user put in double quotes: a phrase asked for as
    /// it is, whatever its length.
    pub(crate) quoted: Vec<String>,
}

/// The weight of the singular a plural prose word is also searched as ("features"
/// finds "Feature flags"): the index does not stem, so without it a plural in the
/// question misses every singular in the code and its comments.
pub(crate) const PLURAL_WEIGHT: f32 = 1.0;

/// The singular of an English plural prose word, when it plainly is one: `features` ->
/// `feature`, `entries` -> `entry`, `matches` -> `match`; `None` for words that only end
/// in `s` (`class`, `status`, `analysis`, `always`) or are short.
fn singular(word: &str) -> Option<String> {
    if word.len() < 4 || !word.is_ascii() || !word.ends_with('s') {
        return None;
    }
    for ending in ["ss", "us", "is", "ous", "ys", "as", "os"] {
        if word.ends_with(ending) {
            return None;
        }
    }
    if let Some(stem) = word.strip_suffix("ies") {
        return (stem.len() >= 2).then(|| format!("{stem}y"));
    }
    for ending in ["ches", "shes", "xes", "sses", "zes"] {
        if word.ends_with(ending) {
            return Some(word[..word.len() - 2].to_owned());
        }
    }
    Some(word[..word.len() - 1].to_owned())
}

/// The most quoted code spans a search looks for verbatim.
pub(crate) const MAX_CODE_SPANS: usize = 4;

/// A backtick span worth finding verbatim: at least two words joined by code
/// punctuation, at most a line of code. A single word (`Router`) is already a term, and
/// a sentence in backticks is not a quotation of code.
fn is_code_span(span: &str) -> bool {
    let span = span.trim();
    (6..=200).contains(&span.len())
        && span.chars().any(|c| c.is_alphanumeric())
        && span
            .chars()
            .any(|c| !c.is_alphanumeric() && c != '_' && !c.is_whitespace())
        && tokenizer::word_tokens(span)
            .iter()
            .map(Vec::len)
            .sum::<usize>()
            >= 2
        && span.split_whitespace().count() <= 6
}

/// Whether `text` reads as a message to find verbatim: one line of three to twelve
/// words, not quoting code in backticks (that quotation is what to find then).
fn is_message(text: &str) -> bool {
    let words = text.split_whitespace().count();
    !text.contains(['\n', '`'])
        && (3..=12).contains(&words)
        && (12..=200).contains(&text.len())
        && text.chars().any(char::is_alphabetic)
}

/// The phrases of one line in double quotes (`"..."`), of two words or more.
fn quoted_phrases(line: &str) -> Vec<&str> {
    let pieces: Vec<&str> = line.split('"').collect();
    pieces
        .iter()
        .enumerate()
        // An odd piece is quoted only when a closing quote follows it.
        .filter(|(index, _)| index % 2 == 1 && index + 1 < pieces.len())
        .map(|(_, piece)| *piece)
        .filter(|piece| {
            (2..=12).contains(&piece.split_whitespace().count())
                && (6..=200).contains(&piece.trim().len())
        })
        .collect()
}

/// Analyses an instruction; see the module documentation.
pub(crate) fn analyse(text: &str) -> Analysis {
    let mut terms: Vec<QueryTerm> = Vec::new();
    let mut counts: BTreeMap<String, u32> = BTreeMap::new();
    let mut wanted_kinds = Vec::new();
    let mut add = |term: String, weight: f32, identifier: bool, path_like: bool| {
        *counts.entry(term.clone()).or_insert(0) += 1;
        match terms.iter_mut().find(|t| t.term == term) {
            Some(existing) => {
                if weight > existing.weight {
                    existing.weight = weight;
                }
                existing.identifier |= identifier;
                existing.path_like |= path_like;
            }
            None => terms.push(QueryTerm {
                term,
                weight,
                identifier,
                path_like,
            }),
        }
    };
    let (words, spans) = words(text);
    // Function words dropped, kept back in case nothing else is left: a query of
    // function words alone ("what does once do") is still about something.
    let mut held: Vec<String> = Vec::new();
    for (word, in_code, area, lead) in words {
        let lower = word.to_ascii_lowercase();
        for (keys, kind) in KIND_WORDS {
            if keys.contains(&lower.trim_matches(|c: char| !c.is_alphanumeric()))
                && !wanted_kinds.contains(kind)
            {
                wanted_kinds.push(*kind);
            }
        }
        let identifier = in_code || is_identifier(word);
        let path_like = area || is_path_like(word);
        if lead && !identifier && !path_like && is_action_verb(&lower) {
            // "Make it easier to ...": the verb says what to do, not where; as a term
            // it matches `make_service` and `default_make` all over the tree.
            for token in tokenizer::word_tokens(word).into_iter().flatten() {
                add(token, LEAD_VERB_WEIGHT, false, false);
            }
            continue;
        }
        for tokens in tokenizer::word_tokens(word) {
            for (position, token) in tokens.into_iter().enumerate() {
                if position == 0 && identifier {
                    add(token, IDENTIFIER_WEIGHT, true, path_like);
                } else if !is_stop_word(&token) {
                    let single = (!identifier).then(|| singular(&token)).flatten();
                    add(token, 1.0, false, path_like);
                    if let Some(single) = single {
                        add(single, PLURAL_WEIGHT, false, path_like);
                    }
                } else if !held.contains(&token) {
                    held.push(token);
                }
            }
        }
    }
    if terms.is_empty() {
        terms.extend(held.into_iter().map(|term| QueryTerm {
            term,
            weight: 1.0,
            identifier: false,
            path_like: false,
        }));
    }
    for term in &mut terms {
        let repeats = counts.get(&term.term).copied().unwrap_or(1);
        if repeats > 1 {
            term.weight *= 1.0 + 0.25 * ((repeats - 1).min(4) as f32);
        }
    }
    wanted_kinds.sort();
    let mut code_spans: Vec<String> = Vec::new();
    // A query that is one short line of words (an error message pasted from a
    // terminal, a phrase from a comment) is looked for verbatim too: the code that says
    // it is where to look, and its words alone rank a file named after one of them
    // first. Text the user put in double quotes is a phrase to find as it is.
    let whole = text.trim();
    let phrases = is_message(whole)
        .then_some(whole)
        .into_iter()
        .chain(text.lines().flat_map(quoted_phrases));
    for span in phrases.chain(spans.into_iter().filter(|span| is_code_span(span))) {
        let span = span.trim();
        if !code_spans.iter().any(|known| known == span) {
            code_spans.push(span.to_owned());
        }
    }
    code_spans.truncate(MAX_CODE_SPANS);
    let quoted = text
        .lines()
        .flat_map(quoted_phrases)
        .map(|phrase| phrase.trim().to_owned())
        .filter(|phrase| code_spans.contains(phrase))
        .collect();
    Analysis {
        terms,
        wanted_kinds,
        code_spans,
        quoted,
    }
}

/// Words that say a question is about a non-source kind of file.
const KIND_WORDS: &[(&[&str], FileKind)] = &[
    (
        &[
            "test",
            "tests",
            "testing",
            "tested",
            "unittest",
            "unittests",
            "pytest",
            "spec",
            "specs",
            "e2e",
        ],
        FileKind::Test,
    ),
    (
        &["fixture", "fixtures", "snapshot", "snapshots", "testdata"],
        FileKind::TestData,
    ),
    (
        &[
            "example",
            "examples",
            "demo",
            "demos",
            "sample",
            "samples",
            "benchmark",
            "benchmarks",
        ],
        FileKind::Example,
    ),
    (
        &[
            "doc",
            "docs",
            "documentation",
            "readme",
            "guide",
            "tutorial",
        ],
        FileKind::Docs,
    ),
    (
        &["changelog", "changelogs", "changes.md", "changelog.md"],
        FileKind::Changelog,
    ),
    (
        &[
            "config",
            "configuration",
            "toml",
            "yaml",
            "yml",
            "cargo.toml",
            "package.json",
            "pyproject.toml",
            "ci",
            "workflow",
            "dockerfile",
            "makefile",
        ],
        FileKind::Config,
    ),
];

/// A word of the instruction, whether it stood in backticks or a kept code block,
/// whether it lies in the subject's area prefix, and whether it is the subject's first
/// word after that prefix (where an instruction puts its verb: "Make ...", "Fix ...").
type Word<'a> = (&'a str, bool, bool, bool);

/// The words of the instruction that survive the noise filters, and the code its prose
/// lines quote ([`line_code_spans`]), in one pass over its lines.
fn words(text: &str) -> (Vec<Word<'_>>, Vec<&str>) {
    let mut out = Vec::new();
    let mut spans = Vec::new();
    let mut fence: Option<(String, bool)> = None; // (marker, keep the block)
    let mut subject_seen = false;
    let lines: Vec<&str> = text.lines().collect();
    let mut index = 0;
    while index < lines.len() {
        let line = lines.get(index).copied().unwrap_or_default();
        index += 1;
        let trimmed = line.trim_start();
        if let Some((marker, keep)) = &fence {
            if trimmed.starts_with(marker.as_str()) && trimmed.trim_end() == marker.as_str() {
                fence = None;
            } else if *keep {
                out.extend(
                    line_words(line, true)
                        .into_iter()
                        .map(|(w, c)| (w, c, false, false)),
                );
            }
            continue;
        }
        if let Some(marker) = fence_marker(trimmed) {
            let info = trimmed[marker.len()..].trim().to_ascii_lowercase();
            // Look ahead: a block with a prompt line is a transcript whatever its tag.
            let mut has_prompt = false;
            for next in lines.iter().skip(index) {
                let next = next.trim_start();
                if next.starts_with(marker.as_str()) {
                    break;
                }
                has_prompt |= is_prompt_line(next);
            }
            let keep = !has_prompt && !TRANSCRIPT_TAGS.contains(&info.as_str());
            fence = Some((marker, keep));
            continue;
        }
        if is_prompt_line(trimmed) || is_trailer(trimmed) {
            continue;
        }
        let is_subject = !subject_seen && !trimmed.is_empty();
        let area = if is_subject {
            subject_seen = true;
            area_prefix(trimmed)
        } else {
            ""
        };
        let area_end = area.len();
        let offset = line.len() - trimmed.len();
        let mut lead_open = is_subject;
        for (word, code) in line_words(line, false) {
            // The word lies in the area prefix when it starts before the prefix ends.
            let start = word.as_ptr() as usize - line.as_ptr() as usize;
            let in_area = area_end > 0 && start < offset + area_end;
            let lead = lead_open && !in_area;
            lead_open &= in_area;
            out.push((word, code, in_area, lead));
        }
        line_code_spans(line, &mut spans);
    }
    (out, spans)
}

/// The quoted code of one prose line: its closed backtick spans and, in the prose
/// between them, qualified paths and calls (`axum::extract::Query`, `foo.bar()`).
fn line_code_spans<'a>(line: &'a str, spans: &mut Vec<&'a str>) {
    let pieces: Vec<&str> = line.split('`').collect();
    // An odd piece is code only when a closing backtick follows it.
    for (index, piece) in pieces.iter().enumerate() {
        if index % 2 == 1 && index + 1 < pieces.len() {
            spans.push(*piece);
        } else {
            for word in piece.split_whitespace() {
                let word = word.trim_matches(|c: char| ",.;:!?\"'[]{}<>".contains(c));
                if (word.contains("::") || word.contains("()")) && !is_noise(word) {
                    spans.push(word);
                }
            }
        }
    }
}

/// The qualified definition names a quoted span may name, as the chunker writes them
/// (`Type::method` in Rust, `Class.method` elsewhere): the span without a call's
/// arguments, and each shorter tail that is still qualified, since the chunker
/// qualifies a definition by its container only (`axum::Router::route()` names
/// `axum::Router::route` and `Router::route`). A bare name is none: it would single out
/// every definition of that name.
pub(crate) fn named_definitions(span: &str) -> Vec<&str> {
    let name = span.split('(').next().unwrap_or_default().trim();
    let is_part = |c: char| c.is_alphanumeric() || c == '_' || c == '$';
    let qualified = |name: &str| name.contains("::") || name.contains('.');
    if !qualified(name)
        || name.starts_with(['.', ':'])
        || name.ends_with(['.', ':'])
        || !name.chars().all(|c| is_part(c) || c == ':' || c == '.')
    {
        return Vec::new();
    }
    let mut names = vec![name];
    let mut rest = name;
    while let Some(at) = rest.find(['.', ':']) {
        rest = rest[at..].trim_start_matches(['.', ':']);
        if !qualified(rest) {
            break;
        }
        names.push(rest);
    }
    names
}

/// Conventional-commit types, which are not areas: `fix(sse):` names the area `sse`.
const CHANGE_TYPES: &[&str] = &[
    "fix", "feat", "feature", "chore", "docs", "doc", "refactor", "perf", "test", "tests", "build",
    "ci", "style", "revert", "bug", "bugfix", "hotfix", "breaking",
];

/// Labels that end in a colon without naming a place in the tree.
const NOT_AREAS: &[&str] = &[
    "note", "notes", "question", "problem", "issue", "error", "warning", "bug", "todo", "hi",
    "hello", "hey", "context", "goal", "task", "request", "help", "summary", "update", "wip",
    "example", "e.g", "i.e", "ps", "nb", "tl;dr", "tldr", "edit", "why", "how", "what",
];

/// The area a subject line starts with, `routing` in `routing: omit the header` and
/// `sse` in `fix(sse): skip ...`; empty when there is none. At most three words before
/// a colon, and not a conventional-commit type alone.
fn area_prefix(subject: &str) -> &str {
    let Some(colon) = subject
        .find(": ")
        .or_else(|| subject.strip_suffix(':').map(str::len))
    else {
        return "";
    };
    let prefix = &subject[..colon];
    if prefix.split_whitespace().count() > 3 || prefix.contains('`') {
        return "";
    }
    let type_name = prefix
        .split('(')
        .next()
        .unwrap_or_default()
        .trim_end_matches('!');
    let type_name = type_name.to_ascii_lowercase();
    if NOT_AREAS.contains(&type_name.as_str()) || type_name.contains('[') {
        // "Note: ...", "error[E0277]: ...": a label or a pasted message, not a place.
        return "";
    }
    if CHANGE_TYPES.contains(&type_name.as_str()) {
        // `fix(sse)`: an area only with a scope in parentheses (the word `fix(sse)` is
        // one word, so its type counts as part of it).
        return match (prefix.find('('), prefix.rfind(')')) {
            (Some(open), Some(close)) if open < close => prefix,
            _ => "",
        };
    }
    prefix
}

/// A path or a file name: `axum/src/routing`, `routing/mod.rs`, `sse.rs`.
fn is_path_like(word: &str) -> bool {
    let core = word.trim_matches(|c: char| "()[]{}<>,;:!?\"'*`".contains(c) || c == '.');
    if core.contains("::") {
        return false;
    }
    if core.contains('/') {
        return core.chars().any(char::is_alphabetic);
    }
    core.rsplit_once('.').is_some_and(|(stem, extension)| {
        !stem.is_empty() && crate::kind::is_known_extension(&extension.to_ascii_lowercase())
    })
}

/// Info strings of fenced blocks that hold sessions and output, not code.
const TRANSCRIPT_TAGS: &[&str] = &[
    "sh",
    "bash",
    "shell",
    "console",
    "terminal",
    "zsh",
    "fish",
    "powershell",
    "ps",
    "pwsh",
    "cmd",
    "bat",
    "text",
    "txt",
    "plain",
    "plaintext",
    "log",
    "output",
    "stdout",
    "stderr",
    "",
    "shell-session",
    "shellsession",
];

/// The fence of a line that opens a fenced block: three or more backticks or tildes.
fn fence_marker(trimmed: &str) -> Option<String> {
    for fence_char in ['`', '~'] {
        let run = trimmed.chars().take_while(|c| *c == fence_char).count();
        if run >= 3 {
            return Some(fence_char.to_string().repeat(run));
        }
    }
    None
}

/// A command typed at a prompt: `$ cargo test`, `% make`, `> npm run`, `PS> dir`.
fn is_prompt_line(trimmed: &str) -> bool {
    ["$ ", "% ", "> $ ", "PS> ", "PS ", "❯ ", "# $ "]
        .iter()
        .any(|prompt| trimmed.starts_with(prompt))
}

/// `Signed-off-by: ...` and the other git trailers.
fn is_trailer(trimmed: &str) -> bool {
    let Some((key, _)) = trimmed.split_once(':') else {
        return false;
    };
    let key = key.to_ascii_lowercase();
    [
        "signed-off-by",
        "co-authored-by",
        "reviewed-by",
        "acked-by",
        "tested-by",
        "reported-by",
        "suggested-by",
        "helped-by",
        "change-id",
        "cc",
        "fixes",
        "closes",
        "refs",
    ]
    .contains(&key.trim())
}

/// The words of one line (split at white space, backtick spans kept whole), without
/// URLs, addresses, hashes, issue references and mentions.
fn line_words(line: &str, in_code: bool) -> Vec<(&str, bool)> {
    let mut out = Vec::new();
    // Backtick spans alternate with plain text: odd pieces are code.
    for (piece_index, piece) in line.split('`').enumerate() {
        let code = in_code || piece_index % 2 == 1;
        for word in piece.split_whitespace() {
            if !is_noise(word) {
                out.push((word, code));
            }
        }
    }
    out
}

/// URLs, e-mail addresses, commit hashes, issue references and mentions.
fn is_noise(word: &str) -> bool {
    let core = word.trim_matches(|c: char| "()[]{}<>,.;:!?\"'*_".contains(c));
    if core.is_empty() {
        return false;
    }
    let lower = core.to_ascii_lowercase();
    if lower.contains("://") || lower.starts_with("www.") {
        return true;
    }
    if let Some((user, domain)) = core.split_once('@') {
        if user.is_empty() {
            // @mention (a decorator such as `@app.route` has a dot or a parenthesis).
            return !domain.contains(['.', '(']);
        }
        return domain.contains('.');
    }
    if is_hash(core) {
        return true;
    }
    let bracketed = word.trim_matches(|c: char| ",.;:!?\"'()".contains(c));
    is_issue_reference(core) || is_issue_reference(bracketed)
}

/// 7 to 64 hex digits with at least one digit and one letter.
fn is_hash(word: &str) -> bool {
    (7..=64).contains(&word.len())
        && word.bytes().all(|b| b.is_ascii_hexdigit())
        && word.bytes().any(|b| b.is_ascii_digit())
        && word.bytes().any(|b| b.is_ascii_alphabetic())
}

/// `#123`, `GH-123`, `owner/repo#123`, `!123`, `[1]`, and `#123`s glued to other words.
fn is_issue_reference(word: &str) -> bool {
    let digits_after = |prefix_end: usize| {
        let rest = &word[prefix_end..];
        !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit())
    };
    if let Some(at) = word.rfind('#') {
        return digits_after(at + 1);
    }
    if word.starts_with('!') && digits_after(1) {
        return true;
    }
    let upper = word.to_ascii_uppercase();
    if upper.starts_with("GH-") && digits_after(3) {
        return true;
    }
    word.starts_with('[')
        && word.ends_with(']')
        && word.len() > 2
        && word[1..word.len() - 1].bytes().all(|b| b.is_ascii_digit())
}

/// Whether a plain word looks like code: CamelCase or camelCase, `snake_case`, a path,
/// `a::b`, `a.b`, or a call `f()`.
fn is_identifier(word: &str) -> bool {
    let core = word.trim_matches(|c: char| "()[]{}<>,;:!?\"'*".contains(c) || c == '.');
    if core.len() < 2 {
        return false;
    }
    if word.contains("()") || core.contains("::") || core.contains('_') || core.contains('/') {
        return core.chars().any(char::is_alphabetic);
    }
    let chars: Vec<char> = core.chars().collect();
    // Dots between names: `foo.bar`, `file.rs` (not "e.g" or "3.14").
    let segments: Vec<&str> = core.split('.').collect();
    let dotted = segments.len() > 1
        && segments.iter().all(|segment| {
            segment.len() >= 2 && segment.chars().next().is_some_and(char::is_alphabetic)
        });
    // A lower-case letter followed by an upper-case one: `camelCase`, `CamelCase`.
    let camel = chars.windows(2).any(|w| {
        w.first().is_some_and(|c| c.is_lowercase()) && w.get(1).is_some_and(|c| c.is_uppercase())
    });
    dotted || camel
}

/// The weight of the verb an instruction starts with ([`ACTION_VERBS`]), against 1 for
/// other prose words: kept, since the same word elsewhere may name code, but light.
pub(crate) const LEAD_VERB_WEIGHT: f32 = 0.5;

/// Verbs that open an instruction or a commit subject ("Add ...", "Fix ...", "Make it
/// ..."): they say what to do to the code, not which code. Sorted, lower case.
const ACTION_VERBS: &[&str] = &[
    "add",
    "adjust",
    "allow",
    "avoid",
    "bump",
    "change",
    "clarify",
    "clean",
    "cleanup",
    "convert",
    "correct",
    "create",
    "deprecate",
    "disable",
    "disallow",
    "document",
    "drop",
    "enable",
    "ensure",
    "expose",
    "extend",
    "fix",
    "generalise",
    "generalize",
    "handle",
    "implement",
    "improve",
    "introduce",
    "make",
    "move",
    "optimise",
    "optimize",
    "prevent",
    "reduce",
    "refactor",
    "remove",
    "rename",
    "replace",
    "rework",
    "rewrite",
    "simplify",
    "split",
    "stop",
    "support",
    "switch",
    "tweak",
    "update",
    "upgrade",
    "use",
];

/// Whether a word (any case, with punctuation) is one of [`ACTION_VERBS`].
fn is_action_verb(word: &str) -> bool {
    let core = word.trim_matches(|c: char| !c.is_alphanumeric());
    ACTION_VERBS.binary_search(&core).is_ok()
}

/// English function words, which say nothing about which code is meant.
fn is_stop_word(term: &str) -> bool {
    STOP_WORDS.binary_search(&term).is_ok()
}

/// Sorted, lower case, as the tokenizer emits them (apostrophes split words, so
/// "don't" arrives as "don" and "t").
const STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "also",
    "am",
    "an",
    "and",
    "any",
    "are",
    "aren",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "cannot",
    "could",
    "couldn",
    "d",
    "did",
    "didn",
    "do",
    "does",
    "doesn",
    "doing",
    "don",
    "down",
    "during",
    "each",
    "either",
    "even",
    "ever",
    "few",
    "for",
    "from",
    "further",
    "had",
    "hadn",
    "has",
    "hasn",
    "have",
    "haven",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "however",
    "i",
    "if",
    "in",
    "into",
    "is",
    "isn",
    "it",
    "its",
    "itself",
    "just",
    "let",
    "ll",
    "m",
    "may",
    "me",
    "might",
    "more",
    "most",
    "much",
    "must",
    "mustn",
    "my",
    "myself",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "ought",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "please",
    "probably",
    "quite",
    "rather",
    "re",
    "really",
    "s",
    "same",
    "seems",
    "shall",
    "shan",
    "she",
    "should",
    "shouldn",
    "since",
    "so",
    "some",
    "such",
    "t",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "though",
    "through",
    "thus",
    "to",
    "too",
    "under",
    "until",
    "up",
    "upon",
    "us",
    "ve",
    "very",
    "via",
    "was",
    "wasn",
    "we",
    "well",
    "were",
    "weren",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "won",
    "would",
    "wouldn",
    "yet",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(text: &str) -> Vec<String> {
        analyse(text).terms.into_iter().map(|t| t.term).collect()
    }

    #[test]
    fn a_quoted_qualified_name_names_each_qualified_tail() {
        assert_eq!(
            named_definitions("axum::Router::route()"),
            ["axum::Router::route", "Router::route"]
        );
        assert_eq!(
            named_definitions("self.client.send(request)"),
            ["self.client.send", "client.send"]
        );
        assert_eq!(named_definitions("Router::route"), ["Router::route"]);
        for none in [
            "route()",
            "route",
            "Vec<u8>::new",
            "a b::c",
            "::",
            "a::",
            ".b",
            "",
        ] {
            assert!(named_definitions(none).is_empty(), "{none:?}");
        }
    }

    #[test]
    fn quoted_code_is_kept_verbatim_and_single_words_are_not() {
        let analysis = analyse(
            "Replace `map_response(IntoResponse::into_response)` with a `Router`\n\n\
             `axum::extract::Query` has try_from_uri, like axum_extra::Json::new().\n\
             Unclosed `quote here\n\
             ```rust\nlet x = a::b();\n```\n",
        );
        assert_eq!(
            analysis.code_spans,
            [
                "map_response(IntoResponse::into_response)",
                "axum::extract::Query",
                "axum_extra::Json::new()",
            ]
        );
        // At most four, each once.
        let many = (0..6)
            .map(|n| format!("`a{n}::b{n}` `a0::b0` "))
            .collect::<String>();
        assert_eq!(
            analyse(&many).code_spans,
            ["a0::b0", "a1::b1", "a2::b2", "a3::b3"]
        );
        // Words in backticks are terms, not spans; neither is a long sentence.
        assert!(
            analyse("use `Router` or `this is a whole sentence in backticks ok`")
                .code_spans
                .is_empty()
        );
    }

    #[test]
    fn a_pasted_message_and_quoted_phrases_are_looked_for_verbatim() {
        assert_eq!(
            analyse("No matching distribution found for").code_spans,
            ["No matching distribution found for"]
        );
        assert_eq!(
            analyse("why do I get \"values must list at least one value\" here?\nand \"x\"")
                .code_spans,
            ["values must list at least one value"]
        );
        // A question over many lines, a word or two, or quoted code are not messages.
        assert!(analyse("where is the\nparser").code_spans.is_empty());
        assert!(analyse("parser state").code_spans.is_empty());
        assert_eq!(
            analyse("what calls `axum::Router::route` here").code_spans,
            ["axum::Router::route"]
        );
    }

    #[test]
    fn plurals_also_search_their_singular() {
        for (plural, single) in [
            ("features", Some("feature")),
            ("entries", Some("entry")),
            ("matches", Some("match")),
            ("boxes", Some("box")),
            ("class", None),
            ("status", None),
            ("analysis", None),
            ("always", None),
            ("its", None),
        ] {
            assert_eq!(singular(plural).as_deref(), single, "{plural}");
        }
        let found = terms("scan the default features");
        assert!(found.contains(&"feature".to_owned()), "{found:?}");
        // An identifier is searched as written.
        assert!(!terms("`Headers`").contains(&"header".to_owned()));
    }

    #[test]
    fn the_verb_an_instruction_starts_with_weighs_little() {
        let weight = |text: &str, term: &str| {
            analyse(text)
                .terms
                .into_iter()
                .find(|t| t.term == term)
                .map(|t| t.weight)
        };
        let text = "Make it easier to scan default features";
        assert_eq!(weight(text, "make"), Some(LEAD_VERB_WEIGHT));
        assert_eq!(weight(text, "features"), Some(1.0));
        // After an area prefix, the verb is the first word past it.
        assert_eq!(
            weight("routing: Fix the fallback", "fix"),
            Some(LEAD_VERB_WEIGHT)
        );
        assert_eq!(weight("routing: Fix the fallback", "routing"), Some(1.0));
        // Elsewhere the same word is an ordinary word ...
        assert_eq!(weight("Routers should make services", "make"), Some(1.0));
        assert_eq!(
            weight("Fix this.\n\nMake the router work", "make"),
            Some(1.0)
        );
        // ... and in code it names code.
        assert_eq!(
            weight("`make` the service", "make"),
            Some(IDENTIFIER_WEIGHT)
        );
        assert_eq!(weight("Handler is broken", "handler"), Some(1.0));
    }

    #[test]
    fn a_query_of_function_words_alone_searches_them() {
        // `aptix search Either`, "what does once do": the function words are what the
        // question is about (a type, a method), not noise around it.
        assert_eq!(terms("once"), ["once"]);
        assert_eq!(terms("Either"), ["either"]);
        assert!(terms("what does once do").contains(&"once".to_owned()));
        // Beside other words they are noise, even capitalised: in prose about Rust,
        // `Some` and `None` name nothing in particular.
        assert!(!terms("returns Some when the parser finds a header").contains(&"some".to_owned()));
    }

    #[test]
    fn stop_words_are_sorted_for_the_binary_search() {
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
        assert!(ACTION_VERBS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn urls_hashes_and_issue_references_do_not_reach_the_query() {
        let found = terms(
            "Fix the router (#3051), see https://github.com/tokio-rs/axum/pull/3051 and \
             commit 8e4d01dc4f, also GH-12, tokio-rs/axum#99 [2] and cc @davidpdrsn",
        );
        assert_eq!(found, ["fix", "router", "see", "commit", "cc"]);
        for noise in [
            "github",
            "3051",
            "8e4d01dc4f",
            "12",
            "99",
            "2",
            "davidpdrsn",
            "pull",
        ] {
            assert!(!found.iter().any(|t| t == noise), "{noise} in {found:?}");
        }
    }

    #[test]
    fn shell_transcripts_are_dropped_and_code_blocks_kept() {
        let text = "Handler panics on empty body\n\n```console\n$ cargo run --example hello\nthread 'main' panicked at src/weird_spot.rs\n```\n\n$ curl localhost:3000/upload\n\n```rust\nlet body = Bytes::new();\n```\n";
        let found = terms(text);
        assert!(found.contains(&"handler".to_owned()), "{found:?}");
        assert!(found.contains(&"bytes".to_owned()), "{found:?}");
        for noise in [
            "cargo",
            "example",
            "panicked",
            "weirdspot",
            "curl",
            "localhost",
        ] {
            assert!(!found.iter().any(|t| t == noise), "{noise} in {found:?}");
        }
        // A block whose lines start at a prompt is a transcript whatever its tag.
        let tagged = terms("Bug\n```rust\n$ cargo build\n```\n");
        assert_eq!(tagged, ["bug"]);
    }

    #[test]
    fn trailers_are_dropped() {
        assert_eq!(
            terms("Reject empty paths\n\nSigned-off-by: Jane Doe <jane@example.com>"),
            ["reject", "empty", "paths", "path"]
        );
    }

    #[test]
    fn identifiers_weigh_more_than_prose() {
        let analysis = analyse("Use `serde_path_to_error` in Query so parseBody reports the field");
        let weight = |term: &str| {
            analysis
                .terms
                .iter()
                .find(|t| t.term == term)
                .map(|t| t.weight)
        };
        assert_eq!(weight("serdepathtoerror"), Some(IDENTIFIER_WEIGHT));
        assert_eq!(weight("parsebody"), Some(IDENTIFIER_WEIGHT));
        assert_eq!(weight("path"), Some(1.0));
        assert_eq!(weight("field"), Some(1.0));
        // "Query" is a capitalised prose word, not CamelCase; "so" and "the" are stop words.
        assert_eq!(weight("query"), Some(1.0));
        assert_eq!(weight("so"), None);
        assert_eq!(weight("the"), None);
    }

    #[test]
    fn identifier_shapes() {
        for word in [
            "snake_case",
            "CamelCase",
            "camelCase",
            "a::b",
            "src/lib.rs",
            "body()",
            "file.rs",
        ] {
            assert!(is_identifier(word), "{word}");
        }
        for word in ["Router", "HTTP", "end.", "e.g", "3.14", "x"] {
            assert!(!is_identifier(word), "{word}");
        }
    }

    #[test]
    fn questions_about_tests_and_docs_are_noticed() {
        assert_eq!(
            analyse("add a test for the router").wanted_kinds,
            [FileKind::Test]
        );
        assert_eq!(
            analyse("Fix docs of Router::nest and the example").wanted_kinds,
            [FileKind::Example, FileKind::Docs]
        );
        assert!(analyse("Fix Router::nest").wanted_kinds.is_empty());
    }

    #[test]
    fn subject_areas_name_places_and_labels_do_not() {
        assert_eq!(area_prefix("routing: omit the Allow header"), "routing");
        assert_eq!(
            area_prefix("axum-core/macros: avoid double calls"),
            "axum-core/macros"
        );
        assert_eq!(area_prefix("fix(sse): skip chars"), "fix(sse)");
        for subject in [
            "fix: skip chars",
            "Note: the router panics",
            "error[E0277]: the trait bound is not satisfied",
            "Make the router nest at the root: it panics now",
            "No colon here",
        ] {
            assert_eq!(area_prefix(subject), "", "{subject}");
        }
        let analysis = analyse("routing: omit the header");
        let routing = analysis.terms.iter().find(|t| t.term == "routing").unwrap();
        assert!(routing.path_like);
        let header = analysis.terms.iter().find(|t| t.term == "header").unwrap();
        assert!(!header.path_like);
    }

    #[test]
    fn repeated_terms_weigh_more() {
        let analysis = analyse("router router router nest");
        assert_eq!(analysis.terms[0].term, "router");
        assert!(analysis.terms[0].weight > analysis.terms[1].weight);
    }
}
