#!/usr/bin/env bash
# Refreshes the vendored test data.
#
#   tests/data/refresh.sh suite COMMIT    # the JSON-Schema-Test-Suite at COMMIT (needs git and the network)
#   tests/data/refresh.sh copy DIR        # json-schema-test-suite/ and provider-fixtures/ from DIR
#
# Then run the tests that read the data:
#   cargo test --test schemas --test providers --test models --all-features
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
case "${1:-}" in
  suite)
    commit="${2:?usage: refresh.sh suite COMMIT}"
    scratch="$(mktemp -d)"
    trap 'rm -rf "$scratch"' EXIT
    git clone --quiet https://github.com/json-schema-org/JSON-Schema-Test-Suite "$scratch/suite"
    git -C "$scratch/suite" checkout --quiet "$commit"
    rm -rf "$here/json-schema-test-suite"
    mkdir -p "$here/json-schema-test-suite/tests" "$here/json-schema-test-suite/remotes"
    cp -r "$scratch/suite/tests/draft2020-12" "$here/json-schema-test-suite/tests/"
    cp -r "$scratch/suite/remotes/draft2020-12" "$here/json-schema-test-suite/remotes/"
    cp "$scratch/suite/LICENSE" "$here/json-schema-test-suite/"
    date="$(git -C "$scratch/suite" show -s --format=%cs "$commit")"
    echo "source: json-schema-org/JSON-Schema-Test-Suite at $commit ($date); draft2020-12 tests and remotes only; see LICENSE" \
      > "$here/json-schema-test-suite/SOURCE.txt"
    ;;
  copy)
    from="${2:?usage: refresh.sh copy DIR}"
    for folder in json-schema-test-suite provider-fixtures; do
      rm -rf "${here:?}/$folder"
      cp -r "$from/$folder" "$here/$folder"
    done
    ;;
  *)
    sed -n '2,9p' "$0"
    exit 2
    ;;
esac
echo "refreshed; now run the tests named above"
