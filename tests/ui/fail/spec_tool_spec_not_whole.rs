fn main() {
    let _spec: behest::ToolSpec = behest::tool_spec!("../../../../tests/ui/specs/bare_schema.json");
}
