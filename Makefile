# Make targets for streamsgroup. Every target that needs a broker starts its own and stops it again.
KAFKA_VERSION ?= 4.4.0
export KAFKA_VERSION
# The Kafka lines `make test` and `make test-compat` run the integration suite against: the newest
# patch of each supported line on Maven Central.
COMPAT_VERSIONS ?= 4.2.2,4.3.1,4.4.0

GO        ?= go
BROKER    := integration/kafka/broker.sh
UNIT_PKGS  = $(shell $(GO) list ./... | grep -v /integration)

.PHONY: test test-quick test-compat vet unit integration plugin store-pebble demo broker-start broker-stop broker-status bench fuzz

## test: what CI runs (.ci/run). vet, unit tests with -race, the Pebble store's tests, the
## Prometheus plugin's test against a broker, then the integration suite against every supported
## Kafka line (test-compat), each with a broker started and stopped for it, ending with the version
## table.
test: vet unit store-pebble plugin test-compat

## test-quick: vet, unit tests, the Pebble store's tests and the integration suite against one
## line (KAFKA_VERSION, default 4.4.0): the developer's loop, a third of the time of test.
test-quick: vet unit store-pebble integration

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { gofmt -l .; echo "gofmt needed"; exit 1; }
	$(GO) vet ./...
	cd plugin/sgprom && $(GO) vet ./...
	$(GO) vet -C integration/chaos ./...
	cd plugin/sgpebble && $(GO) vet ./...
	cd bench/procapp && $(GO) vet ./...
	GOOS=windows $(GO) vet ./...
	cd plugin/sgprom && GOOS=windows $(GO) vet ./...
	cd plugin/sgpebble && GOOS=windows $(GO) vet ./...
	cd bench/procapp && GOOS=windows $(GO) vet ./...

unit:
	$(GO) test -race -count=1 $(UNIT_PKGS)

integration:
	scripts/with-broker.sh $(GO) test -race -count=1 -timeout 30m ./integration/...

## store-pebble: the Pebble state store (its own module, plugin/sgpebble): its engine tests, the store
## contract, and its example app (example/totals) against a broker of KAFKA_VERSION
store-pebble:
	scripts/with-broker.sh sh -c 'cd plugin/sgpebble && $(GO) test -race -count=1 ./...'

## plugin: the Prometheus adapter (its own module, plugin/sgprom) against a broker of KAFKA_VERSION
plugin:
	scripts/with-broker.sh sh -c 'cd plugin/sgprom && $(GO) test -race -count=1 ./...'

## test-compat: the integration suite against each of COMPAT_VERSIONS (a broker of each started and
## stopped in turn), then a table version × passed/skipped/failed (top-level tests) with wall times.
## Skipped tests are listed with their reason. It fails when a line's skips or its pass count are not
## what scripts/compat/expected.txt says. COMPAT_REPORT=file also writes the table there.
test-compat:
	$(GO) run ./scripts/compat -versions $(COMPAT_VERSIONS) $(if $(COMPAT_REPORT),-report $(COMPAT_REPORT))

## demo: a local broker and a few Go members sharing a group, visibly rebalancing
demo:
	scripts/with-broker.sh $(GO) run ./examples/demo

bench:
	$(GO) test -run '^$$' -bench . -benchmem $(UNIT_PKGS)

## fuzz: every fuzz target of the core module and plugin/sgpebble (found with go test -list '^Fuzz'),
## FUZZTIME each (default 10s), one after another (scripts/fuzz.sh). Not part of test.
fuzz:
	FUZZTIME=$${FUZZTIME:-10s} scripts/fuzz.sh

## dsl-captures: regenerate dsl/testdata/kafkastreams-4.4.0.txt, the topologies Kafka Streams 4.4 sends for
## the programs of integration/javapeer DslPrograms.java (printed without a broker), and
## kafkastreams-4.4.0-outputs.txt, what they write for dsl/testdata/program-inputs.txt (TopologyTestDriver),
## and kafkastreams-4.4.0-changelogs.txt, what they write to their stores' changelogs, which the Go DSL's
## tests compare with. Needs Java 17 and Maven.
.PHONY: dsl-captures
dsl-captures:
	cd integration/javapeer && mvn -B -q -Dstyle.color=never package -DskipTests && \
	{ printf '%s\n' '# Captured from Kafka Streams 4.4.0 (Java 17) for the programs of integration/javapeer DslPrograms.java: the' \
	  '# subtopologies each application hands its consumer (what its joining heartbeat sends), printed by' \
	  '#   java -cp ... io.github.streamsgroup.peer.DslPeer --apps=programs@app --topics=t --print=true' \
	  '# Regenerate with: make dsl-captures'; \
	  java -cp "target/classes:$$(cat target/classpath.txt)" io.github.streamsgroup.peer.DslPeer \
	    --apps=programs@app --topics=t --print=true 2>/dev/null | sed -n 's/^TOPOLOGY //p'; } > ../../dsl/testdata/kafkastreams-4.4.0.txt && \
	{ printf '%s\n' '# Captured from Kafka Streams 4.4.0 (Java 17): what each program of integration/javapeer DslPrograms.java' \
	  '# writes for the records of program-inputs.txt, run in TopologyTestDriver with the record cache off unless the program sets it, printed by' \
	  '#   java -cp ... io.github.streamsgroup.peer.DslDrive dsl/testdata/program-inputs.txt' \
	  '# Lines: program, topic, key, value, timestamp (ms), the headers if any; \N null, s: text, x: hex. Regenerate with: make dsl-captures'; \
	  java -cp "target/classes:$$(cat target/classpath.txt)" io.github.streamsgroup.peer.DslDrive \
	    ../../dsl/testdata/program-inputs.txt target/changelogs.txt 2>/dev/null; } > ../../dsl/testdata/kafkastreams-4.4.0-outputs.txt && \
	{ printf '%s\n' '# Captured from Kafka Streams 4.4.0 (Java 17) with the outputs above: what each program writes to its' \
	  '# stores'"'"' changelog topics, with the record headers (key=value, | between them). Lines: program, topic,' \
	  '# key, value, timestamp (ms), headers. Regenerate with: make dsl-captures'; \
	  cat target/changelogs.txt; } > ../../dsl/testdata/kafkastreams-4.4.0-changelogs.txt

## broker-start / broker-stop: a long-lived local broker for development (see integration/kafka/broker.sh)
broker-start:
	@bash $(BROKER) start

broker-stop:
	@bash $(BROKER) stop

broker-status:
	@bash $(BROKER) status

## mutate: mutation testing with gremlins, one package at a time, and the efficacy per package against
## its target (scripts/mutate.sh). Slow, so not part of test. Pick packages with PKGS="./tasks ./config".
.PHONY: mutate
mutate:
	scripts/mutate.sh $(PKGS)

## alloc-guard: the allocation guard of the hot paths (internal/machine/alloc_test.go): a steady heartbeat
## built and encoded allocates at most 2 times, one steady machine step at most 5. Run without -race
## (the race detector allocates on its own); make test runs it.
.PHONY: alloc-guard
## It fails when TestAllocations did not run and pass (renamed, removed or skipped), not only when it fails.
alloc-guard:
	@out=$$($(GO) test -count=1 -run '^TestAllocations$$' -v ./internal/machine/ 2>&1); rc=$$?; echo "$$out"; \
	test $$rc -eq 0 || exit $$rc; \
	echo "$$out" | grep -q '^--- PASS: TestAllocations ' || { echo "alloc-guard: TestAllocations did not run and pass (renamed, removed or skipped?)"; exit 1; }
test: alloc-guard

## bench-compare: Go members side by side with Kafka Streams 4.4 on one broker started for the run
## (heartbeat 500 ms, session 6 s): start-up, convergence, steady-state cost, scaling. Writes a
## Markdown table, a JSON file and SVG charts to bench/results (BENCH_QUICK=1: a ~2-minute version,
## written to $TMPDIR/streamsgroup-bench-quick). BENCH_PHASES=processing (or any of
## p2,p1,p3,sweep,groups,micro,processing) runs some phases only and folds them into the results
## there: processing is the stream runtime vs Kafka Streams (map, count in memory / Pebble vs
## RocksDB, exactly_once_v2, restore, failover with standbys, restore after an unclean stop);
## BENCH_PROC=unclean (or any of throughput,restore,failover,unclean) runs some of its scenarios only
## and keeps the others' figures; BENCH_APPS=hopping-dsl (or a list) some throughput apps only. See
## bench/README.md.
.PHONY: bench-compare
bench-compare:
	scripts/with-broker.sh $(GO) run ./bench/cmd/benchcompare $(if $(BENCH_QUICK),-quick) $(BENCH_FLAGS)

## chaos: the seeded chaos suite (integration/chaos): its own broker, toxiproxy, member processes,
## FAULTS faults one at a time (default 20), then the ownership checker (S1 no task held twice, S2
## recovery within session + 2 heartbeats, S3 no fatal, no unexpected exit, bounded resources).
## SEED=… FAULTS=… FAULT_TYPES=… MEMBERS=… BROKERS=3 make chaos; a failing run prints its command.
## chaos-short: the checker's tests and a 20-fault schedule, seed 7 unless SEED says otherwise, so
## that CI replays one known schedule (make test runs it). soak: SOAK=30m of
## 20 members in one process and 20 alone, a fault every 30 s. See integration/chaos/README.md.
## integration/chaos is a module of its own (toxiproxy stays out of the core's go.mod), hence -C.
.PHONY: chaos chaos-short soak
chaos:
	$(GO) run -C integration/chaos ./cmd/chaos

chaos-short:
	$(GO) test -C integration/chaos -race -count=1 ./...
	SEED=$${SEED:-7} FAULTS=$${FAULTS:-20} $(GO) run -C integration/chaos ./cmd/chaos

soak:
	SOAK=$${SOAK:-30m} $(GO) run -C integration/chaos ./cmd/chaos
test: chaos-short

## chaos-eos-short: the exactly-once mode (APP=eos: the members run a counting app on the stream
## runtime under exactly_once_v2 with a Pebble store; the checker adds S4, every key's committed
## output and stored count equal to its input count, and no transaction found hanging) on the 3-node
## cluster it is meant for (BROKERS=3: a quorum of three, replication 3, min.insync.replicas=2), on a
## short known schedule, seed 72 and 8 faults unless SEED / FAULTS say otherwise: a node crashed, a
## node paused past the brokers' session, the members cut off from a node, a rolling restart, the
## transaction coordinators moved, and member faults; a few minutes. chaos-eos-cluster is the long
## schedule (200 faults, on demand); APP=eos make chaos runs any other.
.PHONY: chaos-eos-short chaos-eos-cluster
chaos-eos-short:
	APP=eos BROKERS=3 SEED=$${SEED:-72} FAULTS=$${FAULTS:-8} $(GO) run -C integration/chaos ./cmd/chaos

chaos-eos-cluster:
	APP=eos BROKERS=3 SEED=$${SEED:-20261205} FAULTS=$${FAULTS:-200} $(GO) run -C integration/chaos ./cmd/chaos
test: chaos-eos-short
