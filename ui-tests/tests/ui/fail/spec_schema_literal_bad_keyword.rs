fn main() {
    let _schema = behest::schema!({
        "type": "object",
        "properties": {"n": {"type": "integer", "maximum": "ten"}}
    });
}
