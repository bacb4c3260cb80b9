/// The order of results.
#[behest::data(input)]
#[serde(rename_all = "snake_case")]
enum Order {
    Newest,
    Oldest,
    MostRead,
}

/// Search.
#[behest::external_tool(schema = "../../../../ui-tests/tests/ui/specs/ordering.json")]
struct Search {
    query: String,
    order: Order,
}

fn main() {}
