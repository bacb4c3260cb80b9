/// Pay.
#[behest::external_tool(schema = "../../../../ui-tests/tests/ui/specs/meta_fail.json")]
struct Pay {
    card: Option<String>,
    billing: Option<String>,
}

fn main() {}
