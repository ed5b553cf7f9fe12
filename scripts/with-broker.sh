#!/usr/bin/env bash
# with-broker.sh CMD [ARGS…] — start a fresh local Kafka broker (integration/kafka/broker.sh), run CMD with
# STREAMSGROUP_BOOTSTRAP and friends in its environment, then stop the broker and remove its data,
# whatever CMD's outcome (also on Ctrl-C). Exits with CMD's status.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
broker="$root/integration/kafka/broker.sh"
STREAMSGROUP_RUN_DIR=$(mktemp -d "${TMPDIR:-/tmp}/streamsgroup-broker.XXXXXX")
export STREAMSGROUP_RUN_DIR

cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	bash "$broker" stop || true
	rm -rf "$STREAMSGROUP_RUN_DIR"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

bash "$broker" start >/dev/null
set -a
# shellcheck disable=SC1091
. "$STREAMSGROUP_RUN_DIR/env"
set +a
"$@"
