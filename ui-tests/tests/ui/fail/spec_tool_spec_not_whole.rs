fn main() {
    let _spec: behest::ToolSpec = behest::tool_spec!("../../../../ui-tests/tests/ui/specs/bare_schema.json");
}
