//! The specs `#[tool]` derives, as snapshots: a change to a generated schema
//! is a reviewed change.

use crate::representative;

#[test]
fn representative_specs() {
    for tool in representative::all() {
        insta::assert_json_snapshot!(tool.name().to_owned(), tool.spec());
    }
}

#[test]
fn every_representative_tool_registers() {
    let mut registry = behest::ToolRegistry::new();
    registry.register_all(representative::all()).unwrap();
    assert_eq!(
        registry.names().collect::<Vec<_>>(),
        [
            "plan_trip",
            "send_message",
            "count_nodes",
            "search_docs",
            "now"
        ]
    );
}
