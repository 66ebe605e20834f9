//! File kinds: what role a file plays in its workspace, decided from its path alone.
//!
//! Retrieval ranks a workspace's *source* first. Other files match questions too, often
//! better than the code they are about: a changelog is written in exactly the words of
//! change requests, a lockfile's hashes match the hex in a pasted commit id, and tests
//! repeat every name of the code they test. Each file is therefore classified once, at
//! index time, and the kind is stored on its chunks: lockfiles, generated and vendored
//! files are not indexed by default, and the rest are weighted by kind when ranking.
//!
//! The rules look only at the path (folder names, file name, extension), so they are
//! cheap, predictable and the same on every machine. They are checked in this order; the
//! first that matches decides:
//!
//! | kind | rule (case-insensitive) |
//! |---|---|
//! | `lockfile` | a known lockfile name (`Cargo.lock`, `package-lock.json`, `yarn.lock`, `uv.lock`, `go.sum`, ...) or any `*.lock` |
//! | `generated` | `*.min.js`, `*.min.css`, `*.map`, protobuf and gRPC outputs (`*_pb2.py`, `*.pb.go`, ...), `*.generated.*`, `*_generated.*`, `*.g.dart`, `*.designer.cs`, a folder `generated` or `__generated__` |
//! | `vendored` | a folder `vendor`, `vendored`, `_vendor`, `_vendored`, `third_party`, `third-party`, `thirdparty` or `bower_components` |
//! | `changelog` | a file named `CHANGELOG`, `CHANGES`, `HISTORY`, `NEWS`, `RELEASES` or `RELEASE_NOTES` (any extension), or anything in `changelog.d`, `changes.d`, `newsfragments` or `changelogs` |
//! | `test_data` | a folder `testdata`, `test_data`, `test-data`, `fixtures`, `__fixtures__`, `__snapshots__`, `snapshots` or `golden`; `*.snap`; a non-code file under a test folder |
//! | `test` | a folder `test`, `tests`, `__tests__`, `spec`, `specs`, `e2e` or `testing`; a test file name (`test_*.py`, `*_test.py`, `*_test.go`, `*.test.ts`, `*.spec.js`, `*Test.java`, `*Tests.cs`, `*_spec.rb`, `conftest.py`, `tests.rs`, ...) |
//! | `example` | a folder `examples`, `example`, `samples`, `sample`, `demo`, `demos`, `benches`, `bench`, `benchmarks` or `fuzz` |
//! | `docs` | a documentation extension (`md`, `rst`, `txt`, `adoc`, ...), a `README`, `LICENSE`, `CONTRIBUTING`, ... file, or a folder `docs`, `doc` or `documentation` |
//! | `config` | a configuration extension (`toml`, `yaml`, `json`, `ini`, `cfg`, `xml`, ...) or name (`Makefile`, `Dockerfile`, `CMakeLists.txt`, `requirements.txt`, ...) |
//! | `source` | everything else |

use std::fmt;

/// The role of a file in its workspace, from [`classify`]; stored on every chunk as the
/// `kind` metadata and usable in scope conditions (`kind == source`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum FileKind {
    /// Code of the project itself.
    Source,
    /// Test code.
    Test,
    /// Inputs and expected outputs of tests: fixtures, snapshots, golden files.
    TestData,
    /// Examples, samples, demos, benchmarks and fuzz targets.
    Example,
    /// Prose: READMEs, guides, licences, documentation folders.
    Docs,
    /// Release notes and change logs.
    Changelog,
    /// Dependency lockfiles (not indexed by default).
    Lockfile,
    /// Generated or minified files (not indexed by default).
    Generated,
    /// Copies of other projects' code (not indexed by default).
    Vendored,
    /// Build, package and tool configuration.
    Config,
}

impl FileKind {
    /// Every kind, in declaration order.
    pub const ALL: [FileKind; 10] = [
        FileKind::Source,
        FileKind::Test,
        FileKind::TestData,
        FileKind::Example,
        FileKind::Docs,
        FileKind::Changelog,
        FileKind::Lockfile,
        FileKind::Generated,
        FileKind::Vendored,
        FileKind::Config,
    ];

    /// The kinds a default [`IndexConfig`](crate::IndexConfig) does not index.
    pub const SKIPPED_BY_DEFAULT: [FileKind; 3] =
        [FileKind::Lockfile, FileKind::Generated, FileKind::Vendored];

    /// The stored spelling: `source`, `test`, `test_data`, `example`, `docs`,
    /// `changelog`, `lockfile`, `generated`, `vendored`, `config`.
    pub fn as_str(self) -> &'static str {
        match self {
            FileKind::Source => "source",
            FileKind::Test => "test",
            FileKind::TestData => "test_data",
            FileKind::Example => "example",
            FileKind::Docs => "docs",
            FileKind::Changelog => "changelog",
            FileKind::Lockfile => "lockfile",
            FileKind::Generated => "generated",
            FileKind::Vendored => "vendored",
            FileKind::Config => "config",
        }
    }

    /// Parses [`as_str`](Self::as_str)'s spelling.
    pub fn parse(text: &str) -> Option<FileKind> {
        FileKind::ALL.into_iter().find(|kind| kind.as_str() == text)
    }

    /// A small number for the fast field that ranking reads.
    pub(crate) fn code(self) -> u64 {
        FileKind::ALL
            .iter()
            .position(|kind| *kind == self)
            .map_or(0, |position| position as u64)
    }
}

impl fmt::Display for FileKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

const LOCKFILE_NAMES: &[&str] = &[
    "cargo.lock",
    "package-lock.json",
    "npm-shrinkwrap.json",
    "yarn.lock",
    "pnpm-lock.yaml",
    "bun.lock",
    "bun.lockb",
    "poetry.lock",
    "uv.lock",
    "pipfile.lock",
    "pdm.lock",
    "gemfile.lock",
    "composer.lock",
    "go.sum",
    "go.work.sum",
    "flake.lock",
    "mix.lock",
    "pubspec.lock",
    "podfile.lock",
    "package.resolved",
    "packages.lock.json",
    "gradle.lockfile",
    "deno.lock",
    "conda-lock.yml",
];

const GENERATED_SUFFIXES: &[&str] = &[
    ".min.js",
    ".min.mjs",
    ".min.css",
    ".js.map",
    ".css.map",
    "_pb2.py",
    "_pb2.pyi",
    "_pb2_grpc.py",
    ".pb.go",
    ".pb.cc",
    ".pb.h",
    "_grpc.pb.go",
    ".g.dart",
    ".freezed.dart",
    ".designer.cs",
    ".g.cs",
    ".g.i.cs",
];

const GENERATED_DIRS: &[&str] = &["generated", "__generated__"];

const VENDORED_DIRS: &[&str] = &[
    "vendor",
    "vendored",
    // Python's convention for a package's bundled copies (`pip/_vendor`,
    // `setuptools/_vendor`).
    "_vendor",
    "_vendored",
    "third_party",
    "third-party",
    "thirdparty",
    "bower_components",
];

/// File stems (the name before its first dot) of change logs.
const CHANGELOG_STEMS: &[&str] = &[
    "changelog",
    "changes",
    "history",
    "news",
    "releases",
    "release_notes",
    "release-notes",
    "releasenotes",
];

const CHANGELOG_DIRS: &[&str] = &["changelog.d", "changes.d", "newsfragments", "changelogs"];

const TEST_DATA_DIRS: &[&str] = &[
    "testdata",
    "test_data",
    "test-data",
    "fixtures",
    "fixture",
    "__fixtures__",
    "__snapshots__",
    "snapshots",
    "golden",
];

const TEST_DIRS: &[&str] = &[
    "test",
    "tests",
    "__tests__",
    "__mocks__",
    "spec",
    "specs",
    "e2e",
    "testing",
];

const EXAMPLE_DIRS: &[&str] = &[
    "examples",
    "example",
    "samples",
    "sample",
    "demo",
    "demos",
    "benches",
    "bench",
    "benchmarks",
    "benchmark",
    "fuzz",
];

const DOCS_DIRS: &[&str] = &["docs", "doc", "documentation"];

const DOCS_EXTENSIONS: &[&str] = &[
    "md", "markdown", "mdx", "rst", "txt", "adoc", "asciidoc", "org", "rdoc", "pod", "textile",
];

/// File stems of prose files that often have no extension.
const DOCS_STEMS: &[&str] = &[
    "readme",
    "license",
    "licence",
    "copying",
    "notice",
    "authors",
    "contributors",
    "contributing",
    "code_of_conduct",
    "security",
    "support",
    "maintainers",
    "governance",
];

const CONFIG_EXTENSIONS: &[&str] = &[
    "toml",
    "yaml",
    "yml",
    "json",
    "jsonc",
    "json5",
    "ini",
    "cfg",
    "conf",
    "config",
    "properties",
    "xml",
    "plist",
    "csproj",
    "fsproj",
    "vcxproj",
    "sln",
    "props",
    "targets",
    "gradle",
    "editorconfig",
    "env",
];

const CONFIG_NAMES: &[&str] = &[
    "makefile",
    "gnumakefile",
    "dockerfile",
    "containerfile",
    "cmakelists.txt",
    "requirements.txt",
    "constraints.txt",
    "procfile",
    "justfile",
    "vagrantfile",
    "rakefile",
    "gemfile",
    "pipfile",
    "brewfile",
    "tox.ini",
    "setup.cfg",
    "manifest.in",
    "build.gradle.kts",
    "settings.gradle.kts",
];

/// Extensions of code: a file with one of these under a test folder is a test, any other
/// file there is test data.
const CODE_EXTENSIONS: &[&str] = &[
    "rs", "py", "pyi", "js", "jsx", "mjs", "cjs", "ts", "tsx", "mts", "cts", "go", "java", "kt",
    "kts", "scala", "cs", "fs", "vb", "c", "h", "cc", "cpp", "cxx", "hpp", "hh", "m", "mm",
    "swift", "rb", "php", "pl", "pm", "lua", "ex", "exs", "erl", "hs", "ml", "mli", "clj", "cljs",
    "dart", "r", "jl", "zig", "nim", "sh", "bash", "zsh", "ps1", "groovy", "vue", "svelte", "sql",
];

/// Whether `extension` (lower case, no dot) is one of code, prose or configuration:
/// `sse.rs` in a question names a file, `e.g` does not.
pub(crate) fn is_known_extension(extension: &str) -> bool {
    CODE_EXTENSIONS.contains(&extension)
        || DOCS_EXTENSIONS.contains(&extension)
        || CONFIG_EXTENSIONS.contains(&extension)
}

/// The kind of the file at `path` (workspace-relative, `/`-separated).
pub fn classify(path: &str) -> FileKind {
    let lower = path.to_ascii_lowercase();
    let mut components: Vec<&str> = lower.split('/').filter(|c| !c.is_empty()).collect();
    let name = components.pop().unwrap_or_default();
    let folders = components;
    let in_folder = |names: &[&str]| folders.iter().any(|folder| names.contains(folder));
    let (stem, extension) = match name.split_once('.') {
        Some((stem, _)) => (stem, name.rsplit_once('.').map_or("", |(_, ext)| ext)),
        None => (name, ""),
    };

    if LOCKFILE_NAMES.contains(&name) || extension == "lock" || extension == "lockb" {
        return FileKind::Lockfile;
    }
    if GENERATED_SUFFIXES
        .iter()
        .any(|suffix| name.ends_with(suffix))
        || name.contains(".generated.")
        || stem.ends_with("_generated")
        || in_folder(GENERATED_DIRS)
    {
        return FileKind::Generated;
    }
    if in_folder(VENDORED_DIRS) {
        return FileKind::Vendored;
    }
    // A prose name only counts with a prose extension or none: `src/history.py` is code.
    let prose_name = |stems: &[&str]| {
        (extension.is_empty() || DOCS_EXTENSIONS.contains(&extension))
            && stems.iter().any(|wanted| {
                stem == *wanted
                    || stem
                        .strip_prefix(wanted)
                        .is_some_and(|rest| rest.starts_with(['-', '_']))
            })
    };
    if prose_name(CHANGELOG_STEMS) || in_folder(CHANGELOG_DIRS) {
        return FileKind::Changelog;
    }
    let is_code = CODE_EXTENSIONS.contains(&extension);
    let in_tests = in_folder(TEST_DIRS);
    if in_folder(TEST_DATA_DIRS) || extension == "snap" || (in_tests && !is_code) {
        return FileKind::TestData;
    }
    if in_tests || is_test_file_name(name, stem, extension) {
        return FileKind::Test;
    }
    if in_folder(EXAMPLE_DIRS) {
        return FileKind::Example;
    }
    if CONFIG_NAMES.contains(&name) {
        return FileKind::Config;
    }
    if DOCS_EXTENSIONS.contains(&extension) || prose_name(DOCS_STEMS) {
        return FileKind::Docs;
    }
    if in_folder(DOCS_DIRS) {
        return FileKind::Docs;
    }
    if CONFIG_EXTENSIONS.contains(&extension) {
        return FileKind::Config;
    }
    FileKind::Source
}

/// Test file names of the common ecosystems (`name`, `stem` and `extension` lower-case).
fn is_test_file_name(name: &str, stem: &str, extension: &str) -> bool {
    match extension {
        "py" => stem.starts_with("test_") || stem.ends_with("_test") || stem == "conftest",
        "go" => stem.ends_with("_test"),
        "rs" => stem == "tests" || stem == "test" || stem.ends_with("_tests"),
        "rb" => stem.ends_with("_spec") || stem.ends_with("_test"),
        "java" | "kt" | "scala" | "cs" | "swift" | "php" => {
            // `FooTest.java`, `FooTests.cs`, `FooSpec.scala` (lower-cased here).
            stem.len() > 4 && (stem.ends_with("test") || stem.ends_with("tests"))
                || stem.len() > 4 && stem.ends_with("spec") && extension == "scala"
        }
        "js" | "jsx" | "mjs" | "cjs" | "ts" | "tsx" | "mts" | "cts" => {
            // `foo.test.ts`, `foo.spec.js`, `foo-test.js`, `foo_test.ts`.
            let inner: Vec<&str> = name.split('.').collect();
            inner.len() > 2
                && inner[1..inner.len() - 1]
                    .iter()
                    .any(|part| *part == "test" || *part == "spec" || *part == "e2e")
                || stem.ends_with("-test")
                || stem.ends_with("_test")
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(kind: FileKind, paths: &[&str]) {
        for path in paths {
            assert_eq!(classify(path), kind, "{path}");
        }
    }

    #[test]
    fn lockfiles() {
        check(
            FileKind::Lockfile,
            &[
                "Cargo.lock",
                "web/package-lock.json",
                "yarn.lock",
                "pnpm-lock.yaml",
                "uv.lock",
                "poetry.lock",
                "go.sum",
                "sub/Gemfile.lock",
                "flake.lock",
                "anything.lock",
            ],
        );
    }

    #[test]
    fn generated_files() {
        check(
            FileKind::Generated,
            &[
                "static/app.min.js",
                "static/site.min.css",
                "static/app.js.map",
                "proto/api_pb2.py",
                "proto/api_pb2_grpc.py",
                "api/v1/service.pb.go",
                "lib/model.g.dart",
                "Forms/Main.Designer.cs",
                "src/schema.generated.ts",
                "src/parser_generated.rs",
                "src/__generated__/types.ts",
            ],
        );
    }

    #[test]
    fn vendored_files() {
        check(
            FileKind::Vendored,
            &[
                "vendor/github.com/x/y.go",
                "third_party/zlib/inflate.c",
                "src/third-party/lib.js",
                "pip/_vendor/urllib3/util/retry.py",
                "setuptools/_vendor/packaging/version.py",
            ],
        );
    }

    #[test]
    fn changelogs() {
        check(
            FileKind::Changelog,
            &[
                "CHANGELOG.md",
                "axum/CHANGELOG.md",
                "CHANGES.rst",
                "HISTORY.md",
                "NEWS",
                "RELEASES.md",
                "changelog.d/123.bugfix.md",
                "docs/newsfragments/42.feature",
            ],
        );
    }

    #[test]
    fn tests_and_test_data() {
        check(
            FileKind::Test,
            &[
                "tests/integration.rs",
                "axum/src/routing/tests/mod.rs",
                "src/tests.rs",
                "pkg/test_parser.py",
                "pkg/parser_test.py",
                "conftest.py",
                "server/handler_test.go",
                "src/app.test.ts",
                "src/app.spec.js",
                "src/__tests__/app.jsx",
                "src/test/java/com/x/ParserTest.java",
                "Billing.Tests/InvoiceManagerTests.cs",
                "spec/models/user_spec.rb",
            ],
        );
        check(
            FileKind::TestData,
            &[
                "tests/fixtures/input.py",
                "pkg/testdata/golden.txt",
                "src/__snapshots__/app.test.ts.snap",
                "tests/ui/fail/missing.stderr",
                "tests/data.json",
            ],
        );
    }

    #[test]
    fn examples_docs_and_config() {
        check(
            FileKind::Example,
            &[
                "examples/hello-world/src/main.rs",
                "benches/bench.rs",
                "fuzz/fuzz_targets/parse.rs",
            ],
        );
        check(
            FileKind::Docs,
            &[
                "README.md",
                "docs/guide.rst",
                "docs/conf.py",
                "LICENSE",
                "LICENSE-MIT",
                "axum/src/docs/routing/route.md",
                "notes.txt",
            ],
        );
        check(
            FileKind::Config,
            &[
                "Cargo.toml",
                "package.json",
                "pyproject.toml",
                ".github/workflows/ci.yml",
                "Makefile",
                "Dockerfile",
                "CMakeLists.txt",
                "requirements.txt",
            ],
        );
    }

    #[test]
    fn source_is_the_rest() {
        check(
            FileKind::Source,
            &[
                "src/lib.rs",
                "axum/src/routing/mod.rs",
                "src/bin/tool.rs",
                "pkg/parser.py",
                "src/components/Button.tsx",
                "cmd/server/main.go",
                "src/main/java/com/x/Parser.java",
                "src/testing_utils_are_not_a_folder.rs",
                "src/latest.rs",
                "src/contest.py",
                "src/history.py",
                "app/news.rs",
                "src/security.go",
            ],
        );
    }

    #[test]
    fn kinds_round_trip_through_their_spelling_and_code() {
        for kind in FileKind::ALL {
            assert_eq!(FileKind::parse(kind.as_str()), Some(kind));
            assert_eq!(FileKind::ALL[kind.code() as usize], kind);
        }
        assert_eq!(FileKind::parse("sauce"), None);
    }
}
