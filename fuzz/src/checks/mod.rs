//! One module per fuzz target, each with `check(data: &[u8])`: it panics
//! when behest breaks a promise on that input (a panic of its own, a hang,
//! a call without exactly one result, two routes that disagree).

pub mod call_pipeline;
#[cfg(feature = "models")]
pub mod eventstream;
#[cfg(feature = "mcp")]
pub mod mcp_messages;
pub mod partial_json;
pub mod providers;
pub mod schemas;
pub mod session_rows;
#[cfg(feature = "models")]
pub mod sse;
pub mod stream_mutants;

/// A body read by `read` whole and cut into pieces: the first byte of
/// `data` says how long the pieces are (1 to 256 bytes), the rest is the
/// body. Both reads agree (the same events, or both an error); the body
/// and what the whole read gave, or `None` for empty `data`.
#[cfg(feature = "models")]
pub(crate) fn read_whole_and_cut<T: PartialEq + std::fmt::Debug>(
    data: &[u8],
    read: fn(Vec<bytes::Bytes>) -> Result<T, behest::ModelError>,
) -> Option<(&[u8], Result<T, behest::ModelError>)> {
    let (&piece, body) = data.split_first()?;
    let whole = read(vec![bytes::Bytes::copy_from_slice(body)]);
    let piece = usize::from(piece) + 1;
    let chunks = body
        .chunks(piece)
        .map(bytes::Bytes::copy_from_slice)
        .collect();
    let cut = read(chunks);
    match (&whole, &cut) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "pieces of {piece}"),
        (Err(_), Err(_)) => {}
        _ => panic!("pieces of {piece}: {whole:?} / {cut:?}"),
    }
    Some((body, whole))
}

/// `events` through every provider's stream assembler, each pushed to
/// all five, then each assembler finished: each returns, none panics.
pub(crate) fn through_every_assembler<'a>(events: impl IntoIterator<Item = &'a serde_json::Value>) {
    use behest::providers::{anthropic, bedrock, gemini, openai, StreamAssembler};

    let mut converse = bedrock::Stream::new();
    let mut chat = openai::chat::Stream::new();
    let mut responses = openai::responses::Stream::new();
    let mut messages = anthropic::Stream::new();
    let mut gemini_stream = gemini::Stream::new();
    for event in events {
        let _ = chat.push(event);
        let _ = responses.push(event);
        let _ = messages.push(event);
        let _ = gemini_stream.push(event);
        let _ = converse.push(event);
    }
    let _ = (
        converse.finish(),
        chat.finish(),
        responses.finish(),
        messages.finish(),
        gemini_stream.finish(),
    );
}

/// A current-thread tokio runtime for this thread, made once.
pub(crate) fn block_on<F: std::future::Future>(future: F) -> F::Output {
    thread_local! {
        static RUNTIME: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime");
    }
    RUNTIME.with(|runtime| runtime.block_on(future))
}
