//! The AGN-002 language tag of a workspace file, from its name.
//!
//! The tag is what the `Language:` line shows and what follows the opening code fence,
//! so it uses the names Markdown highlighters (and therefore models, which learnt from
//! Markdown) know best: `csharp` rather than `cs`, `typescript` rather than `ts`.
//!
//! The lookup is by well-known file name first (`Dockerfile`, `Makefile`,
//! `CMakeLists.txt`, `Cargo.lock`, ...), then by extension, both ASCII case-insensitive
//! so `README.MD` and `Program.CS` are recognised. Anything else is `text`. It is a
//! plain table scan: no allocation, and the index calls it once per file, so a hash map
//! would buy nothing measurable.

/// The tag for files this table does not know.
pub(crate) const UNKNOWN_LANGUAGE: &str = "text";

/// Whole file names that say more than their extension (or have none).
///
/// `CMakeLists.txt` would otherwise be `text`, `Cargo.lock` would be unknown, and
/// `Dockerfile`/`Makefile` have no extension at all.
const FILE_NAMES: &[(&str, &str)] = &[
    ("dockerfile", "dockerfile"),
    ("containerfile", "dockerfile"),
    ("makefile", "makefile"),
    ("gnumakefile", "makefile"),
    ("cmakelists.txt", "cmake"),
    ("cargo.lock", "toml"),
    ("pipfile", "toml"),
    ("gemfile", "ruby"),
    ("rakefile", "ruby"),
    ("jenkinsfile", "groovy"),
    ("justfile", "just"),
    (".bashrc", "bash"),
    (".bash_profile", "bash"),
    (".profile", "bash"),
    (".zshrc", "zsh"),
    (".gitignore", "gitignore"),
    (".dockerignore", "gitignore"),
    (".editorconfig", "ini"),
];

/// Extensions (without the dot, lower case) and their tags.
///
/// Shell scripts are `bash`: nearly every `.sh` file in a repository is run by bash
/// (`#!/usr/bin/env bash`, CI steps), `bash` is the tag GitHub Markdown and the code
/// blocks models learnt from use most for shell, and highlighters treat `sh` as an alias
/// of it anyway. `.h` is `c`: a header is valid C far more often than it uses C++ only
/// syntax, and GitHub's linguist defaults to C for it too.
const EXTENSIONS: &[(&str, &str)] = &[
    // The AGN-002 examples.
    ("cs", "csharp"),
    ("csx", "csharp"),
    ("ts", "typescript"),
    ("mts", "typescript"),
    ("cts", "typescript"),
    ("tsx", "tsx"),
    ("scss", "scss"),
    ("json", "json"),
    ("jsonc", "json"),
    ("xml", "xml"),
    // .NET project and UI files are XML.
    ("csproj", "xml"),
    ("fsproj", "xml"),
    ("vbproj", "xml"),
    ("props", "xml"),
    ("targets", "xml"),
    ("xaml", "xml"),
    ("resx", "xml"),
    ("xsd", "xml"),
    ("xslt", "xml"),
    ("svg", "xml"),
    ("plist", "xml"),
    // Systems and application languages.
    ("rs", "rust"),
    ("py", "python"),
    ("pyi", "python"),
    ("go", "go"),
    ("java", "java"),
    ("kt", "kotlin"),
    ("kts", "kotlin"),
    ("scala", "scala"),
    ("groovy", "groovy"),
    ("gradle", "groovy"),
    ("c", "c"),
    ("h", "c"),
    ("cc", "cpp"),
    ("cpp", "cpp"),
    ("cxx", "cpp"),
    ("c++", "cpp"),
    ("hh", "cpp"),
    ("hpp", "cpp"),
    ("hxx", "cpp"),
    ("h++", "cpp"),
    ("ipp", "cpp"),
    ("m", "objectivec"),
    ("mm", "objectivec"),
    ("swift", "swift"),
    ("fs", "fsharp"),
    ("fsx", "fsharp"),
    ("vb", "vbnet"),
    ("rb", "ruby"),
    ("php", "php"),
    ("lua", "lua"),
    ("dart", "dart"),
    ("zig", "zig"),
    ("ex", "elixir"),
    ("exs", "elixir"),
    ("erl", "erlang"),
    ("hs", "haskell"),
    ("ml", "ocaml"),
    ("mli", "ocaml"),
    ("clj", "clojure"),
    ("r", "r"),
    ("pl", "perl"),
    ("pm", "perl"),
    // The web.
    ("js", "javascript"),
    ("mjs", "javascript"),
    ("cjs", "javascript"),
    ("jsx", "jsx"),
    ("html", "html"),
    ("htm", "html"),
    ("css", "css"),
    ("sass", "sass"),
    ("less", "less"),
    ("vue", "vue"),
    ("svelte", "svelte"),
    ("graphql", "graphql"),
    ("gql", "graphql"),
    // Documents and data.
    ("md", "markdown"),
    ("markdown", "markdown"),
    ("mdx", "mdx"),
    ("rst", "rst"),
    ("yaml", "yaml"),
    ("yml", "yaml"),
    ("toml", "toml"),
    ("ini", "ini"),
    ("cfg", "ini"),
    ("csv", "csv"),
    ("proto", "protobuf"),
    ("sql", "sql"),
    // Build files and scripts.
    ("sh", "bash"),
    ("bash", "bash"),
    ("zsh", "zsh"),
    ("fish", "fish"),
    ("ps1", "powershell"),
    ("psm1", "powershell"),
    ("bat", "batch"),
    ("cmd", "batch"),
    ("dockerfile", "dockerfile"),
    ("mk", "makefile"),
    ("mak", "makefile"),
    ("cmake", "cmake"),
    ("tf", "hcl"),
    ("hcl", "hcl"),
    ("nix", "nix"),
    ("txt", "text"),
];

/// The AGN-002 language tag for a workspace path: by well-known file name, then by
/// extension (both ASCII case-insensitive), else `text`.
///
/// Both `/` and `\` separate directories, so a Windows path works too. A leading dot
/// does not start an extension (`.gitignore` is a name, `.env` is unknown), and
/// `Dockerfile.dev` counts as a Dockerfile.
///
/// ```
/// use aptix_rag::language_for_path;
///
/// assert_eq!(language_for_path("Billing/Managers/InvoiceManager.cs"), "csharp");
/// assert_eq!(language_for_path("web/app.TSX"), "tsx");
/// assert_eq!(language_for_path("build/Dockerfile"), "dockerfile");
/// assert_eq!(language_for_path("notes"), "text");
/// ```
pub fn language_for_path(path: &str) -> &'static str {
    let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
    if let Some(language) = lookup(FILE_NAMES, name) {
        return language;
    }
    // `Dockerfile.dev`, `Dockerfile.prod`: the convention puts the variant after a dot.
    if let Some((stem, _)) = name.split_once('.')
        && stem.eq_ignore_ascii_case("dockerfile")
    {
        return "dockerfile";
    }
    match name.rsplit_once('.') {
        // An empty stem is a dotfile (`.env`), not an extension.
        Some((stem, extension)) if !stem.is_empty() => {
            lookup(EXTENSIONS, extension).unwrap_or(UNKNOWN_LANGUAGE)
        }
        _ => UNKNOWN_LANGUAGE,
    }
}

fn lookup(table: &[(&str, &'static str)], key: &str) -> Option<&'static str> {
    table
        .iter()
        .find(|(candidate, _)| candidate.eq_ignore_ascii_case(key))
        .map(|&(_, language)| language)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One row per table entry the issue names, plus the edge cases of the lookup.
    const CASES: &[(&str, &str)] = &[
        // AGN-002's examples.
        ("Billing/Managers/InvoiceManager.cs", "csharp"),
        ("src/app/invoice.service.ts", "typescript"),
        ("src/types/index.d.ts", "typescript"),
        ("src/styles/site.scss", "scss"),
        ("package.json", "json"),
        ("Billing/App.config.xml", "xml"),
        ("Billing/Billing.csproj", "xml"),
        // The languages the issue lists.
        ("crates/aptix-rag/src/lib.rs", "rust"),
        ("tools/gen.py", "python"),
        ("cmd/server/main.go", "go"),
        ("src/main/java/App.java", "java"),
        ("vendor/zlib.c", "c"),
        ("vendor/zlib.h", "c"),
        ("engine/world.cpp", "cpp"),
        ("engine/world.cc", "cpp"),
        ("engine/world.hpp", "cpp"),
        ("web/main.js", "javascript"),
        ("web/esm.mjs", "javascript"),
        ("web/App.tsx", "tsx"),
        ("web/App.jsx", "jsx"),
        ("README.md", "markdown"),
        (".github/workflows/ci.yml", "yaml"),
        ("deploy/values.yaml", "yaml"),
        ("Cargo.toml", "toml"),
        ("db/migrations/001_init.sql", "sql"),
        ("scripts/release.sh", "bash"),
        ("scripts/setup.bash", "bash"),
        ("web/index.html", "html"),
        ("web/index.htm", "html"),
        ("web/site.css", "css"),
        // Well-known file names.
        ("Dockerfile", "dockerfile"),
        ("docker/Dockerfile.dev", "dockerfile"),
        ("docker/api.dockerfile", "dockerfile"),
        ("Makefile", "makefile"),
        ("makefile", "makefile"),
        ("CMakeLists.txt", "cmake"),
        ("Cargo.lock", "toml"),
        (".gitignore", "gitignore"),
        // Case-insensitive extensions and names.
        ("Program.CS", "csharp"),
        ("README.MD", "markdown"),
        ("App.Tsx", "tsx"),
        ("DOCKERFILE", "dockerfile"),
        ("cmakelists.TXT", "cmake"),
        // Windows separators.
        (r"src\Billing\Invoice.cs", "csharp"),
        // Unknown: no extension, dotfile, unknown extension, trailing dot, empty.
        ("LICENSE", "text"),
        (".env", "text"),
        ("image.png", "text"),
        ("weird.", "text"),
        ("", "text"),
        ("dir.rs/", "text"),
        // A directory with a dot does not lend its extension to the file.
        ("my.app/LICENSE", "text"),
        // Non-ASCII names are looked up byte for byte and never panic.
        ("docs/résumé.md", "markdown"),
        ("données.ÿ", "text"),
    ];

    #[test]
    fn language_table() {
        for &(path, expected) in CASES {
            assert_eq!(language_for_path(path), expected, "path {path:?}");
        }
    }

    #[test]
    fn tables_are_lower_case_and_unique() {
        // A duplicate key would make the later row dead; an upper-case key would make
        // the intent unclear, since lookups ignore case anyway.
        for table in [FILE_NAMES, EXTENSIONS] {
            for (index, (key, language)) in table.iter().enumerate() {
                assert_eq!(*key, key.to_ascii_lowercase(), "key {key:?}");
                assert!(!language.is_empty() && !language.contains(char::is_whitespace));
                assert!(
                    table[index + 1..].iter().all(|(other, _)| other != key),
                    "duplicate key {key:?}"
                );
            }
        }
    }

    #[test]
    fn every_extension_resolves_through_a_path() {
        for &(extension, language) in EXTENSIONS {
            assert_eq!(
                language_for_path(&format!("dir/file.{extension}")),
                language
            );
            let upper = format!("DIR/FILE.{}", extension.to_ascii_uppercase());
            assert_eq!(language_for_path(&upper), language);
        }
    }
}
