#!/usr/bin/env bash
# Build time of 100 `#[tool]` functions against the same 100 functions
# written by hand: a clean build of the crate (dependencies already built)
# and a rebuild after touching one of its ten modules.
#
# The tools have the shapes users write: three arguments of mixed types
# (an optional one in most), a defaulted fourth in every other tool, and in
# every tenth a struct and an enum of the crate's own (derived in every
# crate, as they must be). The crates:
# - `macro`: `#[tool]` on each function;
# - `manual`: each function with a `#[derive(Deserialize, JsonSchema)]`
#   arguments struct and a `Tool` impl, what a hand-written tool needs;
# - `derives`: each function with its derived arguments struct and nothing
#   more (no tool): the least a hand-written crate compiles;
# - `plain`: the functions and the crate's own types alone, no tool code.
#
# Medians of RUNS clean builds and 2 x RUNS rebuilds each.
# Run from the repository root: bash benches/build_time.sh [RUNS]
#
# With `--full`, "clean" is instead `cargo clean` of everything: the
# dependencies (behest, serde, schemars and theirs) are built again each
# time, which they share, so the ratio tends to 1 as they dominate. With
# `--release`, every build is a release build: no incremental state, so a
# touch rebuilds the whole crate, and the generic code the crates
# instantiate is optimised there.
#
# With `--instructions`, the rebuild after a touch is measured instead in
# instructions executed by rustc (valgrind's callgrind): slower, but the
# same figure on every run, so small changes to the expansion can be
# compared on a noisy machine. Needs valgrind.
set -euo pipefail
mode=time
full=false
profile=()
while [[ ${1:-} == --* ]]; do
  case $1 in
    --instructions) mode=instructions ;;
    --full) full=true ;;
    --release) profile=(--release) ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
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

# The crate's own types of module $1, used by its tenth tool: the same
# derives in every crate.
own_types() { # module index
  cat <<RS

/// Where to.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct Place$1 {
    /// Street.
    pub street: String,
    /// City.
    pub city: String,
    /// Floor, if any.
    pub floor: Option<i32>,
}

/// How.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Mode$1 {
    /// Slowly.
    Slow,
    /// Quickly.
    Fast,
}
RS
}

# The arguments of tool $2 of module $1 after the first three, as
# "name: type" lines; the defaulted one is marked "default".
more_args() { # module tool
  if (($2 % 2 == 0)); then echo "limit u32 default"; fi
  if (($2 == 9)); then
    echo "place Place$1 -"
    echo "mode Mode$1 -"
  fi
}

# The function's parameter list after the first three, for each crate.
params() { # module tool style
  while read -r name ty default; do
    if [[ $3 == macro && $default == default ]]; then
      printf '    /// More.\n    #[arg(default)]\n    %s: %s,\n' "$name" "$ty"
    elif [[ $3 == macro ]]; then
      printf '    /// More.\n    %s: %s,\n' "$name" "$ty"
    else
      printf '%s: %s, ' "$name" "$ty"
    fi
  done < <(more_args "$1" "$2")
}

# The arguments struct's fields after the first three.
fields() { # module tool
  while read -r name ty default; do
    if [[ $default == default ]]; then printf '    /// More.\n    #[serde(default)]\n'; else printf '    /// More.\n'; fi
    printf '    pub %s: %s,\n' "$name" "$ty"
  done < <(more_args "$1" "$2")
}

# The names after the first three, as call arguments from `args`.
passed() { # module tool
  while read -r name _ _; do printf ', args.%s' "$name"; done < <(more_args "$1" "$2")
}

names() { # module tool
  while read -r name _ _; do printf ' {%s:?}' "$name"; done < <(more_args "$1" "$2")
}

# Tool $2's derived arguments struct, named $4Args, for function $3.
args_struct() { # module tool function camel extra
  cat <<RS
/// Arguments of $3.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ${4}Args {
    /// How many.
    pub count: i64,
    /// What to call it.
    pub label: String,
    /// Something more.
    pub extra: $5,
$(fields "$1" "$2")}
RS
}

module_macro() { # module index
  echo "use behest::tool;"
  own_types "$1"
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
$(params "$1" "$i" macro)) -> String {
    format!("{label}: {count} {extra:?}$(names "$1" "$i")")
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
  own_types "$1"
  for i in $(seq 0 9); do
    n="m$1_t$i"
    camel="M$1T$i"
    extra=${extra_types[$i]}
    cat <<RS

pub async fn $n(count: i64, label: String, extra: $extra, $(params "$1" "$i" manual)) -> String {
    format!("{label}: {count} {extra:?}$(names "$1" "$i")")
}

$(args_struct "$1" "$i" "$n" "$camel" "$extra")

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
        Ok(ToolOutput::text($n(args.count, args.label, args.extra$(passed "$1" "$i")).await))
    }
}
RS
  done
}

module_derives() { # module index
  cat <<'RS'
use schemars::JsonSchema;
use serde::Deserialize;
RS
  own_types "$1"
  for i in $(seq 0 9); do
    n="m$1_t$i"
    camel="M$1T$i"
    extra=${extra_types[$i]}
    cat <<RS

/// Tool $n: combine a count, a label and an extra.
pub async fn $n(count: i64, label: String, extra: $extra, $(params "$1" "$i" derives)) -> String {
    format!("{label}: {count} {extra:?}$(names "$1" "$i")")
}

$(args_struct "$1" "$i" "$n" "$camel" "$extra")
RS
  done
}

module_plain() { # module index
  own_types "$1"
  for i in $(seq 0 9); do
    n="m$1_t$i"
    extra=${extra_types[$i]}
    cat <<RS

/// Tool $n: combine a count, a label and an extra.
pub async fn $n(count: i64, label: String, extra: $extra, $(params "$1" "$i" plain)) -> String {
    format!("{label}: {count} {extra:?}$(names "$1" "$i")")
}
RS
  done
}

kinds=(manual derives macro plain)
for kind in "${kinds[@]}"; do
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
for kind in "${kinds[@]}"; do
  (cd "$work/tools_$kind" && cargo build --quiet "${profile[@]}")
done

if [[ $mode == instructions ]]; then
  declare -A counts
  for kind in "${kinds[@]}"; do
    dir="$work/tools_$kind"
    touch "$dir/src/m3.rs"
    # The exact rustc command cargo runs, replayed under callgrind after
    # the next touch, so that the incremental state is cargo's own.
    command=$(cd "$dir" && cargo build -v "${profile[@]}" 2>&1 |
      sed -n "s/^ *Running \`\(.*rustc --crate-name tools_$kind .*\)\`\$/\1/p")
    touch "$dir/src/m3.rs"
    counts[$kind]=$(cd "$dir" && eval "valgrind --tool=callgrind --callgrind-out-file=/dev/null $command" 2>&1 |
      sed -n 's/.*Collected : \([0-9]*\).*/\1/p')
  done
  printf '%-12s %16s\n' "" "touch (instr.)"
  for kind in "${kinds[@]}"; do
    printf '%-12s %16s\n' "$kind" "${counts[$kind]}"
  done
  printf '%-12s %16.3f\n' "ratio" "$(echo "${counts[macro]} / ${counts[manual]}" | bc -l)"
  printf '%-12s %16.3f\n' "derives ratio" "$(echo "${counts[derives]} / ${counts[manual]}" | bc -l)"
  printf '%-12s %16.3f\n' "plain ratio" "$(echo "${counts[plain]} / ${counts[manual]}" | bc -l)"
  exit 0
fi

now() { date +%s.%N; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# The crates alternate, so that a slow moment of the machine hits each.
declare -A clean_times touch_times
for _ in $(seq "$runs"); do
  for kind in "${kinds[@]}"; do
    dir="$work/tools_$kind"
    if $full; then
      (cd "$dir" && cargo clean --quiet "${profile[@]}")
    else
      (cd "$dir" && cargo clean --quiet -p "tools_$kind" "${profile[@]}")
    fi
    s=$(now); (cd "$dir" && cargo build --quiet "${profile[@]}"); e=$(now)
    clean_times[$kind]+="$(echo "$e - $s" | bc) "
    for _ in 1 2; do
      touch "$dir/src/m3.rs"
      s=$(now); (cd "$dir" && cargo build --quiet "${profile[@]}"); e=$(now)
      touch_times[$kind]+="$(echo "$e - $s" | bc) "
    done
  done
done
declare -A clean touched
for kind in "${kinds[@]}"; do
  clean[$kind]=$(printf '%s\n' ${clean_times[$kind]} | median)
  touched[$kind]=$(printf '%s\n' ${touch_times[$kind]} | median)
done

label=clean
$full && label="all (s)"
printf '%-16s %12s %12s\n' "" "$label" "touch (s)"
for kind in "${kinds[@]}"; do
  printf '%-16s %12.2f %12.2f\n' "$kind" "${clean[$kind]}" "${touched[$kind]}"
done
# macro / manual is the figure that matters; derives / manual and plain /
# manual are what the least hand-written crate and the functions alone
# cost; macro / derives compares with that least crate.
for pair in macro/manual derives/manual plain/manual macro/derives; do
  a=${pair%/*} b=${pair#*/}
  printf '%-16s %12.2f %12.2f\n' "$pair" \
    "$(echo "${clean[$a]} / ${clean[$b]}" | bc -l)" \
    "$(echo "${touched[$a]} / ${touched[$b]}" | bc -l)"
done
