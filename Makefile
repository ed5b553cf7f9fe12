# Make targets for streamsgroup. Every target that needs a broker starts its own and stops it again.
KAFKA_VERSION ?= 4.4.0
export KAFKA_VERSION

GO        ?= go
BROKER    := integration/kafka/broker.sh
UNIT_PKGS  = $(shell $(GO) list ./... | grep -v /integration)

.PHONY: test vet unit integration demo broker-start broker-stop broker-status bench fuzz

## test: vet, unit tests with -race, then integration tests against a broker started and stopped here
test: vet unit integration

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { gofmt -l .; echo "gofmt needed"; exit 1; }
	$(GO) vet ./...

unit:
	$(GO) test -race -count=1 $(UNIT_PKGS)

integration:
	scripts/with-broker.sh $(GO) test -race -count=1 -timeout 30m ./integration/...

## demo: a local broker and a few Go members sharing a group, visibly rebalancing
demo:
	scripts/with-broker.sh $(GO) run ./examples/demo

bench:
	$(GO) test -run '^$$' -bench . -benchmem $(UNIT_PKGS)

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
