//! Rows a session store reads back, as another program or a bad disk may
//! have left them: a message row (its role, then its JSON) and a paused
//! run's JSON. Reading one never panics; what reads as a message or a
//! paused run encodes back to a row that reads the same. The first byte
//! picks the role (or, past the roles, a paused run).

use behest::run::session::{codec, Change, Commit};
use behest::run::SessionId;

const ROLES: [&str; 6] = [
    "system",
    "user",
    "user_parts",
    "assistant",
    "tool_result",
    "robot",
];

pub fn check(data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let session = SessionId::new("fuzz").expect("an id");
    match ROLES.get(usize::from(pick) % (ROLES.len() + 1)) {
        Some(role) => {
            let Ok(message) = codec::message(&session, 7, role, text) else {
                return;
            };
            let messages = [message];
            let commit = Commit {
                messages: Some(Change::Append(&messages)),
                run: None,
            };
            let encoded = codec::encode(&commit).expect("a message read encodes");
            let (role, body) = &encoded.messages[0];
            let again = codec::message(&session, 7, role, body).expect("its row reads");
            assert_eq!(again, messages[0], "{text:?}");
        }
        None => {
            let Ok(run) = codec::paused_run(&session, text) else {
                return;
            };
            let text = serde_json::to_string(&run).expect("a paused run encodes");
            let again = codec::paused_run(&session, &text).expect("its row reads");
            assert_eq!(again, run);
        }
    }
}
