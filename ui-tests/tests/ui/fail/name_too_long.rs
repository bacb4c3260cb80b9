use behest::tool;

/// A tool whose function name is 65 characters long.
#[tool]
fn a_function_name_that_is_far_too_long_for_any_provider_to_accept_xx() {}

fn main() {}
