//! The rules for secrets in a workspace: files that may hold them are never indexed,
//! searched, read or listed by a tool ([`is_secret_path`]); text in any other file that
//! has the shape of a credential is redacted before it is indexed or read by a tool
//! ([`redact_secrets`]).

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::Regex;

/// Whether a `/`-separated workspace path may hold secrets: one of its parts is a
/// secret-looking name (`.env` files, keys and certificates, SSH keys, package-manager
/// and cloud credentials). The workspace index skips such files
/// and folders (listed with [`SkipReason::MayHoldSecrets`](crate::SkipReason::MayHoldSecrets)),
/// so their text never reaches a model as context or a search hit, and the tools refuse
/// to read or list them.
pub fn is_secret_path(path: &str) -> bool {
    path.split('/').any(is_secret_name)
}

/// Whether one file or folder name looks like it holds secrets.
fn is_secret_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    // `credentials` and `secrets` name data files (`credentials.json`, `secrets.yaml`,
    // AWS's `credentials`), but also code that handles them: Python's `secrets.py`,
    // botocore's `credentials.py`, a `Credentials.java`. Code is indexed (with any
    // credential-shaped text in it redacted, as in every file); data is not.
    if (lower.starts_with("credentials.") || lower.starts_with("secrets."))
        && is_code_or_prose(&lower)
    {
        return false;
    }
    const NAMES: &[&str] = &[
        ".npmrc",
        ".pypirc",
        ".netrc",
        "_netrc",
        ".git-credentials",
        ".dockercfg",
        ".htpasswd",
        ".ssh",
        ".aws",
        ".gnupg",
        ".docker",
        "credentials",
        "secrets",
        "kubeconfig",
    ];
    const PREFIXES: &[&str] = &[
        ".env",
        "id_rsa",
        "id_dsa",
        "id_ecdsa",
        "id_ed25519",
        "credentials.",
        "secrets.",
        "service-account",
    ];
    const SUFFIXES: &[&str] = &[
        ".pem",
        ".key",
        ".p12",
        ".pfx",
        ".jks",
        ".keystore",
        ".asc",
        ".gpg",
        ".kdbx",
        ".env",
        ".tfstate",
        ".tfstate.backup",
    ];
    NAMES.contains(&lower.as_str())
        || PREFIXES.iter().any(|prefix| lower.starts_with(prefix))
        || SUFFIXES.iter().any(|suffix| lower.ends_with(suffix))
}

/// Whether a file name is that of source code or documentation, which handles or
/// describes credentials rather than holding them.
fn is_code_or_prose(name: &str) -> bool {
    matches!(
        aptix_rag::language_for_path(name),
        "rust"
            | "python"
            | "go"
            | "java"
            | "kotlin"
            | "scala"
            | "csharp"
            | "fsharp"
            | "swift"
            | "c"
            | "cpp"
            | "objectivec"
            | "javascript"
            | "typescript"
            | "tsx"
            | "jsx"
            | "ruby"
            | "php"
            | "elixir"
            | "erlang"
            | "haskell"
            | "ocaml"
            | "clojure"
            | "dart"
            | "lua"
            | "zig"
            | "markdown"
            | "mdx"
            | "rst"
            | "groovy"
            | "perl"
            | "r"
            | "vbnet"
            | "vue"
            | "svelte"
    )
}

/// What a redacted secret is replaced with.
pub const REDACTED: &str = "[secret redacted]";

/// The most a private key block may span from its header to its END line: an RSA key
/// of 8192 bits takes about 6.5 KB. Past it, an END line belongs to something else.
const MAX_KEY_BYTES: usize = 16 * 1024;

/// The line that opens a private key block (PEM, OpenSSH, PGP), and the one that ends it.
static KEY_BEGIN: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----").ok());
static KEY_END: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----").ok());

/// The tokens of the services whose keys have a fixed shape: AWS access key ids (and a
/// secret access key where it is named), GitHub, GitLab, npm, Hugging Face and Slack
/// tokens, Slack webhooks, Google API keys, Stripe live keys, and OpenAI or Anthropic
/// `sk-` keys (which must also be long and hold a digit), JSON web tokens, and the
/// password of a URL (`postgres://user:password@host`). Where a group `value` or
/// `password` is set, only it is the secret.
static TOKEN: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(concat!(
        r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
        r"|(?i:aws_?secret[a-z0-9_]*|secret_?access_?key)[\x22']?\s*[:=]\s*[\x22']?",
        r"(?P<value>[A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|\z)",
        // Every branch opens with a literal, which the regex's prefilter looks for
        // first: a branch opening with a class (a URL's scheme) made every word a
        // candidate and indexing half as fast again.
        r"|://[^\s/:@\x22'`]*:(?P<password>[^\s/@\x22'`{}$<>%*\[\]][^\s/@\x22'`]*)@",
        r"|eyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}",
        r"|\bgh[pousr]_[A-Za-z0-9]{36,}\b",
        r"|\bgithub_pat_[A-Za-z0-9_]{22,}",
        r"|\bglpat-[0-9A-Za-z_\-]{20,}",
        r"|\bnpm_[A-Za-z0-9]{36}\b",
        r"|\bhf_[A-Za-z0-9]{34,}\b",
        r"|\bxox[abposr]-[A-Za-z0-9\-]{10,}",
        r"|https://hooks\.slack\.com/services/[A-Za-z0-9]+/[A-Za-z0-9]+/[A-Za-z0-9]+",
        r"|\bAIza[0-9A-Za-z_\-]{35}",
        r"|\b[rs]k_live_[0-9A-Za-z]{20,}",
        r"|(?P<sk>\bsk-[A-Za-z0-9_\-]{32,})",
    ))
    .ok()
});

/// `text` with every credential-shaped run replaced by [`REDACTED`]: a private key block
/// from its header to its END line (or, with no END line near, the lines of key text
/// after the header), and the tokens of the services whose keys have a fixed shape (AWS,
/// GitHub, GitLab, npm, Hugging Face, Slack, Google, Stripe live, OpenAI and Anthropic
/// keys; see `docs/index.md`). A redacted run keeps its
/// line breaks, before the marker, so line numbers and the line count stay those of
/// the file. Borrowed when nothing was found, which is what almost every file gives.
///
/// ```
/// use aptix_index::redact_secrets;
///
/// let text = "let key = \"AKIAIOSFODNN7EXAMPLE\";\nlet region = \"eu-west-1\";\n";
/// assert_eq!(
///     redact_secrets(text),
///     "let key = \"[secret redacted]\";\nlet region = \"eu-west-1\";\n"
/// );
/// ```
pub fn redact_secrets(text: &str) -> Cow<'_, str> {
    let (Some(begin), Some(end), Some(token)) =
        (KEY_BEGIN.as_ref(), KEY_END.as_ref(), TOKEN.as_ref())
    else {
        // The patterns are constants that a test compiles: unreachable in a build that
        // passed its tests, and then nothing could be said to be redacted.
        return Cow::Borrowed(text);
    };
    let mut spans: Vec<std::ops::Range<usize>> = Vec::new();
    for header in begin.find_iter(text) {
        if spans.last().is_some_and(|last| last.end > header.start()) {
            continue;
        }
        let body = header.end();
        let window = text.floor_char_boundary(body + MAX_KEY_BYTES);
        // An END line counts when only key text lies between: in a file about keys,
        // the next block's END may be far down, past code that is not one.
        let stop = match end.find(&text[body..window]) {
            Some(found) if is_key_body(&text[body..body + found.start()]) => body + found.end(),
            _ => body + key_text_len(&text[body..]),
        };
        spans.push(header.start()..stop);
    }
    let blocks = spans.len();
    for found in token.captures_iter(text) {
        let value = found.name("value").or_else(|| found.name("password"));
        let Some(whole) = found.get(0) else {
            continue;
        };
        // An `sk-` run is a key when it holds a digit: CSS classes and slugs do not.
        if found.name("sk").is_some() && !whole.as_str().bytes().any(|b| b.is_ascii_digit()) {
            continue;
        }
        // A URL's "password" that is a placeholder, or an image's tag before its
        // digest (`docker://alpine:3.19@sha256:...`), is no secret: left as written,
        // so the model reads docs and tests as they are.
        if let Some(password) = found.name("password")
            && (is_placeholder(password.as_str()) || text[whole.end()..].starts_with("sha256:"))
        {
            continue;
        }
        let span = value.unwrap_or(whole).range();
        if !spans[..blocks]
            .iter()
            .any(|block| block.start < span.end && span.start < block.end)
        {
            spans.push(span);
        }
    }
    if spans.is_empty() {
        return Cow::Borrowed(text);
    }
    spans.sort_by_key(|span| span.start);
    let mut redacted = String::with_capacity(text.len());
    let mut written = 0;
    for span in spans {
        if span.start < written {
            continue;
        }
        redacted.push_str(&text[written..span.start]);
        redacted.extend(text[span.clone()].matches('\n').map(|_| '\n'));
        redacted.push_str(REDACTED);
        written = span.end;
    }
    redacted.push_str(&text[written..]);
    Cow::Owned(redacted)
}

/// A password written as a stand-in: `password`, `secret`, `changeme`, `xxx`, ...
fn is_placeholder(password: &str) -> bool {
    const PLACEHOLDERS: [&str; 10] = [
        "password", "passwd", "pass", "pw", "pwd", "secret", "changeme", "example", "redacted",
        "hunter2",
    ];
    let lower = password.to_ascii_lowercase();
    PLACEHOLDERS.contains(&lower.as_str()) || lower.bytes().all(|b| b == b'x')
}

/// How much of `rest`, the text after a key header with no END line near, is key text:
/// the lines after the header that hold only base64 (in a string literal too: quotes,
/// commas and `\n` escapes around it), up to the end of the last one; none when the
/// next line holds anything else (a parser naming the header is not a key).
fn key_text_len(rest: &str) -> usize {
    let mut key_end = 0;
    let mut line_start = 0;
    for (index, line) in rest.split_inclusive('\n').enumerate() {
        let content = line.trim_end_matches('\n');
        match key_text(content) {
            Some(text) if !text.is_empty() => key_end = line_start + content.len(),
            // The header's own line, with nothing after the header but dressing.
            Some(_) if index == 0 => {}
            _ => break,
        }
        line_start += line.len();
    }
    key_end
}

/// Whether `body`, between a key's header and its END line, holds only what a key
/// block holds: base64 lines, blank lines and armor headers (`Proc-Type: 4,ENCRYPTED`,
/// `Version: ...`).
fn is_key_body(body: &str) -> bool {
    body.split('\n').all(|line| {
        let armor = uncommented(line)
            .trim()
            .split_once(": ")
            .is_some_and(|(name, _)| {
                !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            });
        armor || key_text(line).is_some()
    })
}

/// `line` without the comment or quote marks it opens with (`#`, `//`, `/*`, `*`, `--`,
/// `>`, `%`, `!`, repeated or nested): a key pasted into a comment, a doc comment or a
/// Markdown quote is still a key.
fn uncommented(line: &str) -> &str {
    const MARKS: [&str; 8] = ["//", "/*", "#", "*", "--", ">", "%", "!"];
    let mut rest = line.trim_start();
    while let Some(after) = MARKS.iter().find_map(|mark| rest.strip_prefix(mark)) {
        rest = after.trim_start();
    }
    rest
}

/// What is left of a line once comment marks and string-literal dressing are taken off
/// (quotes, commas, spaces, `\n` escapes), when it is base64; empty when nothing is left.
fn key_text(line: &str) -> Option<String> {
    // Words apart, as prose is (`# and then we parse`), are not key text, which has
    // no space inside a line; a string's `+` between two lines is dressing.
    let line = uncommented(line);
    let words = line
        .split_whitespace()
        .filter(|word| word.bytes().any(|b| b.is_ascii_alphanumeric()))
        .count();
    if words > 1 {
        return None;
    }
    let text = line
        .replace("\\n", "")
        .replace("\\r", "")
        .replace(['"', '\'', ',', ';', ' ', '\t', '\r'], "");
    text.bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
        .then_some(text)
}

#[cfg(test)]
mod tests {
    use proptest::strategy::Strategy as _;

    use super::*;

    #[test]
    fn the_secret_patterns_compile() {
        assert!(KEY_BEGIN.is_some() && KEY_END.is_some() && TOKEN.is_some());
    }

    /// `redact_secrets(text)`, checked to keep the text's line count.
    fn redacted(text: &str) -> String {
        let out = redact_secrets(text).into_owned();
        assert_eq!(
            out.lines().count(),
            text.lines().count(),
            "{text:?} -> {out:?}"
        );
        out
    }

    #[test]
    fn credential_shaped_text_is_redacted_and_lines_are_kept() {
        let pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7x\nabc+/=\n-----END RSA PRIVATE KEY-----";
        let text = format!("const KEY: &str = r#\"{pem}\"#;\nfn main() {{}}\n");
        assert_eq!(
            redacted(&text),
            "const KEY: &str = r#\"\n\n\n[secret redacted]\"#;\nfn main() {}\n"
        );
        // A block cut short: the key lines after its header, and no more.
        assert_eq!(
            redacted("x\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk"),
            "x\n\n[secret redacted]"
        );
        assert_eq!(
            redacted("-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\nAbC+/d==\n\nfn parse() {}\n"),
            "\n\n[secret redacted]\n\nfn parse() {}\n"
        );
        assert_eq!(
            redacted(
                "-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: GnuPG v2\n\nlQOYBF4x\n=a1b2\n-----END PGP PRIVATE KEY BLOCK-----\nok\n"
            ),
            "\n\n\n\n\n[secret redacted]\nok\n"
        );
        // An escaped one-liner in a string literal.
        assert_eq!(
            redacted("k = \"-----BEGIN PRIVATE KEY-----\\nMIIE\\n-----END PRIVATE KEY-----\\n\"\n"),
            "k = \"[secret redacted]\\n\"\n"
        );
        for secret in [
            "AKIAIOSFODNN7EXAMPLE",
            "ghp_0123456789abcdefghijABCDEFGHIJ012345",
            "github_pat_11ABCDEFG0123456789_abcdefghijkl",
            "glpat-abcdefghij0123456789",
            "hf_abcdefghijklmnopqrstuvwxyzABCDEFGH",
            "xoxb-1234567890-abcdefghij",
            "https://hooks.slack.com/services/T0123ABCD/B0123ABCD/abcdefghijklmnop0123",
            "AIzaSyA1234567890abcdefghijklmnopqrstuv",
            "AIzaSyA1234567890abcdefghijklmnopqrstu-",
            "sk_live_0123456789abcdefghijklmn",
            "sk-proj-abc123DEF456ghi789JKL012mno345PQR678",
            "sk-ant-api03-abcdefghijklmnop0123456789ABCDEFGH",
        ] {
            let line = format!("token = \"{secret}\"");
            assert_eq!(redacted(&line), "token = \"[secret redacted]\"", "{secret}");
        }
        // A named AWS secret access key: the value, not the name.
        for line in [
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "AWS_SECRET_ACCESS_KEY=\"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\"",
            "\"SecretAccessKey\": \"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\",",
        ] {
            let out = redacted(line);
            assert!(
                out.contains("[secret redacted]") && !out.contains("wJalr"),
                "{line} -> {out}"
            );
            assert!(out.to_ascii_lowercase().contains("secret"), "{out}");
        }
    }

    #[test]
    fn code_that_only_looks_alike_is_left_alone() {
        for text in [
            "let risk-assessment = 1;",
            ".sk-folding-cube-animation-delay-rotate { }",
            "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
            "-----BEGIN CERTIFICATE-----",
            "AKIA_IS_A_PREFIX",
            "let akia = \"AKIAshort\";",
            "sk-... (your key here)",
            "secret_access_key = os.environ[\"AWS_SECRET_ACCESS_KEY\"]",
        ] {
            assert_eq!(redacted(text), text);
        }
        // Code between a header and a later block's END line is not a key.
        let two = "let a = \"-----BEGIN EC PRIVATE KEY-----\";\nfn parse() {}\nlet b = \"-----END EC PRIVATE KEY-----\";\n";
        assert_eq!(
            redacted(two),
            "let a = \"[secret redacted]\";\nfn parse() {}\nlet b = \"-----END EC PRIVATE KEY-----\";\n"
        );
        // A parser of keys names the header, and its code is not a key.
        let parser = "const HEADER: &str = \"-----BEGIN RSA PRIVATE KEY-----\";\nfn parse(text: &str) -> Key {\n    decode(text)\n}\n";
        assert_eq!(
            redacted(parser),
            "const HEADER: &str = \"[secret redacted]\";\nfn parse(text: &str) -> Key {\n    decode(text)\n}\n"
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

        /// Any text, with key headers, END lines and tokens spliced into it anywhere
        /// (multi-byte characters, escapes and line breaks around them): redaction never
        /// panics, keeps the line count, and leaves no spliced token behind.
        #[test]
        fn redaction_is_total_keeps_lines_and_leaves_no_token(
            pieces in proptest::collection::vec(
                proptest::prop_oneof![
                    "\\PC{0,12}",
                    proptest::sample::select(vec![
                        "\n", "\r\n", "\\n", "\"", "é", "—", "🔑",
                        "-----BEGIN RSA PRIVATE KEY-----",
                        "-----END RSA PRIVATE KEY-----",
                        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk=\n",
                        "MIIEowIBAAKCAQEA7x",
                    ]).prop_map(str::to_owned),
                    proptest::sample::select(vec![
                        "AKIAIOSFODNN7EXAMPLE",
                        "ghp_0123456789abcdefghijABCDEFGHIJ012345",
                        "sk-proj-abc123DEF456ghi789JKL012mno345PQR678",
                        "xoxb-1234567890-abcdefghij",
                        "postgres://admin:Pw9secretvalue@db",
                        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3In0.dozjgNryP4J3jVmNHl0w",
                    ]).prop_map(|token| format!(" {token} ")),
                ],
                0..40,
            )
        ) {
            let text: String = pieces.concat();
            let out = redact_secrets(&text);
            proptest::prop_assert_eq!(out.lines().count(), text.lines().count());
            proptest::prop_assert_eq!(out.matches('\n').count(), text.matches('\n').count());
            for token in [
                "AKIAIOSFODNN7EXAMPLE",
                "ghp_0123456789abcdefghijABCDEFGHIJ012345",
                "sk-proj-abc123DEF456ghi789JKL012mno345PQR678",
                "xoxb-1234567890-abcdefghij",
                "Pw9secretvalue",
                "dozjgNryP4J3jVmNHl0w",
            ] {
                proptest::prop_assert!(!out.contains(token), "{} left in {:?}", token, out);
            }
        }
    }

    #[test]
    fn a_key_in_a_comment_or_a_quote_is_redacted_whole() {
        for mark in ["# ", "// ", " * ", "> ", "-- ", "%% ", "/// ", "#   "] {
            let text = format!(
                "def load():\n    {mark}-----BEGIN RSA PRIVATE KEY-----\n    {mark}MIIEpAIBAAKCAQEA1c7+9z5Pad7O\n    {mark}Zk1lQdsQ1Uv0kHQ8g1F/aSYc==\n    {mark}-----END RSA PRIVATE KEY-----\n    return None\n"
            );
            let out = redacted(&text);
            assert!(
                !out.contains("MIIEpAIBAAKCAQEA1c7") && !out.contains("Zk1lQdsQ1U"),
                "{mark:?}: {out}"
            );
            assert!(out.ends_with("    return None\n"), "{mark:?}: {out}");
            // No END line near: the commented key lines after the header, and no more.
            let cut = format!(
                "{mark}-----BEGIN OPENSSH PRIVATE KEY-----\n{mark}b3BlbnNzaC1rZXktdjEAAAA\n{mark}QyNTUxOQAAACBGVmF1bHQ\nfn parse() {{}}\n"
            );
            let out = redacted(&cut);
            assert!(
                !out.contains("b3BlbnNz") && !out.contains("QyNTUx"),
                "{mark:?}: {out}"
            );
            assert!(out.ends_with("\nfn parse() {}\n"), "{mark:?}: {out}");
        }
        // A comment that names the header and goes on in prose is no key.
        let prose = "# -----BEGIN RSA PRIVATE KEY-----\n# and then we parse it\nx = 1\n";
        assert_eq!(
            redacted(prose),
            "# [secret redacted]\n# and then we parse it\nx = 1\n"
        );
        // Armor headers in a commented block.
        let armored = "# -----BEGIN RSA PRIVATE KEY-----\n# Proc-Type: 4,ENCRYPTED\n# DEK-Info: AES-128-CBC,0A1B\n#\n# MIIEowIBAAKCAQEA7x\n# -----END RSA PRIVATE KEY-----\nx = 1\n";
        assert_eq!(redacted(armored), "# \n\n\n\n\n[secret redacted]\nx = 1\n");
    }

    #[test]
    fn url_passwords_jwts_and_named_aws_secrets_are_redacted() {
        assert_eq!(
            redacted("DATABASE_URL=postgres://admin:SuperS3cretPass@db.internal:5432/app\n"),
            "DATABASE_URL=postgres://admin:[secret redacted]@db.internal:5432/app\n"
        );
        assert_eq!(
            redacted("url = \"https://bot:p%40ss@example.com/x\"\n"),
            "url = \"https://bot:[secret redacted]@example.com/x\"\n"
        );
        // Redis spells AUTH with no user.
        assert_eq!(
            redacted("REDIS_URL=redis://:s3cretRedis@cache:6379/0"),
            "REDIS_URL=redis://:[secret redacted]@cache:6379/0"
        );
        // Templates, masks, placeholders and image digests are not secrets; nor is a port.
        for text in [
            "postgres://user:password@localhost/db",
            "postgres://aptix:xxxx@db/aptix",
            "docker://alpine:3.19@sha256:4bcff63911fcb4448bd4fdacec207030997caf25e9bea4045fa6c8c44de311d1",
            "format!(\"{scheme}://{user}:{password}@{host}\")",
            "url=\"postgres://$USER:$PGPASSWORD@localhost/db\"",
            "postgres://aptix:***@127.0.0.1:1",
            "http://localhost:8080/path@v2",
            "git@github.com:org/repo.git",
        ] {
            assert_eq!(redacted(text), text);
        }
        let jwt = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";
        assert_eq!(
            redacted(&format!("token = \"{jwt}\"")),
            "token = \"[secret redacted]\""
        );
        assert_eq!(
            redacted("AWS_SECRET = \"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\"\n"),
            "AWS_SECRET = \"[secret redacted]\"\n"
        );
    }

    #[test]
    fn secret_names_are_recognised() {
        for name in [
            ".env",
            ".env.local",
            "server.pem",
            "tls.key",
            "id_rsa",
            "id_ed25519.pub",
            ".npmrc",
            "credentials",
            "credentials.json",
            "secrets.yaml",
            "prod.env",
            "terraform.tfstate",
            "terraform.tfstate.backup",
            "kubeconfig",
        ] {
            assert!(is_secret_name(name), "{name}");
        }
        for name in [
            "lib.rs",
            "environment.rs",
            "keys.rs",
            "README.md",
            "monkey.txt",
        ] {
            assert!(!is_secret_name(name), "{name}");
        }
        assert!(is_secret_path("config/.aws/config"));
        assert!(is_secret_path("deploy/tls.key"));
        assert!(!is_secret_path("src/keys.rs"));
        // Code and docs about credentials are not credentials; data files are.
        for path in [
            "Lib/secrets.py",
            "botocore/credentials.py",
            "src/Credentials.java",
            "src/auth/credentials.go",
            "docs/secrets.md",
            "tests/http/secrets.rs",
        ] {
            assert!(!is_secret_path(path), "{path}");
        }
        for path in [
            "credentials.json",
            "config/secrets.yaml",
            "secrets.toml",
            "secrets.sh",
            "secrets.txt",
            "credentials",
            "deploy/secrets/app.py",
        ] {
            assert!(is_secret_path(path), "{path}");
        }
    }
}
