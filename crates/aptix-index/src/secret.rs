//! The rules for secrets in a workspace: files that may hold them are never indexed,
//! searched, read or listed by a tool ([`is_secret_path`]); text in any other file that
//! has the shape of a credential is redacted before it is indexed or read by a tool
//! ([`redact_secrets`]).

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::{Captures, Regex};

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
    ];
    NAMES.contains(&lower.as_str())
        || PREFIXES.iter().any(|prefix| lower.starts_with(prefix))
        || SUFFIXES.iter().any(|suffix| lower.ends_with(suffix))
}

/// What a redacted secret is replaced with.
pub const REDACTED: &str = "[secret redacted]";

/// Credentials by their shape: private key blocks (PEM, OpenSSH, PGP; to their end, or
/// to the end of the text when cut), and the tokens of the services whose keys have a
/// fixed prefix (AWS access key ids, GitHub, GitLab, npm, Slack, Google, Stripe live
/// keys, and OpenAI or Anthropic `sk-` keys, which must also be long and hold a digit).
static SECRET: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?s:-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----.*?",
        r"(?:-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----|\z))",
        r"|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
        r"|\bgh[pousr]_[A-Za-z0-9]{36,}\b",
        r"|\bgithub_pat_[A-Za-z0-9_]{22,}",
        r"|\bglpat-[0-9A-Za-z_\-]{20,}",
        r"|\bnpm_[A-Za-z0-9]{36}\b",
        r"|\bxox[abposr]-[A-Za-z0-9\-]{10,}",
        r"|\bAIza[0-9A-Za-z_\-]{35}\b",
        r"|\b[rs]k_live_[0-9A-Za-z]{20,}",
        r"|(?P<sk>\bsk-[A-Za-z0-9_\-]{32,})",
    ))
    .ok()
});

/// `text` with every credential-shaped run replaced by [`REDACTED`], and as many line
/// breaks as it held, so that line numbers stay those of the file. Borrowed when
/// nothing was found, which is what almost every file gives.
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
    let Some(secret) = SECRET.as_ref() else {
        // The pattern is a constant that a test compiles: unreachable in a build that
        // passed its tests, and then nothing could be said to be redacted.
        return Cow::Borrowed(text);
    };
    secret.replace_all(text, |found: &Captures<'_>| {
        let whole = found.get(0).map_or("", |m| m.as_str());
        // An `sk-` run is a key when it holds a digit: CSS classes and slugs do not.
        if found.name("sk").is_some() && !whole.bytes().any(|b| b.is_ascii_digit()) {
            return whole.to_owned();
        }
        let mut replaced = REDACTED.to_owned();
        replaced.extend(whole.matches('\n').map(|_| '\n'));
        replaced
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_secret_pattern_compiles() {
        assert!(SECRET.is_some());
    }

    #[test]
    fn credential_shaped_text_is_redacted_and_lines_are_kept() {
        let pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7x\nabc+/=\n-----END RSA PRIVATE KEY-----";
        let text = format!("const KEY: &str = r#\"{pem}\"#;\nfn main() {{}}\n");
        let redacted = redact_secrets(&text);
        assert_eq!(
            redacted,
            "const KEY: &str = r#\"[secret redacted]\n\n\n\"#;\nfn main() {}\n"
        );
        assert_eq!(redacted.lines().count(), text.lines().count());
        // A block cut short is redacted to the end.
        assert_eq!(
            redact_secrets("x\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk"),
            "x\n[secret redacted]\n"
        );
        for secret in [
            "AKIAIOSFODNN7EXAMPLE",
            "ghp_0123456789abcdefghijABCDEFGHIJ012345",
            "github_pat_11ABCDEFG0123456789_abcdefghijkl",
            "glpat-abcdefghij0123456789",
            "xoxb-1234567890-abcdefghij",
            "AIzaSyA1234567890abcdefghijklmnopqrstuv",
            "sk_live_0123456789abcdefghijklmn",
            "sk-proj-abc123DEF456ghi789JKL012mno345PQR678",
            "sk-ant-api03-abcdefghijklmnop0123456789ABCDEFGH",
        ] {
            let line = format!("token = \"{secret}\"");
            assert_eq!(
                redact_secrets(&line),
                "token = \"[secret redacted]\"",
                "{secret}"
            );
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
        ] {
            assert_eq!(redact_secrets(text), text);
        }
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
    }
}
