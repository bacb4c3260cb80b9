#!/usr/bin/env bash
# Build time of 100 `#[tool]` functions against the same 100 functions with
# hand-written `#[derive(Deserialize, JsonSchema)]` argument structs and
# `Tool` impls: a clean build of the crate (dependencies already built) and
# a rebuild after touching one of its ten modules. A third crate, `plain`,
# has the same 100 functions and no tool code at all: what the functions
# themselves cost, beside which the other two show what making tools adds.
#
# Medians of RUNS clean builds and 2 x RUNS rebuilds each.
# Run from the repository root: bash benches/build_time.sh [RUNS]
#
# With `--instructions`, the rebuild after a touch is measured instead in
# instructions executed by rustc (valgrind's callgrind): slower, but the
# same figure on every run, so small changes to the expansion can be
# compared on a noisy machine. Needs valgrind.
set -euo pipefail
mode=time
if [[ ${1:-} == --instructions ]]; then
  mode=instructions
  shift
fi
runs=${1:-5}
root=$(pwd)
work="$root/target/build-bench"
rm -rf "$work"
mkdir -p "$work"
export CARGO_TARGET_DIR="$work/target"

manifest() { # name
  cat <<TOML
[package]
name = "$1"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
behest = { path = "$root/behest" }
serde = { version = "1", features = ["derive"] }
schemars = "1"
serde_json = "1"

[workspace]
TOML
}

# The third argument's type differs between the ten tools of a module, so
# that tools do not all share one argument signature.
extra_types=("Option<bool>" "Option<i32>" "Option<u8>" "Option<String>" "Option<f64>"
  "Vec<String>" "Option<u16>" "Vec<i64>" "Option<Vec<bool>>" "Option<u64>")

module_macro() { # module index
  echo "use behest::tool;"
  for i in $(seq 0 9); do
    n="m$1_t$i"
    extra=${extra_types[$i]}
    cat <<RS

/// Tool $n: combine a count, a label and an extra.
#[tool]
pub async fn $n(
    /// How many.
    count: i64,
    /// What to call it.
    label: String,
    /// Something more.
    extra: $extra,
) -> String {
    format!("{label}: {count} {extra:?}")
}
RS
  done
}

module_manual() { # module index
  cat <<'RS'
use behest::{Tool, ToolOutput, ToolResult, ToolSpec};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
RS
  for i in $(seq 0 9); do
    n="m$1_t$i"
    camel="M$1T$i"
    extra=${extra_types[$i]}
    cat <<RS

pub async fn $n(count: i64, label: String, extra: $extra) -> String {
    format!("{label}: {count} {extra:?}")
}

/// Arguments of $n.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ${camel}Args {
    /// How many.
    pub count: i64,
    /// What to call it.
    pub label: String,
    /// Something more.
    pub extra: $extra,
}

pub struct $camel;

impl Tool for $camel {
    fn name(&self) -> &str {
        "$n"
    }
    fn spec(&self) -> ToolSpec {
        static SPEC: std::sync::OnceLock<ToolSpec> = std::sync::OnceLock::new();
        SPEC.get_or_init(|| {
            let schema = schemars::generate::SchemaSettings::draft2020_12()
                .into_generator()
                .into_root_schema_for::<${camel}Args>();
            ToolSpec::new("$n", "Tool $n: combine a count, a label and an extra.", schema.into())
        })
        .clone()
    }
    async fn execute(&self, arguments: Value) -> ToolResult<ToolOutput> {
        let args: ${camel}Args = behest::arguments::parse(arguments)?;
        Ok(ToolOutput::text($n(args.count, args.label, args.extra).await))
    }
}
RS
  done
}

module_plain() { # module index
  for i in $(seq 0 9); do
    n="m$1_t$i"
    extra=${extra_types[$i]}
    cat <<RS

/// Tool $n: combine a count, a label and an extra.
pub async fn $n(count: i64, label: String, extra: $extra) -> String {
    format!("{label}: {count} {extra:?}")
}
RS
  done
}

for kind in macro manual plain; do
  dir="$work/tools_$kind"
  mkdir -p "$dir/src"
  manifest "tools_$kind" > "$dir/Cargo.toml"
  : > "$dir/src/lib.rs"
  echo "//! 100 tools." >> "$dir/src/lib.rs"
  for m in $(seq 0 9); do
    echo "pub mod m$m;" >> "$dir/src/lib.rs"
    "module_$kind" "$m" > "$dir/src/m$m.rs"
  done
done

# Dependencies once, so that only the tools crates are measured.
for kind in macro manual plain; do
  (cd "$work/tools_$kind" && cargo build --quiet)
done

if [[ $mode == instructions ]]; then
  declare -A counts
  for kind in manual macro plain; do
    dir="$work/tools_$kind"
    touch "$dir/src/m3.rs"
    # The exact rustc command cargo runs, replayed under callgrind after
    # the next touch, so that the incremental state is cargo's own.
    command=$(cd "$dir" && cargo build -v 2>&1 |
      sed -n "s/^ *Running \`\(.*rustc --crate-name tools_$kind .*\)\`\$/\1/p")
    touch "$dir/src/m3.rs"
    counts[$kind]=$(cd "$dir" && eval "valgrind --tool=callgrind --callgrind-out-file=/dev/null $command" 2>&1 |
      sed -n 's/.*Collected : \([0-9]*\).*/\1/p')
  done
  printf '%-12s %16s\n' "" "touch (instr.)"
  for kind in manual macro plain; do
    printf '%-12s %16s\n' "$kind" "${counts[$kind]}"
  done
  printf '%-12s %16.3f\n' "ratio" "$(echo "${counts[macro]} / ${counts[manual]}" | bc -l)"
  printf '%-12s %16.3f\n' "plain ratio" "$(echo "${counts[plain]} / ${counts[manual]}" | bc -l)"
  exit 0
fi

now() { date +%s.%N; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# The crates alternate, so that a slow moment of the machine hits each.
declare -A clean_times touch_times
for _ in $(seq "$runs"); do
  for kind in manual macro plain; do
    dir="$work/tools_$kind"
    (cd "$dir" && cargo clean --quiet -p "tools_$kind")
    s=$(now); (cd "$dir" && cargo build --quiet); e=$(now)
    clean_times[$kind]+="$(echo "$e - $s" | bc) "
    for _ in 1 2; do
      touch "$dir/src/m3.rs"
      s=$(now); (cd "$dir" && cargo build --quiet); e=$(now)
      touch_times[$kind]+="$(echo "$e - $s" | bc) "
    done
  done
done
declare -A clean touched
for kind in manual macro plain; do
  clean[$kind]=$(printf '%s\n' ${clean_times[$kind]} | median)
  touched[$kind]=$(printf '%s\n' ${touch_times[$kind]} | median)
done

printf '%-12s %12s %12s\n' "" "clean (s)" "touch (s)"
for kind in manual macro plain; do
  printf '%-12s %12.2f %12.2f\n' "$kind" "${clean[$kind]}" "${touched[$kind]}"
done
# macro / manual is the figure that matters; plain / manual is the floor
# the functions themselves set.
for kind in macro plain; do
  printf '%-12s %12.2f %12.2f\n' "$kind/manual" \
    "$(echo "${clean[$kind]} / ${clean[manual]}" | bc -l)" \
    "$(echo "${touched[$kind]} / ${touched[manual]}" | bc -l)"
done
