#!/usr/bin/env bash
# broker.sh — a single-node Apache Kafka (KRaft, combined broker+controller) on loopback, run from the
# Maven Central jars, for the demo and the integration tests.
#
#   broker.sh fetch     resolve the jars for KAFKA_VERSION into the cache (reused on later runs)
#   broker.sh start     fetch, write the config (free ports), format, start, wait until ready, print the address
#   broker.sh restart   stop the running broker and start it again on the same ports and data (for failover tests)
#   broker.sh stop      stop the broker this script started (by its PID) and remove its run directory
#   broker.sh status    say whether the broker is running and where
#   broker.sh classpath print the class path of the cached jars (for Kafka's own tools)
#
# Environment:
#   KAFKA_VERSION          Apache Kafka version (default 4.4.0; 4.3.x and 4.2.x work the same way)
#   STREAMSGROUP_CACHE     where jars are cached (default ${XDG_CACHE_HOME:-$HOME/.cache}/streamsgroup)
#   STREAMSGROUP_RUN_DIR   config, data, log and PID of the running broker (default ${TMPDIR:-/tmp}/streamsgroup-broker)
#   BROKER_READY_TIMEOUT   seconds to wait for readiness (default 120)
#   STREAMSGROUP_BROKER_EXTRA
#                          extra server properties for `start`, as space-separated key=value words
#                          (e.g. "group.coordinator.rebalance.protocols=classic,consumer"); they are
#                          appended to server.properties after the defaults above, so a key given here
#                          overrides the default (the last occurrence of a key wins). A value cannot
#                          contain spaces. Used by tests that start a dedicated broker with a special config.
#
# After `start`, $STREAMSGROUP_RUN_DIR/env holds `STREAMSGROUP_BOOTSTRAP=host:port` and the other facts the
# tests read, so `. "$STREAMSGROUP_RUN_DIR/env"` sets them in a shell.
set -euo pipefail

KAFKA_VERSION=${KAFKA_VERSION:-4.4.0}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache_root=${STREAMSGROUP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/streamsgroup}
libs="$cache_root/kafka-$KAFKA_VERSION/libs"
run_dir=${STREAMSGROUP_RUN_DIR:-${TMPDIR:-/tmp}/streamsgroup-broker}
ready_timeout=${BROKER_READY_TIMEOUT:-120}

log() { printf 'broker.sh: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

fetch() {
	if [ -f "$libs/.complete" ]; then
		return 0
	fi
	command -v mvn >/dev/null || die "Maven (mvn) is needed to download the Kafka jars: apt-get install maven"
	command -v java >/dev/null || die "Java 17+ is needed to run the broker: apt-get install openjdk-17-jre-headless"
	log "resolving Apache Kafka $KAFKA_VERSION jars into $libs"
	local tmp="$libs.partial"
	rm -rf "$tmp"
	mkdir -p "$tmp"
	# Maven prints colour codes even in batch mode; strip them from what reaches the terminal.
	local ok=1
	mvn -B -q -Dstyle.color=never -f "$here/pom.xml" -Dkafka.version="$KAFKA_VERSION" \
		dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp" >"$tmp.log" 2>&1 || ok=0
	sed 's/\x1b\[[0-9;]*m//g' "$tmp.log" | grep -v '^[[:space:]]*$' >&2 || true
	rm -f "$tmp.log"
	[ "$ok" = 1 ] || die "Maven could not resolve org.apache.kafka:kafka_2.13:$KAFKA_VERSION"
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
# Fast-test group settings: short heartbeats and sessions, no initial delay, no assignment batching.
group.streams.min.heartbeat.interval.ms=100
group.streams.heartbeat.interval.ms=500
group.streams.min.session.timeout.ms=1000
group.streams.session.timeout.ms=6000
group.streams.initial.rebalance.delay.ms=0
group.streams.assignment.interval.ms=0
group.streams.min.task.offset.interval.ms=100
group.initial.rebalance.delay.ms=0
EOF
	append_extra_properties
	cat >"$run_dir/log4j2.properties" <<EOF
rootLogger.level=INFO
rootLogger.appenderRef.file.ref=file
appender.file.type=File
appender.file.name=file
appender.file.fileName=$run_dir/broker.log
appender.file.layout.type=PatternLayout
appender.file.layout.pattern=[%d] %p %m (%c)%n
logger.kafka.name=kafka
logger.kafka.level=INFO
logger.state.name=state.change.logger
logger.state.level=WARN
EOF
}

# append_extra_properties appends the key=value words of STREAMSGROUP_BROKER_EXTRA to server.properties.
append_extra_properties() {
	[ -n "${STREAMSGROUP_BROKER_EXTRA:-}" ] || return 0
	local kv extra
	read -r -a extra <<<"$STREAMSGROUP_BROKER_EXTRA"
	echo "# Extra properties from STREAMSGROUP_BROKER_EXTRA (override the defaults above)." >>"$run_dir/server.properties"
	for kv in "${extra[@]}"; do
		case "$kv" in
		?*=*) printf '%s\n' "$kv" >>"$run_dir/server.properties" ;;
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
			format --standalone -t "$id" -c "$run_dir/server.properties" >"$run_dir/format.log" 2>&1 \
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
	launch
	cat "$run_dir/bootstrap"
}

# stop_process ends the broker by the PID this script recorded, politely first (the broker shuts down
# cleanly on SIGTERM), then with SIGKILL if it has not gone within 30 s.
stop_process() {
	pid_alive || { rm -f "$run_dir/pid"; return 0; }
	local pid i
	pid=$(cat "$run_dir/pid")
	kill -TERM "$pid" 2>/dev/null || true
	for i in $(seq 1 300); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		log "broker pid $pid did not stop on SIGTERM; killing it"
		kill -KILL "$pid" 2>/dev/null || true
		while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
	fi
	rm -f "$run_dir/pid"
}

restart() {
	[ -f "$run_dir/bootstrap" ] || die "no broker to restart in $run_dir"
	stop_process
	launch
}

stop() {
	if [ -d "$run_dir" ]; then
		stop_process
		rm -rf "$run_dir"
		log "stopped and removed $run_dir"
	fi
}

status() {
	if pid_alive; then
		echo "running: pid $(cat "$run_dir/pid") at $(cat "$run_dir/bootstrap") (Kafka $KAFKA_VERSION, $run_dir)"
	else
		echo "not running"
		return 1
	fi
}

case "${1:-}" in
fetch) fetch ;;
start) start ;;
restart) restart ;;
stop) stop ;;
status) status ;;
classpath) fetch && classpath && echo ;;
*) die "usage: broker.sh {fetch|start|restart|stop|status|classpath}" ;;
esac
