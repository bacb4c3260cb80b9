//! What `#[tool]`, `#[tools]` and `#[external_tool]` generate, run through
//! the runtime.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use behest::{
    external_tool, tool, tools, ExternalToolArgs, State, Tool, ToolCall, ToolContext, ToolError,
    ToolOutput, ToolRegistry, ToolRuntime,
};
use serde_json::json;

#[doc = include_str!("../docs/convert.md")]
#[tool(
    timeout = "250ms",
    strict,
    title = "Currency converter",
    name = "convert_currency"
)]
fn convert(amount: f64, r#type: String) -> String {
    format!("{amount} {type}", type = r#type)
}

/// Tag an item.
#[tool(allow_unknown_arguments)]
fn tag(item: String) -> String {
    item
}

/// Fails with a typed error.
#[tool]
async fn fail_io(path: String) -> Result<u8, std::io::Error> {
    Err(std::io::Error::new(std::io::ErrorKind::NotFound, path))
}

/// Fails with a tool error.
#[tool]
async fn fail_tool() -> Result<String, ToolError> {
    Err(ToolError::invalid_argument("/x", "x is wrong"))
}

struct Prefix {
    text: String,
}

/// Greet with the configured prefix.
#[tool]
async fn greet(name: String, #[ctx] prefix: State<Prefix>, #[ctx] cx: ToolContext) -> String {
    format!("{} {name} ({})", prefix.text, cx.call_id())
}

#[tokio::test]
async fn names_descriptions_and_options_come_from_the_code() {
    let spec = Convert.spec();
    assert_eq!(spec.name, "convert_currency");
    assert_eq!(
        spec.description,
        "Convert an amount between currencies.\n\nRates are from the last market close."
    );
    assert_eq!(
        spec.annotations.title.as_deref(),
        Some("Currency converter")
    );
    assert!(
        spec.parameters["properties"]["type"].is_object(),
        "r#type is `type` on the wire"
    );
    assert_eq!(Convert.timeout(), Some(Duration::from_millis(250)));
    assert!(Convert.strict());
    assert!(!Tag.strict());
    assert_eq!(Tag.timeout(), None);
    let output = Convert
        .execute(json!({"amount": 2.5, "type": "EUR"}))
        .await
        .unwrap();
    assert_eq!(output, ToolOutput::text("2.5 EUR"));
    // The function itself stays callable as written.
    assert_eq!(convert(1.0, "USD".into()), "1 USD");
}

#[tokio::test]
async fn unknown_arguments_are_refused_unless_allowed() {
    let mut registry = ToolRegistry::new();
    registry.register_tool(Arc::new(Convert)).unwrap();
    registry.register_tool(Arc::new(Tag)).unwrap();
    let runtime = ToolRuntime::new(registry);
    let refused = runtime
        .call(ToolCall::new(
            "a",
            "convert_currency",
            json!({"amount": 1, "type": "EUR", "rate": 2}),
        ))
        .await;
    assert_eq!(
        refused.to_model_text(),
        "the arguments are invalid: `/rate`: `rate` is not an accepted field; valid fields: `amount`, `type`\nfix the arguments and call the tool again"
    );
    let allowed = runtime
        .call(ToolCall::new(
            "b",
            "tag",
            json!({"item": "x", "color": "red"}),
        ))
        .await;
    assert_eq!(allowed.outcome.unwrap(), ToolOutput::text("x"));
}

#[tokio::test]
async fn error_types_become_error_results() {
    let error = FailIo.execute(json!({"path": "/tmp/x"})).await.unwrap_err();
    assert!(matches!(
        &error,
        ToolError::Execution {
            source: Some(_),
            ..
        }
    ));
    assert_eq!(error.to_string(), "/tmp/x");
    let error = FailTool.execute(json!({})).await.unwrap_err();
    assert!(
        matches!(error, ToolError::InvalidArguments { .. }),
        "a ToolError stays as it is"
    );
}

#[tokio::test]
async fn ctx_parameters_are_injected_and_missing_state_is_an_error() {
    assert!(!Greet.spec().parameters["properties"]
        .as_object()
        .unwrap()
        .contains_key("prefix"));
    let mut registry = ToolRegistry::new();
    registry.register_tool(Arc::new(Greet)).unwrap();
    let runtime = ToolRuntime::builder(registry.clone())
        .state(Prefix {
            text: "Hello".into(),
        })
        .build();
    let result = runtime
        .call(ToolCall::new("call_9", "greet", json!({"name": "Ada"})))
        .await;
    assert_eq!(
        result.outcome.unwrap(),
        ToolOutput::text("Hello Ada (call_9)")
    );

    let without_state = ToolRuntime::new(registry);
    let result = without_state
        .call(ToolCall::new("c", "greet", json!({"name": "Ada"})))
        .await;
    let error = result.outcome.unwrap_err();
    assert!(
        error.to_string().contains("not configured correctly"),
        "{error}"
    );
}

struct Account {
    balance: AtomicU64,
}

#[tools]
impl Account {
    /// Deposit an amount and return the new balance.
    #[tool(idempotent = false)]
    async fn deposit(&self, amount: u64) -> u64 {
        self.balance.fetch_add(amount, Ordering::SeqCst) + amount
    }

    /// The current balance.
    #[tool(read_only)]
    fn balance(&self) -> u64 {
        self.balance.load(Ordering::SeqCst)
    }

    /// The currency of every account.
    #[tool]
    fn currency() -> &'static str {
        "EUR"
    }
}

#[tokio::test]
async fn method_tools_share_one_instance() {
    let account = Arc::new(Account {
        balance: AtomicU64::new(10),
    });
    let mut registry = ToolRegistry::new();
    registry.register_all(account.clone().tools()).unwrap();
    assert_eq!(
        registry.names().collect::<Vec<_>>(),
        ["deposit", "balance", "currency"]
    );
    let runtime = ToolRuntime::new(registry);
    let deposit = runtime
        .call(ToolCall::new("a", "deposit", json!({"amount": 5})))
        .await;
    assert_eq!(deposit.outcome.unwrap(), ToolOutput::json(json!(15)));
    let balance = runtime.call(ToolCall::new("b", "balance", "")).await;
    assert_eq!(balance.outcome.unwrap(), ToolOutput::json(json!(15)));
    assert_eq!(account.balance.load(Ordering::SeqCst), 15);
    let currency = runtime
        .call(ToolCall::new("c", "currency", json!({})))
        .await;
    assert_eq!(currency.outcome.unwrap(), ToolOutput::text("EUR"));
    assert_eq!(
        Balance(account).spec().annotations.read_only_hint,
        Some(true)
    );
}

struct Pager {
    page_size: u32,
}

#[tools]
impl Pager {
    /// List items, a page at a time.
    #[tool]
    fn list(&self, #[arg(default = self.0.page_size)] size: u32) -> u32 {
        size
    }
}

#[tokio::test]
async fn a_default_may_read_the_instance() {
    let pager = Arc::new(Pager { page_size: 25 });
    let spec = List(pager.clone()).spec();
    assert_eq!(spec.parameters["properties"]["size"]["default"], json!(25));
    let mut registry = ToolRegistry::new();
    registry.register_all(pager.tools()).unwrap();
    let runtime = ToolRuntime::new(registry);
    let listed = runtime.call(ToolCall::new("a", "list", json!({}))).await;
    assert_eq!(listed.outcome.unwrap(), ToolOutput::json(json!(25)));
}

/// How many times `counted_default` ran: once per build of the spec of
/// `counted`, whose default it gives.
static DEFAULT_BUILDS: AtomicU64 = AtomicU64::new(0);

fn counted_default() -> u32 {
    DEFAULT_BUILDS.fetch_add(1, Ordering::SeqCst);
    7
}

/// Count with a default built by a function.
#[tool]
fn counted(#[arg(default = counted_default())] step: u32) -> u32 {
    step
}

#[tokio::test]
async fn a_tool_spec_is_built_on_first_use_and_then_shared_by_its_type() {
    let first = Counted.spec();
    let again = Counted.spec();
    assert_eq!(first, again);
    assert_eq!(first.parameters["properties"]["step"]["default"], json!(7));
    // A registration asks for the spec too; the function reads none again.
    let mut registry = ToolRegistry::new();
    registry.register_tool(Arc::new(Counted)).unwrap();
    let runtime = ToolRuntime::new(registry);
    let run = runtime.call(ToolCall::new("a", "counted", json!({}))).await;
    assert_eq!(run.outcome.unwrap(), ToolOutput::json(json!(7)));
    // Built once for the spec; the call above reads the default for itself.
    assert_eq!(DEFAULT_BUILDS.load(Ordering::SeqCst), 2);
    // Another tool type has a spec of its own.
    assert_eq!(Tag.spec().name, "tag");
    assert_eq!(Counted.spec().name, "counted");
    assert_eq!(DEFAULT_BUILDS.load(Ordering::SeqCst), 2);
}

/// Scale by a step whose default is read from another tool's spec.
#[tool]
fn scaled(#[arg(default = Tag.spec().name.len() as u32)] step: u32) -> u32 {
    step
}

#[test]
fn a_spec_may_read_another_tools_spec_as_it_is_built() {
    let spec = Scaled.spec();
    assert_eq!(spec.parameters["properties"]["step"]["default"], json!(3));
}

/// Echo a word; its spec is asked for by many threads at once.
#[tool]
fn echo_word(word: String) -> String {
    word
}

#[test]
fn many_threads_asking_for_a_new_tool_spec_at_once_all_get_the_same() {
    let specs: Vec<_> = std::thread::scope(|scope| {
        let asking: Vec<_> = (0..8).map(|_| scope.spawn(|| EchoWord.spec())).collect();
        asking.into_iter().map(|ask| ask.join().unwrap()).collect()
    });
    assert!(specs.iter().all(|spec| *spec == specs[0]));
    assert_eq!(specs[0].name, "echo_word");
    assert_eq!(specs[0].parameters["required"], json!(["word"]));
}

/// Search the web.
#[external_tool]
struct WebSearch {
    query: String,
    #[serde(rename = "max_results")]
    limit: Option<u8>,
}

/// Fetch a page; the user derives everything already.
#[external_tool(name = "fetch", read_only)]
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct FetchPage {
    /// The page's address.
    #[serde(rename = "url")]
    address: String,
}

/// Only `Deserialize` is derived by the user.
#[external_tool]
#[derive(serde::Deserialize)]
struct Translate {
    #[serde(default)]
    text: String,
}

#[test]
fn external_tools_work_with_and_without_user_derives() {
    let search = WebSearch::spec();
    assert_eq!(search.name, "web_search");
    assert!(
        search.parameters["properties"]["max_results"].is_object(),
        "serde renames apply"
    );
    let call = ToolCall::new("1", "web_search", r#"{"query": "q", "max_results": 2}"#);
    let parsed = WebSearch::from_call(&call).unwrap();
    assert_eq!((parsed.query.as_str(), parsed.limit), ("q", Some(2)));

    assert_eq!(FetchPage::TOOL_NAME, "fetch");
    assert_eq!(FetchPage::spec().annotations.read_only_hint, Some(true));
    let page =
        FetchPage::from_call(&ToolCall::new("2", "fetch", json!({"url": "https://x"}))).unwrap();
    assert_eq!(page.address, "https://x");

    let translate = Translate::from_call(&ToolCall::new("3", "translate", json!({}))).unwrap();
    assert_eq!(translate.text, "");
}

#[test]
fn external_calls_get_the_runtime_s_argument_errors() {
    let Err(error) = WebSearch::from_call(&ToolCall::new("1", "web_search", "[1]")) else {
        panic!("refused")
    };
    assert!(
        error.to_string().contains("must be a JSON object"),
        "{error}"
    );
    let Err(error) = WebSearch::from_call(&ToolCall::new(
        "1",
        "web_search",
        json!({"query": 1, "extra": 2}),
    )) else {
        panic!("refused")
    };
    let ToolError::InvalidArguments { issues, .. } = error else {
        panic!("argument error")
    };
    let paths: Vec<&str> = issues.iter().map(|issue| issue.path.as_str()).collect();
    assert_eq!(paths, ["/extra", "/query"]);
    let Err(error) = WebSearch::from_call(&ToolCall::new("1", "fetch", json!({"query": "q"})))
    else {
        panic!("refused")
    };
    assert!(
        matches!(error, ToolError::NotFound { .. }),
        "a call of another tool is refused"
    );
}

/// How often `count_start`'s body ran.
static STARTS: AtomicU64 = AtomicU64::new(0);

/// Count a start.
#[tool]
fn count_start(step: u64) -> u64 {
    STARTS.fetch_add(step, Ordering::SeqCst) + step
}

/// Hold the only place for a while.
#[tool]
async fn hold_place() -> String {
    tokio::time::sleep(Duration::from_millis(50)).await;
    "held".to_owned()
}

#[tokio::test]
async fn a_plain_fn_tool_runs_only_once_its_call_holds_a_place() {
    let mut registry = ToolRegistry::new();
    registry
        .register_tool(Arc::new(HoldPlace))
        .unwrap()
        .register_tool(Arc::new(CountStart))
        .unwrap();
    let runtime = ToolRuntime::builder(registry)
        .max_concurrent_calls(1)
        .build();
    let first = runtime.call(ToolCall::new("1", "hold_place", "{}"));
    // On the text route, which reads the arguments before the call
    // waits for a place.
    let second = runtime.call(ToolCall::new("2", "count_start", r#"{"step": 1}"#));
    futures::pin_mut!(first, second);
    assert!(futures::poll!(&mut first).is_pending());
    // The body would run here if the tool's future ran it when it was
    // made rather than when first polled with a place.
    assert!(futures::poll!(&mut second).is_pending());
    assert_eq!(STARTS.load(Ordering::SeqCst), 0);
    assert!(first.await.outcome.is_ok());
    let counted = second.await.outcome.unwrap();
    assert_eq!(counted, ToolOutput::json(1));
    assert_eq!(STARTS.load(Ordering::SeqCst), 1);
}

/// How often `step_default`'s default was made.
static DEFAULTS_MADE: AtomicU64 = AtomicU64::new(0);

fn step_default() -> u64 {
    DEFAULTS_MADE.fetch_add(1, Ordering::SeqCst);
    2
}

/// Count with a default step.
#[tool]
async fn count_default(#[arg(default = step_default())] step: u64) -> u64 {
    step
}

/// A default of an `async fn` is code of the tool's: it runs when the call
/// is made on the first poll, once the call holds a place, as the body's
/// own code does.
#[tokio::test]
async fn an_async_tool_s_default_runs_only_once_its_call_holds_a_place() {
    let mut registry = ToolRegistry::new();
    registry
        .register_tool(Arc::new(HoldPlace))
        .unwrap()
        .register_tool(Arc::new(CountDefault))
        .unwrap();
    let runtime = ToolRuntime::builder(registry)
        .max_concurrent_calls(1)
        .build();
    // The spec shows the default: made once, as the tool was registered.
    let before = DEFAULTS_MADE.load(Ordering::SeqCst);
    let first = runtime.call(ToolCall::new("1", "hold_place", "{}"));
    let second = runtime.call(ToolCall::new("2", "count_default", "{}"));
    futures::pin_mut!(first, second);
    assert!(futures::poll!(&mut first).is_pending());
    assert!(futures::poll!(&mut second).is_pending());
    assert_eq!(DEFAULTS_MADE.load(Ordering::SeqCst), before);
    assert!(first.await.outcome.is_ok());
    assert_eq!(second.await.outcome.unwrap(), ToolOutput::json(2));
    assert_eq!(DEFAULTS_MADE.load(Ordering::SeqCst), before + 1);
}

/// A type of the user's with the name the generated arguments struct of
/// `search` also has.
mod types {
    /// What to look for.
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    pub struct SearchArgs {
        /// The words.
        pub text: String,
    }
}

/// Search for the words.
#[tool]
fn search(query: types::SearchArgs) -> String {
    format!("results for {}", query.text)
}

/// The user's `SearchArgs` keeps its own definition beside the generated
/// struct of the same name, rather than being taken for a reference back to
/// the arguments object.
#[tokio::test]
async fn a_user_type_named_like_the_arguments_struct_keeps_its_schema() {
    let parameters = Search.spec().parameters;
    assert_eq!(
        parameters["properties"]["query"]["$ref"],
        json!("#/$defs/SearchArgs"),
        "{parameters:#}"
    );
    assert_eq!(
        parameters["$defs"]["SearchArgs"]["required"],
        json!(["text"]),
        "{parameters:#}"
    );
    let runtime = ToolRuntime::new(ToolRegistry::new().with(Search).unwrap());
    for arguments in [
        json!({"query": {"text": "rust"}}),
        json!(r#"{"query": {"text": "rust"}}"#),
    ] {
        let result = runtime.call(ToolCall::new("1", "search", arguments)).await;
        assert_eq!(
            result.outcome.unwrap(),
            ToolOutput::text("results for rust")
        );
    }
}
