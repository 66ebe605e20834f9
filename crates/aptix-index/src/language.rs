//! Which grammar parses a file (the AGN-002 language tag comes from
//! `aptix_rag::language_for_path`).

/// A tree-sitter grammar this crate knows; whether it is compiled in depends on the
/// `lang-*` cargo features.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Grammar {
    Rust,
    Python,
    TypeScript,
    Tsx,
    JavaScript,
    Go,
    Java,
    CSharp,
}

impl Grammar {
    /// The grammar for a file, by extension; `None` for files chunked by line windows.
    pub(crate) fn for_path(path: &str) -> Option<Grammar> {
        let extension = extension(path)?.to_ascii_lowercase();
        let grammar = match extension.as_str() {
            "rs" => Grammar::Rust,
            "py" | "pyi" => Grammar::Python,
            "ts" | "mts" | "cts" => Grammar::TypeScript,
            "tsx" => Grammar::Tsx,
            "js" | "mjs" | "cjs" | "jsx" => Grammar::JavaScript,
            "go" => Grammar::Go,
            "java" => Grammar::Java,
            "cs" => Grammar::CSharp,
            _ => return None,
        };
        grammar.is_enabled().then_some(grammar)
    }

    /// Whether the grammar's cargo feature is on.
    pub(crate) fn is_enabled(self) -> bool {
        match self {
            Grammar::Rust => cfg!(feature = "lang-rust"),
            Grammar::Python => cfg!(feature = "lang-python"),
            Grammar::TypeScript | Grammar::Tsx => cfg!(feature = "lang-typescript"),
            Grammar::JavaScript => cfg!(feature = "lang-javascript"),
            Grammar::Go => cfg!(feature = "lang-go"),
            Grammar::Java => cfg!(feature = "lang-java"),
            Grammar::CSharp => cfg!(feature = "lang-csharp"),
        }
    }

    /// The parser's language, when compiled in.
    #[cfg(feature = "tree-sitter")]
    pub(crate) fn tree_sitter(self) -> Option<tree_sitter::Language> {
        let language: tree_sitter::Language = match self {
            #[cfg(feature = "lang-rust")]
            Grammar::Rust => tree_sitter_rust::LANGUAGE.into(),
            #[cfg(feature = "lang-python")]
            Grammar::Python => tree_sitter_python::LANGUAGE.into(),
            #[cfg(feature = "lang-typescript")]
            Grammar::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            #[cfg(feature = "lang-typescript")]
            Grammar::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
            #[cfg(feature = "lang-javascript")]
            Grammar::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
            #[cfg(feature = "lang-go")]
            Grammar::Go => tree_sitter_go::LANGUAGE.into(),
            #[cfg(feature = "lang-java")]
            Grammar::Java => tree_sitter_java::LANGUAGE.into(),
            #[cfg(feature = "lang-csharp")]
            Grammar::CSharp => tree_sitter_c_sharp::LANGUAGE.into(),
            #[allow(unreachable_patterns)]
            _ => return None,
        };
        Some(language)
    }
}

/// The grammars compiled in, for the index fingerprint.
pub(crate) fn enabled_grammars() -> Vec<Grammar> {
    [
        Grammar::Rust,
        Grammar::Python,
        Grammar::TypeScript,
        Grammar::Tsx,
        Grammar::JavaScript,
        Grammar::Go,
        Grammar::Java,
        Grammar::CSharp,
    ]
    .into_iter()
    .filter(|g| g.is_enabled())
    .collect()
}

/// The file's extension without the dot, as written; `None` without one.
pub(crate) fn extension(path: &str) -> Option<&str> {
    let name = path.rsplit('/').next().unwrap_or(path);
    let (stem, extension) = name.rsplit_once('.')?;
    (!stem.is_empty() && !extension.is_empty()).then_some(extension)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extensions_ignore_dotfiles_and_folders() {
        assert_eq!(extension("src/lib.rs"), Some("rs"));
        assert_eq!(extension("a.b/Makefile"), None);
        assert_eq!(extension(".gitignore"), None);
        assert_eq!(extension("x/archive.tar.gz"), Some("gz"));
    }
}
