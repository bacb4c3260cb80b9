//! AWS credentials as the AWS SDKs find them, and Signature Version 4 on
//! each request (through `aws-sigv4`, the SDKs' own signer).
//!
//! Where credentials come from, first found first:
//! 1. `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and (for temporary
//!    credentials) `AWS_SESSION_TOKEN`;
//! 2. the profile `AWS_PROFILE` names (else `default`) in the shared
//!    credentials file (`AWS_SHARED_CREDENTIALS_FILE`, else
//!    `~/.aws/credentials`) and the shared config file (`AWS_CONFIG_FILE`,
//!    else `~/.aws/config`, where the profile's section is `[profile NAME]`).
//!
//! The region comes from `AWS_REGION`, `AWS_DEFAULT_REGION`, or the
//! profile's `region`. A profile that gets its credentials some other way
//! (an assumed role, single sign-on, a credential process) is named in the
//! error of the first request, and an instance's or container's role is
//! not fetched: give such credentials with
//! [`Converse::credentials`](super::bedrock::Converse::credentials).

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::SystemTime;

use reqwest::header::{HeaderMap, HeaderName};

use crate::model::ModelError;

/// AWS credentials: an access key, its secret, and the session token of
/// temporary credentials. `Debug` shows the access key id only.
#[derive(Clone, PartialEq, Eq)]
pub struct AwsCredentials {
    access_key_id: String,
    secret_access_key: String,
    session_token: Option<String>,
}

impl fmt::Debug for AwsCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AwsCredentials")
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"***")
            .field("session_token", &self.session_token.as_ref().map(|_| "***"))
            .finish()
    }
}

impl AwsCredentials {
    /// Long-term credentials: an access key id and its secret.
    pub fn new(access_key_id: impl Into<String>, secret_access_key: impl Into<String>) -> Self {
        Self {
            access_key_id: access_key_id.into(),
            secret_access_key: secret_access_key.into(),
            session_token: None,
        }
    }

    /// With the session token of temporary credentials (from STS).
    #[must_use]
    pub fn session_token(mut self, token: impl Into<String>) -> Self {
        self.session_token = Some(token.into());
        self
    }

    /// The access key id.
    pub fn access_key_id(&self) -> &str {
        &self.access_key_id
    }

    /// From `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and
    /// `AWS_SESSION_TOKEN`, when the first two are set.
    pub fn from_env() -> Option<Self> {
        let var = |name: &str| std::env::var(name).ok().filter(|value| !value.is_empty());
        let mut credentials = Self::new(var("AWS_ACCESS_KEY_ID")?, var("AWS_SECRET_ACCESS_KEY")?);
        credentials.session_token = var("AWS_SESSION_TOKEN");
        Some(credentials)
    }
}

/// What the environment and the shared files say: the credentials (or why
/// there are none) and the region.
#[derive(Debug, Clone)]
pub(crate) struct Found {
    pub credentials: Result<AwsCredentials, String>,
    pub region: Option<String>,
}

/// The region `AWS_REGION` or `AWS_DEFAULT_REGION` names.
pub(crate) fn env_region() -> Option<String> {
    var("AWS_REGION").or_else(|| var("AWS_DEFAULT_REGION"))
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.is_empty())
}

/// Credentials and region as the AWS SDKs find them.
pub(crate) fn find() -> Found {
    let profile_name = var("AWS_PROFILE").unwrap_or_else(|| "default".to_owned());
    let profile = Profile::load(&profile_name);
    let region = env_region().or_else(|| profile.get("region").map(str::to_owned));
    let credentials = match AwsCredentials::from_env() {
        Some(credentials) => Ok(credentials),
        None => profile.credentials(&profile_name),
    };
    Found {
        credentials,
        region,
    }
}

/// The credentials and region of profile `name` of the shared files.
pub(crate) fn find_profile(name: &str) -> Found {
    let profile = Profile::load(name);
    Found {
        credentials: profile.credentials(name),
        region: profile.get("region").map(str::to_owned),
    }
}

/// One profile's settings: its section of the config file, with its
/// section of the credentials file over it.
#[derive(Debug, Default)]
struct Profile(BTreeMap<String, String>);

impl Profile {
    fn load(name: &str) -> Self {
        let home = || {
            std::env::var_os("HOME")
                .or_else(|| std::env::var_os("USERPROFILE"))
                .map(PathBuf::from)
        };
        let file = |variable: &str, default: &str| {
            std::env::var_os(variable)
                .map(PathBuf::from)
                .or_else(|| home().map(|home| home.join(".aws").join(default)))
        };
        let read = |path: Option<PathBuf>| {
            path.and_then(|path| std::fs::read_to_string(path).ok())
                .unwrap_or_default()
        };
        Self::from_files(
            &read(file("AWS_CONFIG_FILE", "config")),
            &read(file("AWS_SHARED_CREDENTIALS_FILE", "credentials")),
            name,
        )
    }

    /// Profile `name` of a config file's and a credentials file's texts:
    /// the config file's `[profile NAME]` (`[default]` for the default),
    /// with the credentials file's `[NAME]` over it.
    fn from_files(config: &str, credentials: &str, name: &str) -> Self {
        let mut settings = if name == "default" {
            // The default profile may also be `[profile default]`.
            let plain = section(config, "default");
            if plain.is_empty() {
                section(config, "profile default")
            } else {
                plain
            }
        } else {
            section(config, &format!("profile {name}"))
        };
        settings.extend(section(credentials, name));
        Self(settings)
    }

    fn get(&self, key: &str) -> Option<&str> {
        self.0
            .get(key)
            .map(String::as_str)
            .filter(|value| !value.is_empty())
    }

    /// The profile's static credentials, or why it has none.
    fn credentials(&self, name: &str) -> Result<AwsCredentials, String> {
        if let (Some(id), Some(secret)) = (
            self.get("aws_access_key_id"),
            self.get("aws_secret_access_key"),
        ) {
            let mut credentials = AwsCredentials::new(id, secret);
            credentials.session_token = self.get("aws_session_token").map(str::to_owned);
            return Ok(credentials);
        }
        let other_ways = [
            ("role_arn", "an assumed role"),
            ("sso_session", "single sign-on"),
            ("sso_start_url", "single sign-on"),
            ("credential_process", "a credential process"),
            ("web_identity_token_file", "a web identity"),
        ];
        if let Some((key, way)) = other_ways.iter().find(|(key, _)| self.get(key).is_some()) {
            return Err(format!(
                "the AWS profile `{name}` gets its credentials through {way} (`{key}`), which \
                 behest does not resolve: give the credentials with `.credentials(..)`"
            ));
        }
        Err(
            "no AWS credentials were found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY \
             (and AWS_SESSION_TOKEN for temporary ones), name a profile of ~/.aws/credentials \
             with AWS_PROFILE, set a Bedrock API key in AWS_BEARER_TOKEN_BEDROCK, or give \
             credentials with `.credentials(..)`"
                .to_owned(),
        )
    }
}

/// The `key = value` lines of section `[name]` of an INI file as the AWS
/// shared files write them (`#` and `;` comments, names trimmed).
fn section(text: &str, name: &str) -> BTreeMap<String, String> {
    let mut settings = BTreeMap::new();
    let mut inside = false;
    // Under a key with no value (`s3 =`), the indented lines are its
    // nested settings, none of them the profile's own.
    let mut nested = false;
    for raw in text.lines() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if nested && raw.starts_with(char::is_whitespace) {
            continue;
        }
        nested = false;
        if let Some(header) = line
            .strip_prefix('[')
            .and_then(|rest| rest.strip_suffix(']'))
        {
            let header = header.split_whitespace().collect::<Vec<_>>().join(" ");
            inside = header == name;
            continue;
        }
        if let Some((key, value)) = line.split_once('=') {
            if value.trim().is_empty() {
                nested = true;
            } else if inside {
                settings.insert(key.trim().to_owned(), value.trim().to_owned());
            }
        }
    }
    settings
}

/// Signs requests for one service in one region with Signature Version 4.
#[derive(Clone)]
pub(crate) struct SigV4 {
    pub service: &'static str,
    pub region: String,
    /// Whether the region was given in code or by the environment's
    /// variables (which a profile's region does not override).
    pub region_set: bool,
    pub credentials: Result<AwsCredentials, String>,
}

impl fmt::Debug for SigV4 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigV4")
            .field("service", &self.service)
            .field("region", &self.region)
            .field("credentials", &self.credentials.as_ref().ok())
            .finish()
    }
}

impl SigV4 {
    /// Adds the signature of the request (`Authorization`, `X-Amz-Date`,
    /// and `X-Amz-Security-Token` for temporary credentials) to `headers`,
    /// over the headers given and the body's SHA-256, as of `now`.
    pub(crate) fn sign(
        &self,
        method: &str,
        url: &str,
        headers: &mut HeaderMap,
        body: &[u8],
        now: SystemTime,
    ) -> Result<(), ModelError> {
        use aws_sigv4::http_request::{sign, SignableBody, SignableRequest, SigningSettings};

        let credentials = self
            .credentials
            .as_ref()
            .map_err(|why| ModelError::new(why.clone()).with_kind("credentials"))?;
        if self.region.is_empty() {
            return Err(ModelError::new(
                "the request cannot be signed without a region: set AWS_REGION or give one with \
                 `.region(..)`",
            ));
        }
        // The signer parses the address as an `http::Uri` and requires its
        // host: checked here the same way, so that it cannot panic.
        let has_host = url
            .parse::<http::Uri>()
            .is_ok_and(|uri| uri.host().is_some_and(|host| !host.is_empty()));
        if !has_host {
            return Err(ModelError::new(format!(
                "`{url}` is no URL a request can be signed for"
            )));
        }
        let identity = aws_credential_types::Credentials::new(
            &credentials.access_key_id,
            &credentials.secret_access_key,
            credentials.session_token.clone(),
            None,
            "behest",
        )
        .into();
        let params = aws_sigv4::sign::v4::SigningParams::builder()
            .identity(&identity)
            .region(&self.region)
            .name(self.service)
            .time(now)
            .settings(SigningSettings::default())
            .build()
            .map_err(|error| ModelError::new(format!("the request could not be signed: {error}")))?
            .into();
        // The body's digest by ring (its SHA-256 in assembly), handed to
        // the signer done: hashing is most of what signing costs.
        let digest = ring::digest::digest(&ring::digest::SHA256, body);
        let signable = SignableRequest::new(
            method,
            url,
            headers
                .iter()
                .filter_map(|(name, value)| Some((name.as_str(), value.to_str().ok()?))),
            SignableBody::Precomputed(hex(digest.as_ref())),
        )
        .map_err(|error| ModelError::new(format!("the request could not be signed: {error}")))?;
        let (instructions, _signature) = sign(signable, &params)
            .map_err(|error| ModelError::new(format!("the request could not be signed: {error}")))?
            .into_parts();
        for (name, value) in instructions.headers() {
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| ModelError::new("the signer gave a header name that is not valid"))?;
            // Marked sensitive: `Debug` of the request does not show it.
            let mut value = reqwest::header::HeaderValue::from_str(value)
                .map_err(|_| ModelError::new("the signer gave a header value that is not valid"))?;
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        Ok(())
    }
}

/// Lowercase hexadecimal, as SigV4 writes a digest.
fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    bytes
        .iter()
        .flat_map(|byte| [byte >> 4, byte & 0xf])
        .map(|nibble| char::from(DIGITS[usize::from(nibble)]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_of_the_shared_files_are_read() {
        let text = "\
# a comment
[default]
region = eu-west-1
aws_access_key_id = AKIDDEFAULT

[profile  work ]
region=us-east-2
; another comment
aws_access_key_id = AKIDWORK
aws_secret_access_key = secret/with=equals
s3 =
  max_concurrent_requests = 2
output = json
";
        let default = section(text, "default");
        assert_eq!(default["region"], "eu-west-1");
        let work = section(text, "profile work");
        assert_eq!(work["aws_secret_access_key"], "secret/with=equals");
        assert_eq!(work["region"], "us-east-2");
        assert!(!work.contains_key("max_concurrent_requests"), "{work:?}");
        assert!(!work.contains_key("s3"));
        assert_eq!(work["output"], "json");
        assert!(section(text, "work").is_empty());
    }

    #[test]
    fn profiles_are_read_from_both_files_the_credentials_file_winning() {
        let config = "\
[default]
region = eu-west-1

[profile work]
region = us-east-2
aws_access_key_id = AKIDFROMCONFIG
aws_secret_access_key = from-config

[work]
region = ignored-here
";
        let credentials = "\
[work]
aws_access_key_id = AKIDWORK
aws_secret_access_key = work-secret
aws_session_token = work-token

[default]
aws_access_key_id = AKIDDEFAULT
aws_secret_access_key = default-secret
";
        let work = Profile::from_files(config, credentials, "work");
        assert_eq!(work.get("region"), Some("us-east-2"));
        let keys = work.credentials("work").unwrap();
        assert_eq!(keys.access_key_id(), "AKIDWORK");
        assert_eq!(keys.session_token.as_deref(), Some("work-token"));
        let default = Profile::from_files(config, credentials, "default");
        assert_eq!(default.get("region"), Some("eu-west-1"));
        assert_eq!(
            default.credentials("default").unwrap().access_key_id(),
            "AKIDDEFAULT"
        );
        // `[profile default]` in the config file is the default profile too.
        let only_profile =
            Profile::from_files("[profile default]\nregion = ap-south-1\n", "", "default");
        assert_eq!(only_profile.get("region"), Some("ap-south-1"));
        // A profile in neither file has nothing.
        assert!(Profile::from_files(config, credentials, "other")
            .0
            .is_empty());
    }

    #[test]
    fn a_profile_without_keys_says_where_its_credentials_come_from() {
        let profile = Profile(
            [("role_arn".to_owned(), "arn:aws:iam::1:role/r".to_owned())]
                .into_iter()
                .collect(),
        );
        let why = profile.credentials("ops").unwrap_err();
        assert!(why.contains("`ops`") && why.contains("role_arn"), "{why}");
        let why = Profile::default().credentials("default").unwrap_err();
        assert!(why.contains("AWS_ACCESS_KEY_ID") && why.contains("AWS_BEARER_TOKEN_BEDROCK"));
        let debug = format!(
            "{:?}",
            AwsCredentials::new("AKID", "s3cr3t").session_token("t0k3n")
        );
        assert!(debug.contains("AKID") && !debug.contains("s3cr3t") && !debug.contains("t0k3n"));
    }

    /// The example of the SigV4 documentation's test suite
    /// (`get-vanilla`): the same signature for the same request, key and
    /// time.
    #[test]
    fn the_signature_is_the_documented_one() {
        let signer = SigV4 {
            service: "service",
            region: "us-east-1".to_owned(),
            region_set: true,
            credentials: Ok(AwsCredentials::new(
                "AKIDEXAMPLE",
                "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            )),
        };
        let mut headers = HeaderMap::new();
        let at = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_440_938_160);
        signer
            .sign(
                "GET",
                "https://example.amazonaws.com/",
                &mut headers,
                b"",
                at,
            )
            .unwrap();
        assert_eq!(headers["x-amz-date"], "20150830T123600Z");
        assert_eq!(
            headers["authorization"],
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, \
             SignedHeaders=host;x-amz-date, \
             Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
        );
        let unsigned = SigV4 {
            credentials: Err("none here".to_owned()),
            ..signer
        };
        let error = unsigned
            .sign(
                "GET",
                "https://example.amazonaws.com/",
                &mut headers,
                b"",
                at,
            )
            .unwrap_err();
        assert_eq!(error.kind.as_deref(), Some("credentials"));
    }

    /// The signer requires a host (it would panic without one): an address
    /// without one is an error that names it.
    #[test]
    fn an_address_without_a_host_is_refused() {
        let signer = SigV4 {
            service: "bedrock",
            region: "us-east-1".to_owned(),
            region_set: true,
            credentials: Ok(AwsCredentials::new("AKID", "secret")),
        };
        for url in ["/model/m/converse", "http:///model/m/converse", "not a url"] {
            let error = signer
                .sign("POST", url, &mut HeaderMap::new(), b"{}", SystemTime::now())
                .unwrap_err();
            assert!(
                error.message.contains("no URL a request can be signed for"),
                "{url}: {error}"
            );
        }
        let mut headers = HeaderMap::new();
        signer
            .sign(
                "POST",
                "http://127.0.0.1:8080/model/m/converse",
                &mut headers,
                b"{}",
                SystemTime::now(),
            )
            .unwrap();
        assert!(headers.contains_key("authorization"));
    }
}
