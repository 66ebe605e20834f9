//! The one rule for which files may hold secrets: never indexed, never searched,
//! never read or listed by a tool.

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

#[cfg(test)]
mod tests {
    use super::*;

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
