fn main() {
    let _schema = behest::schema!({"type": "array", "items": {"type": "string"}});
}
