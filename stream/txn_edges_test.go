package stream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/config"
	sm "github.com/streamsgroup/streamsgroup/internal/streammachine"
)

// Edges of the exactly-once producer (txn.go): what starting it logs, and what a producer that
// cannot begin a transaction means.

// drainMsgs returns the messages sent on msgs so far.
func drainMsgs(msgs chan string) []string {
	var out []string
	for {
		select {
		case m := <-msgs:
			out = append(out, m)
		default:
			return out
		}
	}
}

// count is how many of msgs are m.
func count(msgs []string, m string) int {
	n := 0
	for _, s := range msgs {
		if s == m {
			n++
		}
	}
	return n
}

const (
	waitingMsg  = "cannot reach the transaction coordinator yet; retrying"
	answeredMsg = "the transaction coordinator answered; starting"
)

// A coordinator that answers at once starts the producer without a word: the warning of a wait,
// and the news that the coordinator answered after one, are only for a start that had to wait.
func TestInitProducerAtOnceSaysNothing(t *testing.T) {
	msgs := make(chan string, 1000)
	a := eosApp(t, testProcs(), WithLogger(slog.New(signalingHandler{msgs})))
	drainMsgs(msgs)
	mustNotErr(t, a.initProducer(context.Background()))
	got := drainMsgs(msgs)
	if count(got, waitingMsg) != 0 || count(got, answeredMsg) != 0 {
		t.Fatalf("logged %q; want neither a wait nor its end", got)
	}
}

// dialCounter is a kgo hook that signals every connection attempt to a broker.
type dialCounter struct{ dials chan struct{} }

func (d dialCounter) OnBrokerConnect(kgo.BrokerMetadata, time.Duration, net.Conn, error) {
	select {
	case d.dials <- struct{}{}:
	default:
	}
}

// A start that waits for the cluster warns once, however many attempts the wait takes, and says
// when the coordinator answered.
func TestInitProducerWarnsOnceAndSaysWhenItStarts(t *testing.T) {
	port := freePort(t)
	msgs := make(chan string, 1000)
	dials := dialCounter{make(chan struct{}, 1000)}
	a := unstartedEOSApp(t, port, msgs, WithClientOptions(kgo.WithHooks(dials)))
	done := make(chan error, 1)
	go func() { done <- a.initProducer(context.Background()) }()
	var seen []string
	for m := range msgs {
		seen = append(seen, m)
		if m == waitingMsg {
			break
		}
	}
	// A few more attempts fail before the cluster comes (every attempt dials at least once).
	drainDials := len(dials.dials)
	for range drainDials {
		<-dials.dials
	}
	for range 4 {
		<-dials.dials
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(port))
	mustNotErr(t, err)
	defer c.Close()
	if err := <-done; err != nil {
		t.Fatalf("initProducer once the cluster answers: %v", err)
	}
	seen = append(seen, drainMsgs(msgs)...)
	if count(seen, waitingMsg) != 1 || count(seen, answeredMsg) != 1 {
		t.Fatalf("logged %q; want the wait's warning once and the coordinator's answer once", seen)
	}
}

// A transactional producer that cannot begin a transaction: fenced or asked to abort (a broker
// error that a new producer gets past), the record is refused with a ProduceError saying the
// producer is unusable, of no partition (-1, Kafka's unknown partition: the record was never
// partitioned), and the application goes on (the next commit replaces the producer); refused for
// good (an authorization error), the application fails with a TxnError and nothing is kept as the
// record's error.
func TestEnsureTxnWhenTheProducerCannotBegin(t *testing.T) {
	for _, tc := range []struct {
		code  int16
		fatal bool
	}{
		{kerr.ProducerFenced.Code, false},
		{kerr.TransactionAbortable.Code, false},
		{kerr.TransactionalIDAuthorizationFailed.Code, true},
	} {
		t.Run(kerr.ErrorForCode(tc.code).(*kerr.Error).Message, func(t *testing.T) {
			c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "in", "out"))
			mustNotErr(t, err)
			t.Cleanup(c.Close)
			c.ControlKey(int16(kmsg.InitProducerID), func(req kmsg.Request) (kmsg.Response, error, bool) {
				c.KeepControl()
				resp := req.(*kmsg.InitProducerIDRequest).ResponseKind().(*kmsg.InitProducerIDResponse)
				resp.ErrorCode = tc.code
				return resp, nil, true
			})
			cfg := testConfig()
			cfg.BootstrapServers = c.ListenAddrs()
			cfg.Runtime.Guarantee, cfg.Runtime.CommitInterval = config.ExactlyOnceV2, config.DefaultCommitIntervalEOS
			a, _ := newTestApp(t, cfg, testProcs())
			mustNotErr(t, a.build())
			t.Cleanup(func() {
				a.offsets.Close()
				a.producer().Close()
				a.cl.Close()
			})
			a.mu.Lock()
			ok := a.ensureTxn("out")
			a.mu.Unlock()
			if ok || a.mach.TxnOpen() {
				t.Fatalf("ensureTxn %v, transaction open %v; want the record refused", ok, a.mach.TxnOpen())
			}
			pe := a.produceErr.Load()
			var te *TxnError
			switch {
			case tc.fatal && (!errors.As(a.fatalErr(), &te) || pe != nil):
				t.Fatalf("fatal %v, record error %v; want the application failed with a TxnError, no record error", a.fatalErr(), pe)
			case !tc.fatal && a.fatalErr() != nil:
				t.Fatalf("fatal %v; want the application going on", a.fatalErr())
			case !tc.fatal && (pe == nil || pe.Topic != "out" || pe.Partition != -1 || !errors.Is(pe.Err, sm.ErrProducerUnusable)):
				t.Fatalf("record error %s; want out[-1] with ErrProducerUnusable", fmt.Sprint(pe))
			}
		})
	}
}

// What BeginTransaction's failures lead to: a producer kgo gave up on — fenced, asked to abort, or
// whose producer ID could not be loaded because a stopping broker closed the connection as it was
// opened (kgo does not retry that) — is replaced; an authorization error or a closed client ends
// the application.
func TestRenewsProducer(t *testing.T) {
	loadFail := fmt.Errorf("producer ID has a fatal, unrecoverable error, err: %w",
		fmt.Errorf("unable to initialize a producer ID due to request failures: %w", &kgo.ErrFirstReadEOF{}))
	for _, tc := range []struct {
		err   error
		renew bool
	}{
		{kerr.ProducerFenced, true},
		{kerr.InvalidTxnState, true},
		{kerr.TransactionAbortable, true},
		{loadFail, true},
		{kerr.TransactionalIDAuthorizationFailed, false},
		{fmt.Errorf("begin: %w", kgo.ErrClientClosed), false},
		{&TxnError{Err: kerr.ProducerFenced}, false},
		{errors.New("something else"), false},
		{fmt.Errorf("dial: %w", syscall.ECONNREFUSED), true},
	} {
		if got := renewsProducer(tc.err); got != tc.renew {
			t.Errorf("renewsProducer(%v) = %v, want %v", tc.err, got, tc.renew)
		}
	}
}
