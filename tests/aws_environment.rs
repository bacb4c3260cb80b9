//! Where a Bedrock client's region and credentials come from, as the AWS
//! SDKs decide it: `AWS_REGION` over the profile's region, a region given
//! in code over both, `.profile(..)` over `AWS_PROFILE`, a profile's keys
//! from the shared credentials file over its config file's, the
//! environment's keys over a profile's but one named in code. The region a
//! request is signed for is read from its signature's scope. One test alone
//! in its binary: it sets the process's environment.
#![cfg(feature = "models")]

#[allow(dead_code)]
#[path = "support/models.rs"]
mod models_support;

use behest::models::bedrock::Converse;
use behest::{Message, Model};
use models_support::{Reply, Server};
use serde_json::json;

const CONFIG: &str = "\
[default]
region = eu-north-1

[profile work]
region = us-east-2
aws_access_key_id = AKIDFROMCONFIG
aws_secret_access_key = config-secret
";

const CREDENTIALS: &str = "\
[default]
aws_access_key_id = AKIDDEFAULT
aws_secret_access_key = default-secret

[work]
aws_access_key_id = AKIDWORK
aws_secret_access_key = work-secret
";

/// The access key id and the region of the one request `model` makes, as
/// its signature's scope (`Credential=AKID/DATE/REGION/bedrock/aws4_request`)
/// says.
async fn signed_for(model: Converse) -> (String, String) {
    let server = Server::start([Reply::json(&json!({
        "output": {"message": {"role": "assistant", "content": [{"text": "Hi."}]}},
        "stopReason": "end_turn",
        "usage": {"inputTokens": 3, "outputTokens": 1, "totalTokens": 4}
    }))])
    .await;
    let answer = model
        .base_url(format!("http://{}", server.addr))
        .stream(false)
        .respond(&[Message::user("Hi")], &[])
        .await
        .unwrap();
    assert_eq!(answer.text.as_deref(), Some("Hi."));
    let received = server.received();
    let authorization = received[0].headers["authorization"].to_str().unwrap();
    let scope = authorization
        .split("Credential=")
        .nth(1)
        .and_then(|rest| rest.split(',').next())
        .unwrap();
    let parts: Vec<&str> = scope.split('/').collect();
    assert_eq!(parts[3..], ["bedrock", "aws4_request"], "{authorization}");
    (parts[0].to_owned(), parts[2].to_owned())
}

/// A folder of the test's files, removed when the test ends, passed or not.
struct Scratch(std::path::PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn pair(key: &str, region: &str) -> (String, String) {
    (key.to_owned(), region.to_owned())
}

#[tokio::test]
async fn regions_and_credentials_are_found_as_the_aws_sdks_find_them() {
    let scratch =
        Scratch(std::env::temp_dir().join(format!("behest-aws-env-{}", std::process::id())));
    let dir = &scratch.0;
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("config"), CONFIG).unwrap();
    std::fs::write(dir.join("credentials"), CREDENTIALS).unwrap();
    for variable in [
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_PROFILE",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_BEARER_TOKEN_BEDROCK",
        "AWS_ENDPOINT_URL",
        "AWS_ENDPOINT_URL_BEDROCK_RUNTIME",
    ] {
        std::env::remove_var(variable);
    }
    std::env::set_var("AWS_CONFIG_FILE", dir.join("config"));
    std::env::set_var("AWS_SHARED_CREDENTIALS_FILE", dir.join("credentials"));
    let model = || Converse::new("amazon.nova-pro-v1:0");

    // The default profile: its keys, its region.
    assert_eq!(signed_for(model()).await, pair("AKIDDEFAULT", "eu-north-1"));
    // Another profile: the credentials file's keys over the config file's,
    // and its region over the default profile's.
    assert_eq!(
        signed_for(model().profile("work")).await,
        pair("AKIDWORK", "us-east-2")
    );
    // A region given in code stays, before or after the profile.
    assert_eq!(
        signed_for(model().region("eu-west-1").profile("work")).await,
        pair("AKIDWORK", "eu-west-1")
    );
    assert_eq!(
        signed_for(model().profile("work").region("eu-west-1")).await,
        pair("AKIDWORK", "eu-west-1")
    );
    // `AWS_PROFILE` names the profile the client starts from.
    std::env::set_var("AWS_PROFILE", "work");
    assert_eq!(signed_for(model()).await, pair("AKIDWORK", "us-east-2"));
    // `AWS_REGION` wins over a profile's region, named or found.
    std::env::set_var("AWS_REGION", "ap-south-1");
    assert_eq!(signed_for(model()).await, pair("AKIDWORK", "ap-south-1"));
    std::env::remove_var("AWS_PROFILE");
    assert_eq!(
        signed_for(model().profile("work")).await,
        pair("AKIDWORK", "ap-south-1")
    );
    // The environment's keys win over the default profile's and over the
    // keys of the one `AWS_PROFILE` names.
    std::env::set_var("AWS_ACCESS_KEY_ID", "AKIDFROMENV");
    std::env::set_var("AWS_SECRET_ACCESS_KEY", "env-secret");
    assert_eq!(signed_for(model()).await, pair("AKIDFROMENV", "ap-south-1"));
    std::env::set_var("AWS_PROFILE", "work");
    assert_eq!(signed_for(model()).await, pair("AKIDFROMENV", "ap-south-1"));
    // A profile named in code is chosen over them, as botocore does.
    assert_eq!(
        signed_for(model().profile("work")).await,
        pair("AKIDWORK", "ap-south-1")
    );
}
