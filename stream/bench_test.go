package stream

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/consume"
)

// BenchmarkCountRecord is the runtime's path of one record of a count (a store read, a store write
// with its changelog record, an output record) under at-least-once, against an in-process fake
// broker: its allocations per record are what the runtime adds to the work (go test -bench Count
// -benchmem ./stream).
func BenchmarkCountRecord(b *testing.B) {
	proc := countProcessor(nil)
	a, _ := newTestApp(&testing.T{}, testConfig(), Processors{"0": nopProc, "1": proc})
	fakeBroker(&testing.T{}, a)
	tk, err := a.openTask(context.Background(), tid("1", 0))
	if err != nil {
		b.Fatal(err)
	}
	tk.active = true
	a.tasks[tk.id] = tk
	startFrom(&testing.T{}, a, tk.id, nil)
	startRunning(&testing.T{}, a, tk.id)
	const n = 256
	r := consume.Records{Task: tk.id, Role: consume.Active, Partition: tk.stores["counts"].changelog}
	r.Partition.Topic = repartTopc
	for i := range n {
		r.Records = append(r.Records, &kgo.Record{Topic: repartTopc, Key: []byte(fmt.Sprint("k", i%100)), Value: []byte("v"),
			Offset: int64(i), Timestamp: time.UnixMilli(int64(i))})
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += n {
		a.mu.Lock()
		if stop := a.process([]consume.Records{r}); stop != nil {
			b.Fatal(a.fatalErr())
		}
		a.mu.Unlock()
	}
}
