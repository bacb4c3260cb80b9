use behest::tool;

struct ReportData {
    lines: Vec<String>,
}

/// Make a report.
#[tool]
async fn report(title: String) -> ReportData {
    ReportData { lines: vec![title] }
}

fn main() {}
