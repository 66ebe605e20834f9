//! URLs as people and logs see them: with the password hidden (a store's database URL,
//! a provider's base URL through a proxy that wants one).

/// `url` with its password replaced by `***`, in every form it is written in: the URL's
/// user-info (`postgres://user:secret@host/db`, `https://user:secret@proxy/v1`) and
/// `password=` parameters (in a URL's query or PostgreSQL's `key=value` connection
/// string), and with the values of the query parameters that carry keys, tokens and
/// signatures (`key=`, `token=`, `access_token=`, `api-key=`, `sig=`, ...) masked the
/// same way. Text that is neither is returned with every such value masked all the
/// same.
///
/// ```
/// assert_eq!(
///     aptix_model::redact_url("https://me:hunter2@proxy.example/v1"),
///     "https://me:***@proxy.example/v1"
/// );
/// ```
pub fn redact_url(url: &str) -> String {
    let mut text = url.to_owned();
    // A scheme's `:` left out (`postgres//user:pw@db`) still leaves the user-info after
    // the `//`.
    let rest_start = text
        .find("://")
        .map(|scheme_end| scheme_end + 3)
        .or_else(|| text.find("//").map(|slashes| slashes + 2));
    if let Some(rest_start) = rest_start {
        // The user-info ends at the last `@`, not at the first `/`, `?` or `#`: a
        // password written with one of them unescaped (`hunter/2`) is still a password
        // to the driver (tokio-postgres reads credentials up to an `@`). Where an `@`
        // stands only in the query, a little more than a password is hidden; never less.
        if let Some(at) = text[rest_start..].rfind('@') {
            let userinfo = &text[rest_start..rest_start + at];
            if let Some(colon) = userinfo.find(':') {
                text.replace_range(rest_start + colon + 1..rest_start + at, "***");
            }
        }
    }
    mask_password_parameters(&text)
}

/// Whether `name` (a host, without port or brackets) is this machine: `localhost` and
/// its subdomains (which resolve to loopback by RFC 6761) or a loopback address.
///
/// ```
/// assert!(aptix_model::is_loopback_host("127.0.0.1"));
/// assert!(aptix_model::is_loopback_host("::1"));
/// assert!(!aptix_model::is_loopback_host("localhost.evil.example"));
/// ```
pub fn is_loopback_host(name: &str) -> bool {
    let name = name.trim_end_matches('.');
    if name.eq_ignore_ascii_case("localhost")
        || name
            .get(name.len().saturating_sub(".localhost".len())..)
            .is_some_and(|tail| tail.eq_ignore_ascii_case(".localhost"))
    {
        return true;
    }
    name.parse::<std::net::IpAddr>()
        .is_ok_and(|address| address.is_loopback())
}

/// Whether `url` (`scheme://[user@]host[:port][/path]`) names a server on this machine:
/// `localhost` itself or a loopback address; `false` for anything that does not read as
/// such a URL. Stricter than [`is_loopback_host`]: a subdomain of `localhost` is looked
/// up by the resolver the client uses, which may ask DNS for it.
///
/// ```
/// assert!(aptix_model::is_loopback_url("http://127.0.0.1:8080/v1"));
/// assert!(aptix_model::is_loopback_url("http://[::1]:8080/v1"));
/// assert!(!aptix_model::is_loopback_url("https://127.0.0.1.evil.example/v1"));
/// assert!(!aptix_model::is_loopback_url("http://localhost@evil.example/v1"));
/// ```
pub fn is_loopback_url(url: &str) -> bool {
    url_host(url).is_some_and(|host| {
        let host = host.trim_end_matches('.');
        host.eq_ignore_ascii_case("localhost")
            || host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|address| address.is_loopback())
    })
}

/// The host of `url` (`scheme://[user@]host[:port][/path]`), without user-info, port
/// or IPv6 brackets: `Some("")` for a URL that names none (`postgres:///db`, a local
/// socket), `None` for text that does not read as such a URL. The user-info ends at the
/// last `@` of the authority, and the authority at the first `/`, `?`, `#` or `\`, as
/// the HTTP clients read them.
///
/// ```
/// assert_eq!(aptix_model::url_host("https://me:pw@[::1]:8443/v1"), Some("::1"));
/// assert_eq!(aptix_model::url_host("postgres:///aptix"), Some(""));
/// assert_eq!(aptix_model::url_host("http://host:80x/"), None);
/// ```
pub fn url_host(url: &str) -> Option<&str> {
    let (_, rest) = url.trim().split_once("://")?;
    let authority = rest.split(['/', '?', '#', '\\']).next().unwrap_or_default();
    let host_port = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    let is_port = |port: &str| port.bytes().all(|b| b.is_ascii_digit());
    if let Some(bracketed) = host_port.strip_prefix('[') {
        return match bracketed.split_once(']') {
            Some((name, "")) => Some(name),
            Some((name, port)) if port.strip_prefix(':').is_some_and(is_port) => Some(name),
            _ => None,
        };
    }
    match host_port.rsplit_once(':') {
        Some((name, port)) if is_port(port) => Some(name),
        Some(_) => None,
        None => Some(host_port),
    }
}

/// The names of the parameters whose values [`redact_url`] hides: passwords, and the
/// tokens, keys and signatures that some services take in a URL's query (`?key=` of
/// Google's APIs, `?sig=` of an Azure SAS, `?access_token=`).
const SECRET_PARAMETERS: &[&str] = &[
    "password",
    "passwd",
    "token",
    "access_token",
    "api_key",
    "api-key",
    "apikey",
    "key",
    "secret",
    "client_secret",
    "sig",
    "signature",
];

/// Masks the value of every parameter named in [`SECRET_PARAMETERS`] (URL query or
/// key=value form; quoted values included).
fn mask_password_parameters(text: &str) -> String {
    SECRET_PARAMETERS
        .iter()
        .fold(text.to_owned(), |text, name| mask_parameter(&text, name))
}

/// Masks the value of every `name=` parameter of `text`.
fn mask_parameter(text: &str, name: &str) -> String {
    let lower = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut search = 0;
    while let Some(found) = lower[search..].find(name) {
        let start = search + found;
        let mut cursor = start + name.len();
        let boundary = start == 0
            || matches!(
                text.as_bytes()[start - 1],
                b'?' | b'&' | b' ' | b'\t' | b'\n'
            );
        // Spaces around `=` are allowed in the key=value form.
        while text
            .as_bytes()
            .get(cursor)
            .is_some_and(u8::is_ascii_whitespace)
        {
            cursor += 1;
        }
        if !boundary || text.as_bytes().get(cursor) != Some(&b'=') {
            search = start + name.len();
            continue;
        }
        cursor += 1;
        while text
            .as_bytes()
            .get(cursor)
            .is_some_and(u8::is_ascii_whitespace)
        {
            cursor += 1;
        }
        let value_start = cursor;
        let value_end = if text.as_bytes().get(cursor) == Some(&b'\'') {
            // A quoted value ends at the next unescaped quote.
            let mut end = cursor + 1;
            while end < text.len() {
                match text.as_bytes()[end] {
                    b'\\' => end += 2,
                    b'\'' => {
                        end += 1;
                        break;
                    }
                    _ => end += 1,
                }
            }
            text.ceil_char_boundary(end)
        } else {
            text[cursor..]
                .find(['&', '#', ' ', '\t', '\n'])
                .map_or(text.len(), |end| cursor + end)
        };
        out.push_str(&text[copied..value_start]);
        out.push_str("***");
        copied = value_end;
        search = value_end.max(start + 1);
    }
    out.push_str(&text[copied..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_masked_in_every_form() {
        for (url, expected) in [
            (
                "postgres://aptix:s3cret@db.internal:5432/aptix",
                "postgres://aptix:***@db.internal:5432/aptix",
            ),
            (
                "postgresql://aptix:p%40ss@db/aptix?sslmode=disable",
                "postgresql://aptix:***@db/aptix?sslmode=disable",
            ),
            (
                "postgres://db/aptix?user=a&password=s3cret&x=1",
                "postgres://db/aptix?user=a&password=***&x=1",
            ),
            (
                "host=db user=aptix password='s3 cret' dbname=aptix",
                "host=db user=aptix password=*** dbname=aptix",
            ),
            (
                "host=db password = s3cret dbname=aptix",
                "host=db password = *** dbname=aptix",
            ),
            ("postgres://aptix@db/aptix", "postgres://aptix@db/aptix"),
            ("postgres://a:b:c@d@host/db", "postgres://a:***@host/db"),
            // Unescaped `/`, `?` and `#` in a password.
            (
                "postgres://leaky:hunter/2@127.0.0.1:42022/nodb",
                "postgres://leaky:***@127.0.0.1:42022/nodb",
            ),
            (
                "postgres://leaky:hunter#2@127.0.0.1:1/aptix",
                "postgres://leaky:***@127.0.0.1:1/aptix",
            ),
            (
                "postgres://tracer:S3cr/et?Tr4ce@db/aptix?sslmode=disable",
                "postgres://tracer:***@db/aptix?sslmode=disable",
            ),
            ("postgres://db:5432/aptix", "postgres://db:5432/aptix"),
            // Keys and tokens some services take in the query.
            (
                "https://proxy.example/v1?api-version=2024-10-21&key=AIzaS3cret",
                "https://proxy.example/v1?api-version=2024-10-21&key=***",
            ),
            (
                "https://h.example/v1?sig=abc%2Fdef&se=2026&access_token=t0k&sslkey=/k.pem",
                "https://h.example/v1?sig=***&se=2026&access_token=***&sslkey=/k.pem",
            ),
            (
                "htps://me:s3cret@proxy.example/v1?Token=abc",
                "htps://me:***@proxy.example/v1?Token=***",
            ),
            // The scheme's `:` left out.
            ("postgres//u:hunter2@db/aptix", "postgres//u:***@db/aptix"),
        ] {
            assert_eq!(redact_url(url), expected, "{url}");
        }
    }

    #[test]
    fn loopback_urls_are_those_whose_host_is_this_machine() {
        for url in [
            "http://127.0.0.1:8080/v1",
            "http://localhost/v1",
            "HTTP://LOCALHOST:1/v1",
            "http://[::1]/v1",
            "http://user:pw@127.0.0.2:80/v1?x=1",
            "http://localhost.:8080",
        ] {
            assert!(is_loopback_url(url), "{url}");
        }
        for url in [
            "https://api.openai.com/v1",
            "http://localhost.evil.example/v1",
            // Resolved by the client's resolver, which may ask DNS.
            "http://api.localhost:9/v1",
            "http://127.0.0.1.nip.io/v1",
            "http://localhost@evil.example/v1",
            "http://evil.example#@localhost/v1",
            "http://evil.example\\@localhost/v1",
            "http://localhost:80x/v1",
            "http://[::1]x/v1",
            "http://10.0.0.1/v1",
            "localhost:8080",
            "http:///v1",
            "",
        ] {
            assert!(!is_loopback_url(url), "{url}");
        }
    }

    #[test]
    fn redaction_never_panics_and_never_shows_a_password() {
        // Hostile shapes: cut quotes, stray separators, non-ASCII.
        for text in [
            "",
            "://",
            "postgres://:@",
            "password=",
            "password='unterminated",
            "password='a\\",
            "x=1 password",
            "postgres://ü:ß@ĥost/db?password=é",
        ] {
            let redacted = redact_url(text);
            assert!(
                !redacted.contains("ß") && !redacted.contains("é"),
                "{redacted}"
            );
        }
    }

    proptest::proptest! {
        /// Whatever a password holds but `@` (which ends it for every parser), it is
        /// not in the shown text.
        #[test]
        fn no_password_survives_redaction(
            user in "[a-z]{1,8}",
            password in "[^@\\s]{6,24}",
            host in "[a-z]{1,8}(:[0-9]{1,5})?",
            rest in "(/[a-z]{0,8})?(\\?[a-z]+=[a-z0-9/]{0,8})?",
        ) {
            let url = format!("postgres://{user}:{password}@{host}{rest}");
            let shown = redact_url(&url);
            proptest::prop_assert!(
                !shown.contains(&password) || format!("{user}{host}{rest}").contains(&password),
                "{url} -> {shown}"
            );
        }
    }
}
