#!/usr/bin/env bash
# broker.sh — Apache Kafka (KRaft) on loopback, run from the Maven Central jars, for the demo and the
# integration tests: a single combined broker+controller node by default, or a small cluster
# (`start --brokers N`) for coordinator failover.
#
#   broker.sh fetch     resolve the jars for KAFKA_VERSION into the cache (reused on later runs)
#   broker.sh start     fetch, write the config (free ports), format, start, wait until ready, print the address
#   broker.sh start --brokers N
#                       the same for an N-node cluster (N >= 2, see "Cluster" below); prints the
#                       comma-separated addresses of all nodes
#   broker.sh start --secure
#                       the single node with secured client listeners as well (SASL_SSL with SCRAM-SHA-512
#                       users, SSL with client certificates), StandardAuthorizer and no access without
#                       an ACL; see secure.sh for what it adds and what the env file then gives
#   broker.sh restart   stop the running broker (every node of a cluster) and start it again on the same
#                       ports and data (for failover tests)
#   broker.sh stop      stop the broker (every node of a cluster) this script started, by the PIDs it
#                       recorded, and remove its run directory
#   broker.sh status    say whether the broker is running and where (for a cluster, node by node; exit 1
#                       unless every node runs)
#   broker.sh stop-node N [--kill]
#                       cluster only: stop node N (SIGTERM, a controlled shutdown that moves its partition
#                       leaderships away first; --kill: SIGKILL, a crash). Its data and ports are kept.
#   broker.sh start-node N
#                       cluster only: start node N again on its ports and data, and wait until it is
#                       registered with the controller again
#   broker.sh classpath print the class path of the cached jars (for Kafka's own tools)
#
# Environment:
#   KAFKA_VERSION          Apache Kafka version (default 4.4.0; 4.3.x and 4.2.x work the same way)
#   KAFKA_NODE_VERSIONS    cluster only: the Kafka version of each node 1..N, comma-separated (e.g.
#                          "4.4.0,4.3.1,4.4.0": a cluster in the middle of a rolling upgrade); default
#                          KAFKA_VERSION for every node. See "Mixed versions" below. The single node
#                          refuses it.
#   STREAMSGROUP_CACHE     where jars are cached (default ${XDG_CACHE_HOME:-$HOME/.cache}/streamsgroup)
#   STREAMSGROUP_RUN_DIR   config, data, log and PID of the running broker (default ${TMPDIR:-/tmp}/streamsgroup-broker)
#   BROKER_READY_TIMEOUT   seconds to wait for readiness (default 120)
#   STREAMSGROUP_BROKER_EXTRA
#                          extra server properties for `start`, as space-separated key=value words
#                          (e.g. "group.coordinator.rebalance.protocols=classic,consumer"); they are
#                          appended to server.properties after the defaults above, so a key given here
#                          overrides the default (the last occurrence of a key wins). A value cannot
#                          contain spaces. Used by tests that start a dedicated broker with a special config.
#                          A cluster appends them to every node's server.properties.
#   STREAMSGROUP_CLUSTER_VOTERS
#                          cluster only: how many nodes (1..V) are controllers as well as brokers, the
#                          voters of a static metadata quorum (default 1: node 1 alone; 3 on a 3-node
#                          cluster is a production quorum, which keeps electing leaders while any one
#                          node is down or crashed, node 1 included).
#   STREAMSGROUP_CLUSTER_HEAP
#                          JVM heap flags of each cluster node (default "-Xms128m -Xmx384m": three JVMs
#                          must fit next to the tests on a small CI machine). The single node keeps its
#                          -Xms256m -Xmx1g.
#
# After `start`, $STREAMSGROUP_RUN_DIR/env holds `STREAMSGROUP_BOOTSTRAP=host:port` and the other facts the
# tests read, so `. "$STREAMSGROUP_RUN_DIR/env"` sets them in a shell.
#
# Cluster (`start --brokers N`). Node 1 is a combined broker+controller (the only controller: stopping
# it stops the metadata quorum, so no leadership can move until it is back); nodes 2..N are
# broker-only. Node n has its own directory $STREAMSGROUP_RUN_DIR/node-n with its server.properties,
# data, broker.log, stdout.log and pid. Settings beyond the single node's group.streams.* test values:
#   offsets.topic.replication.factor=min(N,3), offsets.topic.num.partitions=3: groups spread over the
#       nodes as coordinators, and a coordinator's partition has followers that can take it over;
#   transaction.state.log.replication.factor and share.coordinator.state.topic.replication.factor the same;
#   min.insync.replicas=1 (and the internal topics' min ISR 1): the topics the tests create have
#       replication factor 1, and franz-go producers write with acks=all, which a min ISR of 2 would
#       refuse on them; __consumer_offsets loses nothing by it, because an acks=all write still waits
#       for every in-sync replica and unclean leader election stays off (a new leader always has every
#       acknowledged group record), a min ISR of 1 only keeps the group writable with fewer replicas;
#   auto.leader.rebalance.enable=false: tests and the chaos tool move leaderships (and so coordinators)
#       themselves; the periodic preferred-leader election would move them at times nobody chose;
#   broker.heartbeat.interval.ms=500, broker.session.timeout.ms=3000: a killed broker is fenced, and its
#       leaderships move, within 3 s rather than the default 9 s. The coordinator of a crashed node is
#       unreachable until then; with 4 s it moved 4.5-6 s after the crash, past a member's session
#       guard (group session 6 s - 10 %), so members gave their tasks up on every crash.
# The env file also gives, for each node n: STREAMSGROUP_NODE_<n>_ID, _ADDRESS (host:port), _PID_FILE,
# _DIR, _ROLES and _VERSION, plus STREAMSGROUP_BROKERS=N, STREAMSGROUP_NODE_IDS=1,2,…,N,
# STREAMSGROUP_NODE_VERSIONS (the versions of nodes 1..N) and STREAMSGROUP_CONTROLLER_NODE=1. `start`
# waits until every node is registered and unfenced (so __consumer_offsets can be created with its
# full replication factor) and streams.version >= 1.
#
# Mixed versions (KAFKA_NODE_VERSIONS naming more than one version). Each node is formatted and run
# from its own version's jars (all resolved into the cache first), and every node's storage is
# formatted with `--release-version` of the oldest line named (e.g. 4.3 for 4.3.1 and 4.4.0), as a
# cluster being upgraded runs: metadata.version and the other finalized features stay at the old
# release's levels until an operator finalizes the new ones (kafka-features.sh upgrade), so the old
# nodes can register with the controller. The env file then also gives
# STREAMSGROUP_METADATA_RELEASE=<that line>. Kafka's tools (the readiness probe, `classpath`) run from
# KAFKA_VERSION's jars. With one version for every node (the default) nothing of this applies: the
# storage is formatted with the version's own default features, as before.
set -euo pipefail

KAFKA_VERSION=${KAFKA_VERSION:-4.4.0}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache_root=${STREAMSGROUP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/streamsgroup}
libs="$cache_root/kafka-$KAFKA_VERSION/libs"
run_dir=${STREAMSGROUP_RUN_DIR:-${TMPDIR:-/tmp}/streamsgroup-broker}
ready_timeout=${BROKER_READY_TIMEOUT:-120}

log() { printf 'broker.sh: %s\n' "$*" >&2; }

# Secured mode (start --secure): secure.sh adds the listeners, users and certificates.
secure=0
format_extra=()
. "$here/secure.sh"
die() { log "$*"; exit 1; }

fetch() { fetch_version "$KAFKA_VERSION"; }

# fetch_version resolves the jars of Kafka version $1 into the cache (once).
fetch_version() {
	local version=$1 libs="$cache_root/kafka-$1/libs"
	if [ -f "$libs/.complete" ]; then
		return 0
	fi
	command -v mvn >/dev/null || die "Maven (mvn) is needed to download the Kafka jars: apt-get install maven"
	command -v java >/dev/null || die "Java 17+ is needed to run the broker: apt-get install openjdk-17-jre-headless"
	log "resolving Apache Kafka $version jars into $libs"
	local tmp="$libs.partial"
	rm -rf "$tmp"
	mkdir -p "$tmp"
	# Maven prints colour codes even in batch mode; strip them from what reaches the terminal.
	local ok=1
	mvn -B -q -Dstyle.color=never -f "$here/pom.xml" -Dkafka.version="$version" \
		dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp" >"$tmp.log" 2>&1 || ok=0
	sed 's/\x1b\[[0-9;]*m//g' "$tmp.log" | grep -v '^[[:space:]]*$' >&2 || true
	rm -f "$tmp.log"
	[ "$ok" = 1 ] || die "Maven could not resolve org.apache.kafka:kafka_2.13:$version"
	rm -rf "$libs"
	mv "$tmp" "$libs"
	touch "$libs/.complete"
}

classpath() { printf '%s/*' "$libs"; }

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

pid_alive() { [ -f "$run_dir/pid" ] && kill -0 "$(cat "$run_dir/pid")" 2>/dev/null; }

write_config() {
	local port=$1 cport=$2
	mkdir -p "$run_dir/data"
	cat >"$run_dir/server.properties" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=127.0.0.1:$cport
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$run_dir/data
num.partitions=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
auto.create.topics.enable=false
$(group_test_properties)
EOF
	append_extra_properties "$run_dir/server.properties"
	write_log4j2 "$run_dir"
}

# group_test_properties prints the group settings every broker of this script runs with, single node
# and cluster alike.
group_test_properties() {
	cat <<EOF
# Fast-test group settings: short heartbeats and sessions, no initial delay, no assignment batching.
group.streams.min.heartbeat.interval.ms=100
group.streams.heartbeat.interval.ms=500
group.streams.min.session.timeout.ms=1000
group.streams.session.timeout.ms=6000
group.streams.initial.rebalance.delay.ms=0
group.streams.assignment.interval.ms=0
group.streams.min.task.offset.interval.ms=100
group.initial.rebalance.delay.ms=0
# A transaction whose producer died is aborted within about 1 s of its transaction.timeout.ms (the
# default check runs every 10 s), so exactly-once tests do not wait on it.
transaction.abort.timed.out.transaction.cleanup.interval.ms=1000
# Few transaction log partitions: the first transactional producer creates them all.
transaction.state.log.num.partitions=4
EOF
}

# write_log4j2 writes the log configuration of the broker whose directory is $1 (its log: $1/broker.log).
write_log4j2() {
	cat >"$1/log4j2.properties" <<EOF
rootLogger.level=INFO
rootLogger.appenderRef.file.ref=file
appender.file.type=File
appender.file.name=file
appender.file.fileName=$1/broker.log
appender.file.layout.type=PatternLayout
appender.file.layout.pattern=[%d] %p %m (%c)%n
logger.kafka.name=kafka
logger.kafka.level=INFO
logger.state.name=state.change.logger
logger.state.level=WARN
EOF
}

# append_extra_properties appends the key=value words of STREAMSGROUP_BROKER_EXTRA to the
# server.properties file $1.
append_extra_properties() {
	[ -n "${STREAMSGROUP_BROKER_EXTRA:-}" ] || return 0
	local kv extra file=$1
	read -r -a extra <<<"$STREAMSGROUP_BROKER_EXTRA"
	echo "# Extra properties from STREAMSGROUP_BROKER_EXTRA (override the defaults above)." >>"$file"
	for kv in "${extra[@]}"; do
		case "$kv" in
		?*=*) printf '%s\n' "$kv" >>"$file" ;;
		*) die "STREAMSGROUP_BROKER_EXTRA: '$kv' is not key=value" ;;
		esac
	done
}

launch() {
	local cp
	cp=$(classpath)
	if [ ! -f "$run_dir/data/meta.properties" ]; then
		local id
		id=$(java -cp "$cp" kafka.tools.StorageTool random-uuid)
		java -cp "$cp" -Dlog4j2.configurationFile="$run_dir/log4j2.properties" kafka.tools.StorageTool \
			format --standalone -t "$id" -c "$run_dir/server.properties" ${format_extra[@]+"${format_extra[@]}"} >"$run_dir/format.log" 2>&1 \
			|| { cat "$run_dir/format.log" >&2; die "formatting the storage failed"; }
	fi
	local started
	started=$(date +%s%N)
	# setsid: the broker gets its own session, so a Ctrl-C in the caller's terminal does not race our own stop.
	setsid java -Xms256m -Xmx1g -XX:+UseG1GC -Djava.awt.headless=true \
		-Dlog4j2.configurationFile="$run_dir/log4j2.properties" \
		-cp "$cp" kafka.Kafka "$run_dir/server.properties" >"$run_dir/stdout.log" 2>&1 </dev/null &
	echo $! >"$run_dir/pid"
	wait_ready "$started"
}

# wait_ready polls the broker with Kafka's own FeatureCommand (ApiVersions + DescribeFeatures) until it
# answers and reports the finalized feature streams.version >= 1, which is what streams groups need.
wait_ready() {
	local started=$1 bootstrap deadline out
	bootstrap=$(cat "$run_dir/bootstrap")
	deadline=$(($(date +%s) + ready_timeout))
	while :; do
		if ! pid_alive; then
			tail -n 40 "$run_dir/broker.log" "$run_dir/stdout.log" >&2 2>/dev/null || true
			die "the broker exited during start-up (log: $run_dir/broker.log)"
		fi
		if out=$(java -cp "$(classpath)" -Dlog4j2.configurationFile="$run_dir/log4j2.properties" \
			org.apache.kafka.tools.FeatureCommand --bootstrap-server "$bootstrap" describe 2>/dev/null); then
			local level
			level=$(printf '%s\n' "$out" | awk '/Feature: streams.version/ { for (i = 1; i <= NF; i++) if ($i == "FinalizedVersionLevel:") print $(i+1) }')
			if [ -n "$level" ] && [ "$level" -ge 1 ] 2>/dev/null; then
				local ms=$((($(date +%s%N) - started) / 1000000))
				echo "$ms" >"$run_dir/startup_ms"
				log "Kafka $KAFKA_VERSION ready at $bootstrap in ${ms} ms (streams.version=$level, pid $(cat "$run_dir/pid"))"
				return 0
			fi
		fi
		if [ "$(date +%s)" -ge "$deadline" ]; then
			tail -n 40 "$run_dir/broker.log" >&2 2>/dev/null || true
			stop_process
			die "the broker was not ready with streams.version >= 1 within ${ready_timeout}s"
		fi
		sleep 0.5
	done
}

start() {
	[ -z "${KAFKA_NODE_VERSIONS:-}" ] || die "KAFKA_NODE_VERSIONS is for a cluster (start --brokers N); the single node runs KAFKA_VERSION ($KAFKA_VERSION)"
	if is_cluster && [ -n "$(alive_nodes)" ]; then
		die "a cluster runs in $run_dir (nodes$(alive_nodes)); stop it first"
	fi
	if pid_alive; then
		log "already running (pid $(cat "$run_dir/pid")) at $(cat "$run_dir/bootstrap")"
		cat "$run_dir/bootstrap"
		return 0
	fi
	fetch
	rm -rf "$run_dir"
	mkdir -p "$run_dir"
	local port cport
	port=$(free_port)
	cport=$(free_port)
	while [ "$cport" = "$port" ]; do cport=$(free_port); done
	write_config "$port" "$cport"
	echo "127.0.0.1:$port" >"$run_dir/bootstrap"
	cat >"$run_dir/env" <<EOF
STREAMSGROUP_BOOTSTRAP=127.0.0.1:$port
STREAMSGROUP_KAFKA_VERSION=$KAFKA_VERSION
STREAMSGROUP_KAFKA_LIBS=$libs
STREAMSGROUP_RUN_DIR=$run_dir
STREAMSGROUP_BROKER_SCRIPT=$here/broker.sh
EOF
	if [ "$secure" = 1 ]; then
		secure_setup "$port" "$cport"
	fi
	launch
	cat "$run_dir/bootstrap"
}

# stop_process ends the broker by the PID this script recorded, politely first (the broker shuts down
# cleanly on SIGTERM), then with SIGKILL if it has not gone within 30 s.
stop_process() { stop_pidfile "$run_dir/pid" TERM; }

# stop_pidfile ends the process whose PID is in file $1 and removes the file. $2 is TERM (a clean
# shutdown, SIGKILL after 30 s) or KILL (at once, as a crash).
stop_pidfile() {
	local file=$1 sig=$2 pid i
	[ -f "$file" ] || return 0
	pid=$(cat "$file")
	if ! kill -0 "$pid" 2>/dev/null; then
		rm -f "$file"
		return 0
	fi
	kill -"$sig" "$pid" 2>/dev/null || true
	for i in $(seq 1 300); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		log "broker pid $pid did not stop on SIG$sig; killing it"
		kill -KILL "$pid" 2>/dev/null || true
		while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
	fi
	rm -f "$file"
}

# restart stops the broker (SIGTERM, a controlled shutdown) and starts it again. A transaction that
# ends while the node has no leaderships (as the shutdown gives them up) is completed by its
# coordinator without markers, a broker limitation: see the chaos README.
restart() {
	[ -f "$run_dir/bootstrap" ] || die "no broker to restart in $run_dir"
	if is_cluster; then
		cluster_restart
		return
	fi
	stop_process
	launch
}

stop() {
	if [ -d "$run_dir" ]; then
		if is_cluster; then
			cluster_stop_all KILL
		else
			stop_process
		fi
		rm -rf "$run_dir"
		log "stopped and removed $run_dir"
	fi
}

status() {
	if is_cluster; then
		cluster_status
		return
	fi
	if pid_alive; then
		echo "running: pid $(cat "$run_dir/pid") at $(cat "$run_dir/bootstrap") (Kafka $KAFKA_VERSION, $run_dir)"
	else
		echo "not running"
		return 1
	fi
}

# ---------------------------------------------------------------------------------------------------
# Cluster: `start --brokers N`, `stop-node N`, `start-node N` (see the top of this file).

cluster_heap=${STREAMSGROUP_CLUSTER_HEAP:--Xms128m -Xmx384m}

# voters prints how many nodes are controllers (STREAMSGROUP_CLUSTER_VOTERS at start, kept in the run
# directory for restarts); voter_list the static quorum (id@host:port,…) when there are several.
voters() { cat "$run_dir/voters" 2>/dev/null || echo 1; }
voter_list() { cat "$run_dir/voter_list"; }

is_cluster() { [ -f "$run_dir/nodes" ]; }
node_count() { cat "$run_dir/nodes"; }
node_dir() { printf '%s/node-%s' "$run_dir" "$1"; }
node_ids() { seq 1 "$(node_count)"; }
# node_version prints node $1's Kafka version, node_libs the directory of its jars.
node_version() { cat "$(node_dir "$1")/version"; }
node_libs() { printf '%s/kafka-%s/libs' "$cache_root" "$(node_version "$1")"; }

# node_versions checks KAFKA_NODE_VERSIONS against the node count $1 and prints one version a line
# for nodes 1..$1 (KAFKA_VERSION for each when it is not set).
node_versions() {
	local count=$1 v vs=()
	if [ -z "${KAFKA_NODE_VERSIONS:-}" ]; then
		for v in $(seq 1 "$count"); do echo "$KAFKA_VERSION"; done
		return 0
	fi
	IFS=, read -r -a vs <<<"$KAFKA_NODE_VERSIONS"
	[ "${#vs[@]}" = "$count" ] || die "KAFKA_NODE_VERSIONS names ${#vs[@]} versions ($KAFKA_NODE_VERSIONS), want one for each of the $count nodes"
	for v in "${vs[@]}"; do
		[[ "$v" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "KAFKA_NODE_VERSIONS: '$v' is not a Kafka version (major.minor.patch)"
		echo "$v"
	done
}

# metadata_release prints the major.minor of the oldest of the versions given, or nothing when they
# are all the same version (a single-version cluster formats with its own defaults).
metadata_release() {
	local distinct
	distinct=$(printf '%s\n' "$@" | sort -u | wc -l)
	[ "$distinct" -gt 1 ] || return 0
	printf '%s\n' "$@" | sort -V | head -n 1 | cut -d. -f1,2
}
node_pid_alive() {
	local f
	f="$(node_dir "$1")/pid"
	[ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null
}

# alive_nodes prints " 1 2 …": the nodes whose process runs.
alive_nodes() {
	local n
	for n in $(node_ids); do
		if node_pid_alive "$n"; then printf ' %s' "$n"; fi
	done
}

# write_node_config writes node $1's server.properties and log configuration: $2 nodes in all, $3 its
# PLAINTEXT port, $4 the controller's port (node 1's CONTROLLER listener).
write_node_config() {
	local n=$1 count=$2 port=$3 cport=$4 dir rf roles listeners quorum
	dir=$(node_dir "$n")
	mkdir -p "$dir/data"
	rf=$((count < 3 ? count : 3))
	quorum="controller.quorum.bootstrap.servers=127.0.0.1:$cport"
	if [ "$(voters)" -gt 1 ]; then quorum="controller.quorum.voters=$(voter_list)"; fi
	if [ "$n" -le "$(voters)" ]; then
		roles=broker,controller
		listeners="PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport"
	else
		roles=broker
		listeners="PLAINTEXT://127.0.0.1:$port"
	fi
	echo "$roles" >"$dir/roles"
	echo "127.0.0.1:$port" >"$dir/address"
	cat >"$dir/server.properties" <<EOF
process.roles=$roles
node.id=$n
$quorum
listeners=$listeners
advertised.listeners=$listeners
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$dir/data
num.partitions=1
# Replicated internal topics, so that a group's coordinator can move to another node (see the top of
# broker.sh for why min.insync.replicas is 1).
offsets.topic.replication.factor=$rf
offsets.topic.num.partitions=3
transaction.state.log.replication.factor=$rf
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=$rf
share.coordinator.state.topic.min.isr=1
min.insync.replicas=1
# Leaderships move only when a test or the chaos tool moves them (or a node stops).
auto.leader.rebalance.enable=false
# A killed node is fenced, and its leaderships move, within 3 s (see the top of broker.sh).
broker.heartbeat.interval.ms=500
broker.session.timeout.ms=3000
auto.create.topics.enable=false
$(group_test_properties)
EOF
	append_extra_properties "$dir/server.properties"
	write_log4j2 "$dir"
}

# format_node formats node $1's storage for the cluster ID in $run_dir/cluster.id (once: a restarted
# node keeps its data). Node 1, the only controller, starts the metadata quorum alone (--standalone).
format_node() {
	local n=$1 dir
	dir=$(node_dir "$n")
	[ -f "$dir/data/meta.properties" ] && return 0
	local args=(format -t "$(cat "$run_dir/cluster.id")" -c "$dir/server.properties")
	# A static quorum (several voters, controller.quorum.voters) is formatted without it.
	if [ "$n" = 1 ] && [ "$(voters)" = 1 ]; then args+=(--standalone); fi
	# Mixed versions: the oldest release's metadata.version and features (see the top of broker.sh).
	if [ -s "$run_dir/release" ]; then args+=(--release-version "$(cat "$run_dir/release")"); fi
	java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -cp "$(node_libs "$n")/*" -Dlog4j2.configurationFile="$dir/log4j2.properties" \
		kafka.tools.StorageTool "${args[@]}" >"$dir/format.log" 2>&1 \
		|| { cat "$dir/format.log" >&2; die "formatting node $n's storage failed"; }
}

# launch_node starts node $1's JVM (its own session, as the single node) and records its PID.
launch_node() {
	local n=$1 dir heap
	dir=$(node_dir "$n")
	read -r -a heap <<<"$cluster_heap"
	wc -c <"$dir/broker.log" >"$dir/log_offset" 2>/dev/null || echo 0 >"$dir/log_offset"
	# C1 only (TieredStopAtLevel=1): a test broker never needs C2's peak speed, and skipping it
	# halves the CPU three JVMs burn while starting side by side on a small machine.
	setsid java "${heap[@]}" -XX:TieredStopAtLevel=1 -XX:+UseG1GC -Djava.awt.headless=true \
		-Dlog4j2.configurationFile="$dir/log4j2.properties" \
		-cp "$(node_libs "$n")/*" kafka.Kafka "$dir/server.properties" >"$dir/stdout.log" 2>&1 </dev/null &
	echo $! >"$dir/pid"
}

# write_tools_log4j2 sends the log of Kafka's own tools (the readiness probes) to $run_dir/tools.log,
# away from the nodes' logs.
write_tools_log4j2() {
	cat >"$run_dir/tools-log4j2.properties" <<EOF
rootLogger.level=WARN
rootLogger.appenderRef.file.ref=file
appender.file.type=File
appender.file.name=file
appender.file.fileName=$run_dir/tools.log
appender.file.layout.type=PatternLayout
appender.file.layout.pattern=[%d] %p %m (%c)%n
EOF
}

# node_started reports whether node $1 logged, since its last launch, that it runs: it registered with
# the controller, was unfenced and opened its listeners. Reading the log costs nothing, where a probe
# with Kafka's tools costs a JVM start each time, which on a small machine slows the nodes' own start.
node_started() {
	local dir off
	dir=$(node_dir "$1")
	off=$(cat "$dir/log_offset" 2>/dev/null || echo 0)
	tail -c +$((off + 1)) "$dir/broker.log" 2>/dev/null | grep -q "Kafka Server started"
}

# streams_version prints the finalized streams.version level of the cluster (empty when unknown).
streams_version() {
	local out
	out=$(timeout 60 java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -cp "$(classpath)" \
		-Dlog4j2.configurationFile="$run_dir/tools-log4j2.properties" org.apache.kafka.tools.FeatureCommand --bootstrap-server "$(cat "$run_dir/bootstrap")" describe 2>/dev/null) || return 0
	printf '%s\n' "$out" | awk '/Feature: streams.version/ { for (i = 1; i <= NF; i++) if ($i == "FinalizedVersionLevel:") print $(i+1) }'
}

# wait_nodes_ready waits until each node given has started (registered, unfenced, listening: see
# node_started) and the cluster reports streams.version >= 1. $1 is the start time (ns); the rest are
# node IDs. On a timeout it kills those nodes and fails.
wait_nodes_ready() {
	local started=$1 n missing level
	shift
	local deadline=$(($(date +%s) + ready_timeout))
	while :; do
		missing=""
		for n in "$@"; do
			if ! node_pid_alive "$n"; then
				tail -n 40 "$(node_dir "$n")/broker.log" "$(node_dir "$n")/stdout.log" >&2 2>/dev/null || true
				die "node $n exited during start-up (log: $(node_dir "$n")/broker.log)"
			fi
			node_started "$n" || missing+=" $n"
		done
		if [ -z "$missing" ]; then
			level=$(streams_version)
			if [ -n "$level" ] && [ "$level" -ge 1 ] 2>/dev/null; then
				local ms=$((($(date +%s%N) - started) / 1000000))
				echo "$ms" >"$run_dir/startup_ms"
				log "Kafka $(cluster_versions_text "$@"): node(s) $* ready in ${ms} ms (streams.version=$level; bootstrap $(cat "$run_dir/bootstrap"))"
				return 0
			fi
			missing=" (streams.version not finalized)"
		fi
		if [ "$(date +%s)" -ge "$deadline" ]; then
			for n in "$@"; do tail -n 20 "$(node_dir "$n")/broker.log" >&2 2>/dev/null || true; done
			for n in "$@"; do stop_pidfile "$(node_dir "$n")/pid" KILL; done
			die "node(s)$missing not ready within ${ready_timeout}s"
		fi
		sleep 0.2
	done
}

# cluster_versions_text prints the Kafka version of the nodes given: one version, or node:version
# pairs when they differ (with the metadata release of a mixed cluster).
cluster_versions_text() {
	local n out="" vs=()
	for n in "$@"; do vs+=("$(node_version "$n")"); done
	if [ "$(printf '%s\n' "${vs[@]}" | sort -u | wc -l)" = 1 ] && [ ! -s "$run_dir/release" ]; then
		printf '%s' "${vs[0]}"
		return
	fi
	for n in "$@"; do out+="$n:$(node_version "$n") "; done
	printf '%s' "${out% }"
	if [ -s "$run_dir/release" ]; then printf ' (metadata release %s)' "$(cat "$run_dir/release")"; fi
}

cluster_start() {
	local count=$1
	[ "$count" -ge 2 ] 2>/dev/null || die "--brokers needs a number >= 2 (got '$count'); without it: one node"
	if is_cluster && [ -n "$(alive_nodes)" ]; then
		if [ "$(node_count)" = "$count" ] && [ "$(alive_nodes)" = "$(printf ' %s' $(node_ids))" ]; then
			log "already running: $count nodes at $(cat "$run_dir/bootstrap")"
			cat "$run_dir/bootstrap"
			return 0
		fi
		die "a cluster of $(node_count) runs partly or differently in $run_dir (nodes$(alive_nodes)); stop it first"
	fi
	if pid_alive; then
		die "a single broker runs in $run_dir (pid $(cat "$run_dir/pid")); stop it first"
	fi
	local versions=() v
	mapfile -t versions < <(node_versions "$count")
	[ "${#versions[@]}" = "$count" ] || exit 1 # node_versions said why
	fetch
	for v in $(printf '%s\n' "${versions[@]}" | sort -u); do fetch_version "$v"; done
	rm -rf "$run_dir"
	mkdir -p "$run_dir"
	echo "$count" >"$run_dir/nodes"
	local nvoters=${STREAMSGROUP_CLUSTER_VOTERS:-1}
	case "$nvoters" in '' | *[!0-9]*) die "STREAMSGROUP_CLUSTER_VOTERS must be a number of nodes (got '$nvoters')" ;; esac
	[ "$nvoters" -ge 1 ] && [ "$nvoters" -le "$count" ] || die "STREAMSGROUP_CLUSTER_VOTERS=$nvoters: want 1..$count controllers"
	echo "$nvoters" >"$run_dir/voters"
	metadata_release "${versions[@]}" >"$run_dir/release"
	write_tools_log4j2
	# Distinct free ports: one PLAINTEXT port per node, and the controller's.
	local ports=() p n used=" "
	while [ "${#ports[@]}" -lt $((count + nvoters)) ]; do
		p=$(free_port)
		case "$used" in *" $p "*) continue ;; esac
		used+="$p "
		ports+=("$p")
	done
	local cport=${ports[$count]} addrs=() vl=()
	# Node n <= voters listens for the quorum on ports[count + n - 1].
	for n in $(seq 1 "$nvoters"); do vl+=("$n@127.0.0.1:${ports[$((count + n - 1))]}"); done
	(
		IFS=,
		echo "${vl[*]}"
	) >"$run_dir/voter_list"
	for n in $(seq 1 "$count"); do
		local ncport=$cport
		if [ "$n" -le "$nvoters" ]; then ncport=${ports[$((count + n - 1))]}; fi
		write_node_config "$n" "$count" "${ports[$((n - 1))]}" "$ncport"
		echo "${versions[$((n - 1))]}" >"$(node_dir "$n")/version"
		addrs+=("127.0.0.1:${ports[$((n - 1))]}")
	done
	(
		IFS=,
		echo "${addrs[*]}"
	) >"$run_dir/bootstrap"
	{
		echo "STREAMSGROUP_BOOTSTRAP=$(cat "$run_dir/bootstrap")"
		echo "STREAMSGROUP_KAFKA_VERSION=$KAFKA_VERSION"
		echo "STREAMSGROUP_KAFKA_LIBS=$libs"
		echo "STREAMSGROUP_RUN_DIR=$run_dir"
		echo "STREAMSGROUP_BROKER_SCRIPT=$here/broker.sh"
		echo "STREAMSGROUP_BROKERS=$count"
		echo "STREAMSGROUP_NODE_IDS=$(seq -s , 1 "$count")"
		echo "STREAMSGROUP_CONTROLLER_NODE=1"
		echo "STREAMSGROUP_CONTROLLER_NODES=$(seq -s , 1 "$nvoters")"
		echo "STREAMSGROUP_CONTROLLER_ADDRESS=127.0.0.1:$cport"
		echo "STREAMSGROUP_NODE_VERSIONS=$(
			IFS=,
			echo "${versions[*]}"
		)"
		if [ -s "$run_dir/release" ]; then echo "STREAMSGROUP_METADATA_RELEASE=$(cat "$run_dir/release")"; fi
		for n in $(seq 1 "$count"); do
			echo "STREAMSGROUP_NODE_${n}_ID=$n"
			echo "STREAMSGROUP_NODE_${n}_ADDRESS=$(cat "$(node_dir "$n")/address")"
			echo "STREAMSGROUP_NODE_${n}_PID_FILE=$(node_dir "$n")/pid"
			echo "STREAMSGROUP_NODE_${n}_DIR=$(node_dir "$n")"
			echo "STREAMSGROUP_NODE_${n}_ROLES=$(cat "$(node_dir "$n")/roles")"
			echo "STREAMSGROUP_NODE_${n}_VERSION=$(node_version "$n")"
		done
	} >"$run_dir/env"
	# A Kafka UUID: 16 random bytes in URL-safe base64 without padding, not starting with "-" (what
	# StorageTool random-uuid prints; a leading "-" would read as an option), made without a JVM.
	python3 -c '
import base64, os
while True:
    u = base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")
    if not u.startswith("-"):
        print(u)
        break
' >"$run_dir/cluster.id"
	local started pids=()
	started=$(date +%s%N)
	# The formats are independent JVMs; running them side by side saves seconds of start-up.
	for n in $(node_ids); do
		format_node "$n" &
		pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p" || die "formatting the cluster's storage failed"; done
	for n in $(node_ids); do launch_node "$n"; done
	wait_nodes_ready "$started" $(node_ids)
	cat "$run_dir/bootstrap"
}

# cluster_stop_all stops every node: the brokers first, side by side, then the controller, so that a
# broker's controlled shutdown (signal $1 = TERM) can still reach the controller. KILL stops them all
# at once, as `stop` does: the data is removed next, a clean shutdown would only cost time (up to 30 s
# a broker when the controller is down already).
cluster_stop_all() {
	local sig=$1 n pids=()
	for n in $(node_ids); do
		[ "$n" = 1 ] && continue
		stop_pidfile "$(node_dir "$n")/pid" "$sig" &
		pids+=($!)
	done
	for n in "${pids[@]}"; do wait "$n" || true; done
	stop_pidfile "$(node_dir 1)/pid" "$sig"
}

cluster_restart() {
	cluster_stop_all TERM
	local started
	started=$(date +%s%N)
	local n
	for n in $(node_ids); do launch_node "$n"; done
	wait_nodes_ready "$started" $(node_ids)
}

# check_node fails unless a cluster runs in $run_dir and $1 is one of its nodes.
check_node() {
	is_cluster || die "no cluster in $run_dir (stop-node and start-node need \`start --brokers N\`)"
	case "$1" in '' | *[!0-9]*) die "node '$1' is not a node ID" ;; esac
	[ "$1" -ge 1 ] && [ "$1" -le "$(node_count)" ] || die "node $1 is not in the cluster (nodes 1..$(node_count))"
}

stop_node() {
	local n=${1:-} sig=TERM
	check_node "$n"
	case "${2:-}" in
	'') ;;
	--kill) sig=KILL ;;
	*) die "usage: broker.sh stop-node N [--kill]" ;;
	esac
	if ! node_pid_alive "$n"; then
		log "node $n is not running"
		return 0
	fi
	if [ "$sig" = TERM ] && [ "$n" != 1 ] && [ "$(voters)" = 1 ] && ! node_pid_alive 1; then
		log "the controller (node 1) is down: node $n's controlled shutdown cannot complete; it is killed after 30 s"
	fi
	stop_pidfile "$(node_dir "$n")/pid" "$sig"
	log "node $n stopped (SIG$sig); its data and ports are kept for start-node $n"
}

start_node() {
	local n=${1:-}
	check_node "$n"
	if node_pid_alive "$n"; then
		log "node $n already runs (pid $(cat "$(node_dir "$n")/pid"))"
		return 0
	fi
	local started
	started=$(date +%s%N)
	launch_node "$n"
	wait_nodes_ready "$started" "$n"
}

cluster_status() {
	local n all=0 up=0 line
	for n in $(node_ids); do
		all=$((all + 1))
		line="node $n ($(cat "$(node_dir "$n")/roles"), Kafka $(node_version "$n")) at $(cat "$(node_dir "$n")/address")"
		if node_pid_alive "$n"; then
			up=$((up + 1))
			echo "$line: running, pid $(cat "$(node_dir "$n")/pid")"
		else
			echo "$line: stopped"
		fi
	done
	echo "cluster: $up of $all nodes running at $(cat "$run_dir/bootstrap") (Kafka $(cluster_versions_text $(node_ids)), $run_dir)"
	[ "$up" = "$all" ]
}

start_cmd() {
	case "${1:-}" in
	'') start ;;
	--secure)
		secure=1
		start
		;;
	--brokers)
		[ -n "${2:-}" ] || die "usage: broker.sh start [--brokers N]"
		if [ "$2" = 1 ]; then start; else cluster_start "$2"; fi
		;;
	--brokers=*)
		local count=${1#--brokers=}
		if [ "$count" = 1 ]; then start; else cluster_start "$count"; fi
		;;
	*) die "usage: broker.sh start [--brokers N]" ;;
	esac
}

case "${1:-}" in
fetch) fetch ;;
start) start_cmd "${@:2}" ;;
restart) restart ;;
stop) stop ;;
status) status ;;
stop-node) stop_node "${@:2}" ;;
start-node) start_node "${@:2}" ;;
classpath) fetch && classpath && echo ;;
*) die "usage: broker.sh {fetch|start [--brokers N]|restart|stop|status|stop-node N [--kill]|start-node N|classpath}" ;;
esac
