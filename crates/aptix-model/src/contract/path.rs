//! Workspace-relative paths, the only paths the contract accepts.
//!
//! The rules and the normalisation are documented on [`RelativePath`].

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::limits::MAX_PATH_BYTES;
use super::violation::{Problem, Violation, ViolationCode};

/// A normalised path relative to the workspace root, with `/` separators.
///
/// Paths in requests (file and image inputs) and in responses (file bundles) name files
/// inside the user's workspace. A path that could leave it is refused at the boundary, so
/// that no later phase that reads or patches files has to defend against one:
///
/// - empty, or only `.` segments: names no file;
/// - absolute: a leading `/` or `\` (which also covers UNC paths `\\server\share`);
/// - any `:`: a Windows drive (`C:\x`, `C:x`), a URL scheme (`file:`, `https:`) or an
///   NTFS stream (`a.txt:secret`), none of which is a plain relative path;
/// - a first segment starting with `~`: shells expand it to a home directory;
/// - any `..` segment: it escapes, or could escape, the workspace;
/// - control characters, including NUL.
///
/// Both `/` and `\` separate segments, so a Windows client may send `src\main.rs`. The
/// stored form is normalised to `/` separators with `.` and empty segments dropped, the
/// same form chunk paths use, so `./src//main.rs` and `src\main.rs` both become
/// `src/main.rs`.
///
/// A path is at most 1,024 bytes of UTF-8.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RelativePath(String);

impl RelativePath {
    /// Checks and normalises a workspace-relative path (see the type docs for the rules).
    ///
    /// ```
    /// use aptix_model::contract::RelativePath;
    ///
    /// assert_eq!(RelativePath::new(r".\src\main.rs").unwrap().as_str(), "src/main.rs");
    /// assert!(RelativePath::new("../secrets.txt").is_err());
    /// assert!(RelativePath::new("C:/Windows").is_err());
    /// ```
    pub fn new(path: impl AsRef<str>) -> Result<Self, Violation> {
        normalise_relative_path(path.as_ref())
            .map(RelativePath)
            .map_err(|problem| problem.at("path"))
    }

    /// The normalised path.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The normalised path, by value.
    pub fn into_string(self) -> String {
        self.0
    }
}

/// Checks `text` and returns its normalised form.
pub(crate) fn normalise_relative_path(text: &str) -> Result<String, Problem> {
    let invalid = |message: &str| Err(Problem::new(ViolationCode::InvalidPath, message));
    if text.trim().is_empty() {
        return invalid("path is empty; give a path relative to the workspace root");
    }
    if text.len() > MAX_PATH_BYTES {
        return Err(Problem::new(
            ViolationCode::TooLarge,
            format!(
                "path is {} bytes; the limit is {MAX_PATH_BYTES} bytes",
                text.len()
            ),
        ));
    }
    if text.chars().any(char::is_control) {
        return invalid("path contains a control character");
    }
    if text.starts_with(['/', '\\']) {
        return invalid(
            "path is absolute; give a path relative to the workspace root, such as src/main.rs",
        );
    }
    if text.contains(':') {
        return invalid(
            "path contains ':' (a drive letter, URL scheme or stream name); \
             give a path relative to the workspace root",
        );
    }
    if text.starts_with('~') {
        return invalid("path starts with '~', which names a home directory, not the workspace");
    }
    let mut segments = Vec::new();
    for segment in text.split(['/', '\\']) {
        match segment {
            "" | "." => {}
            ".." => return invalid("path contains '..', which could leave the workspace"),
            segment => segments.push(segment),
        }
    }
    if segments.is_empty() {
        return invalid("path names no file, only the workspace root");
    }
    Ok(segments.join("/"))
}

impl fmt::Display for RelativePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for RelativePath {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for RelativePath {
    type Error = Violation;
    fn try_from(path: String) -> Result<Self, Violation> {
        RelativePath::new(path)
    }
}

impl Serialize for RelativePath {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for RelativePath {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let path = String::deserialize(deserializer)?;
        RelativePath::new(path).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn ok(input: &str, normalised: &str) {
        assert_eq!(
            RelativePath::new(input).unwrap().as_str(),
            normalised,
            "{input:?}"
        );
    }

    #[track_caller]
    fn refused(input: &str, code: ViolationCode) {
        let violation = RelativePath::new(input).unwrap_err();
        assert_eq!(
            (violation.path.as_str(), violation.code),
            ("path", code),
            "{input:?}"
        );
    }

    #[test]
    fn relative_paths_are_normalised() {
        ok("src/main.rs", "src/main.rs");
        ok(r"src\lib.rs", "src/lib.rs");
        ok("./a//b/./c.txt", "a/b/c.txt");
        ok("dir/", "dir");
        ok("..hidden/file..txt", "..hidden/file..txt");
        ok("naïve/ünïcode.md", "naïve/ünïcode.md");
    }

    #[test]
    fn escaping_paths_are_refused() {
        use ViolationCode::{InvalidPath, TooLarge};
        for input in [
            "",
            "  ",
            ".",
            "./",
            "/etc/passwd",
            r"\\server\share\x",
            r"\x",
            "C:\\Windows",
            "C:x",
            "c:/x",
            "file:///etc/passwd",
            "https://x/y.png",
            "a.txt:stream",
            "~",
            "~/.ssh/id_rsa",
            "..",
            "../x",
            "a/../../x",
            r"a\..\x",
            "a/..",
            "a\0b",
            "a\nb",
        ] {
            refused(input, InvalidPath);
        }
        refused(&"a".repeat(MAX_PATH_BYTES + 1), TooLarge);
        ok(&"a".repeat(MAX_PATH_BYTES), &"a".repeat(MAX_PATH_BYTES));
    }

    #[test]
    fn serde_checks_paths() {
        assert!(serde_json::from_str::<RelativePath>("\"../x\"").is_err());
        let path: RelativePath = serde_json::from_str(r#""a\\b""#).unwrap();
        assert_eq!(serde_json::to_string(&path).unwrap(), "\"a/b\"");
    }
}
