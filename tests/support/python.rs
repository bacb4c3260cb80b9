//! A Python of the checkers nobody here wrote (`BEHEST_PYTHON`: google-genai,
//! botocore, google-auth, the official SDKs), run on a script with its input
//! on standard input.

/// Runs `script` with `BEHEST_PYTHON`, `input` on its standard input and
/// `env` in its environment; what it printed, trimmed. A failure of the
/// script fails the test with `what` and what it wrote to standard error.
pub fn run(what: &str, script: &str, input: &str, env: &[(&str, String)]) -> String {
    use std::io::Write;

    let python = std::env::var_os("BEHEST_PYTHON").expect("BEHEST_PYTHON names a Python");
    let mut child = std::process::Command::new(python)
        .args(["-c", script])
        .envs(env.iter().map(|(name, value)| (name, value)))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("BEHEST_PYTHON runs");
    child
        .stdin
        .take()
        .expect("a standard input")
        .write_all(input.as_bytes())
        .expect("the script reads its input");
    let output = child.wait_with_output().expect("the script ends");
    assert!(
        output.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}
