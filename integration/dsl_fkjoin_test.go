package integration

import (
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/internal/dslprograms"
)

// fkOrders is the state of p-fk-join-prices' two tables as the test writes them, from which the
// expected result of each order is computed: its item's price plus its quantity (Kafka Streams'
// documented foreign-key join result, once both tables settled).
type fkOrders struct {
	price map[string]int64    // item → price
	order map[string][2]int64 // order → item number, quantity
}

func newFKOrders() *fkOrders {
	return &fkOrders{price: map[string]int64{}, order: map[string][2]int64{}}
}

// The prices are written partitioned by key, as Kafka's default partitioner places them: a
// subscription finds its foreign row in the partition of the foreign key's hash. The orders are all
// written to partition 0, whatever their key's hash: each answer must go back to the partition its
// order came from (as Kafka Streams sends it), not to its key's.
func (o *fkOrders) setPrice(item int64, price int64, at time.Time) *kgo.Record {
	k := fmt.Sprintf("item%d", item)
	o.price[k] = price
	return byKey(&kgo.Record{Key: []byte(k), Value: []byte(fmt.Sprint(price)), Timestamp: at})
}

func (o *fkOrders) setOrder(order string, item, qty int64, at time.Time) *kgo.Record {
	o.order[order] = [2]int64{item, qty}
	return &kgo.Record{Key: []byte(order), Value: []byte(fmt.Sprintf("item%d#%d", item, qty)), Timestamp: at}
}

// byKey sets r's partition (of 2) as Kafka's default partitioner chooses it (murmur2 of the key).
func byKey(r *kgo.Record) *kgo.Record {
	r.Partition = int32(kgo.StickyKeyPartitioner(nil).ForTopic("").Partition(r, 2))
	return r
}

// want is each order's expected last result: those whose item has a price.
func (o *fkOrders) want() map[string]int64 {
	w := map[string]int64{}
	for k, iq := range o.order {
		if p, ok := o.price[fmt.Sprintf("item%d", iq[0])]; ok {
			w[k] = p + iq[1]
		}
	}
	return w
}

// A foreign-key join (p-fk-join-prices: orders "item#quantity" priced by their item) run by a Kafka
// Streams member and a Go member in one group, tasks moving Java → Go → Java. The subscriptions,
// the responses and the subscription store cross runtimes: each phase changes every price but
// updates only some orders, so the others are repriced only through the subscriptions the other
// runtime stored (restored from its changelog); orders also move to other items (an unsubscription
// on one partition, a subscription on another). Every order's last result must be its item's
// latest price plus its latest quantity.
func TestDSLForeignKeyJoinMixedGroup(t *testing.T) {
	base := time.Now().Add(-5 * time.Minute).UnixMilli()
	o := newFKOrders()
	mixedGroupRecords(t, "p-fk-join-prices", func(phase int) map[string][]*kgo.Record {
		at := func(ms int) time.Time { return time.UnixMilli(base + int64(phase*20000+ms)) }
		var prices, orders []*kgo.Record
		for i := range int64(6) {
			prices = append(prices, o.setPrice(i, int64(phase)*100+i*10, at(int(i))))
		}
		for j := range 12 {
			k := fmt.Sprintf("o%d", j)
			switch {
			case phase == 1:
				orders = append(orders, o.setOrder(k, int64(j%6), 1, at(1000+j)))
			case j%3 == phase-2: // a third of the orders change, a third move to another item
				orders = append(orders, o.setOrder(k, int64(j%6), int64(phase), at(1000+j)))
			case j%3 == (phase-1)%3:
				orders = append(orders, o.setOrder(k, int64((j+phase)%6), o.order[k][1], at(1000+j)))
			}
		}
		return map[string][]*kgo.Record{"-in": orders, "-in2": prices}
	}, o.want, false, 1)
}

// The foreign-key join of TestDSLForeignKeyJoinMixedGroup over tables written as a custom
// partitioner places them (p-fk-join-partitioned: by the number each key ends with, modulo the
// partitions), which the join is told through TableJoined's partitioners, its results written so
// too (Produced's): Kafka Streams and the Go member must agree on where each subscription, each
// answer and each result goes. Kafka's default partitioner would place a subscription for item0,
// item1 or item2 on another partition than its price's, where no answer comes from. Every order's
// last result must be its item's latest price plus its quantity, and every result must be on the
// partition of its order's number.
func TestDSLForeignKeyJoinPartitionedMixedGroup(t *testing.T) {
	base := time.Now().Add(-5 * time.Minute).UnixMilli()
	o := newFKOrders()
	byNumber := func(r *kgo.Record) *kgo.Record {
		r.Partition = int32(dslprograms.TrailingNumber(string(r.Key)) % 2)
		return r
	}
	topics := mixedGroupRecords(t, "p-fk-join-partitioned", func(phase int) map[string][]*kgo.Record {
		at := func(ms int) time.Time { return time.UnixMilli(base + int64(phase*20000+ms)) }
		var prices, orders []*kgo.Record
		for i := range int64(6) {
			prices = append(prices, byNumber(o.setPrice(i, int64(phase)*100+i*10, at(int(i)))))
		}
		for j := range 12 {
			k := fmt.Sprintf("o%d", j)
			switch {
			case phase == 1:
				orders = append(orders, byNumber(o.setOrder(k, int64(j%6), 1, at(1000+j))))
			case j%3 == phase-2:
				orders = append(orders, byNumber(o.setOrder(k, int64((j+phase)%6), int64(phase), at(1000+j))))
			}
		}
		return map[string][]*kgo.Record{"-in": orders, "-in2": prices}
	}, o.want, false, 3)
	// The results went through the repartition topic on the partition after their number's (of
	// 2, as many as the join's inputs), then to the output on their number's (of 3), those of
	// o0, o5 and o10 to every partition.
	repartitioned := 0
	readCommitted(t, clientsOf(t, Get(t)), strings.TrimSuffix(topics, "-p-fk-join-partitioned")+"-app-rekeyed-repartition", func(r *kgo.Record) {
		repartitioned++
		if want := int32(dslprograms.TrailingNumber(string(r.Key))+1) % 2; r.Partition != want {
			t.Errorf("the result of %s is on partition %d of the repartition topic, want %d", r.Key, r.Partition, want)
		}
	})
	on := map[string]map[int32]int{}
	readCommitted(t, clientsOf(t, Get(t)), topics+"-out", func(r *kgo.Record) {
		k := string(r.Key)
		if on[k] == nil {
			on[k] = map[int32]int{}
		}
		on[k][r.Partition]++
	})
	if repartitioned < len(o.order) || len(on) != len(o.order) {
		t.Fatalf("%d results repartitioned, results of %d orders written, for %d orders", repartitioned, len(on), len(o.order))
	}
	for k, parts := range on {
		n := dslprograms.TrailingNumber(k)
		want := map[int32]bool{int32(n % 3): true}
		if n%5 == 0 {
			want = map[int32]bool{0: true, 1: true, 2: true}
		}
		for p, count := range parts {
			if !want[p] {
				t.Errorf("a result of %s is on partition %d, want %v", k, p, want)
			}
			if n%5 == 0 && count != parts[0] {
				t.Errorf("%s's results on partitions %v: every partition must have each", k, parts)
			}
		}
		if len(parts) != len(want) {
			t.Errorf("%s's results are on partitions %v, want %v", k, parts, want)
		}
	}
}

// The foreign-key join of TestDSLForeignKeyJoinMixedGroup under exactly_once_v2, the Go member
// killed while orders and prices flow: read_committed, every order's last result must be its
// item's latest price plus its latest quantity, whichever runtime answered it and whatever the kill
// aborted.
func TestDSLForeignKeyJoinMixedGroupExactlyOnce(t *testing.T) {
	next := time.Now().Add(-10 * time.Minute).UnixMilli()
	o := newFKOrders()
	mixedGroupExactlyOnceRecords(t, "p-fk-join-prices", func(phase, n int) map[string][]*kgo.Record {
		in := map[string][]*kgo.Record{}
		for i := range int64(5) {
			next++
			in["-in2"] = append(in["-in2"], o.setPrice(i, int64(phase)*100+i, time.UnixMilli(next)))
		}
		for j := range n {
			next += 20
			k := fmt.Sprintf("o%d", j%25)
			in["-in"] = append(in["-in"], o.setOrder(k, int64((j/25+phase)%5), o.order[k][1]+1, time.UnixMilli(next)))
		}
		return in
	}, func() map[string]int64 { return maps.Clone(o.want()) }, nil, 0)
}

// Quantities priced as of their time by a versioned table, held for a 5 s grace
// (p-join-versioned-prices: price * 1000 + quantity), by a Kafka Streams member and a Go member in
// one group, tasks moving Java → Go → Java. Each phase writes prices, then quantities: some early in
// the phase, which a later record of the phase releases, and some held when the first phase ends,
// released by the next phase's first record on the Go member. Those must be priced as of their
// time, with the first phase's prices although the second phase wrote newer ones first: the Go
// member must restore Kafka Streams' held records and versions. The last phase's Kafka Streams
// member prices quantities late for the grace (joined at once) as of the second phase, from the
// versions it restored from the Go member's changelog.
//
// Kafka Streams 4.4 cannot restore held records itself: its buffer's restore reads the changelog
// keys it wrote (a 0 byte, the time, the key, a sequence number) as window keys (the key, the time,
// the number). So the second phase releases everything it held (tick2) before Kafka Streams takes
// over, which then holds nothing worth restoring.
func TestDSLVersionedJoinMixedGroup(t *testing.T) {
	base := time.Now().Add(-10 * time.Minute).UnixMilli()
	want := map[string]int64{}
	mixedGroupRecords(t, "p-join-versioned-prices", func(phase int) map[string][]*kgo.Record {
		p := int64(phase)
		t0 := base + p*20000
		rec := func(k string, v int64, ts int64) *kgo.Record {
			return &kgo.Record{Key: []byte(k), Value: []byte(fmt.Sprint(v)), Timestamp: time.UnixMilli(ts)}
		}
		var prices, qtys []*kgo.Record
		for i := range int64(4) {
			price := p*100 + i
			now, held, prev := fmt.Sprintf("now%d", i), fmt.Sprintf("p%d-i%d", p, i), fmt.Sprintf("p%d-i%d", p-1, i)
			prices = append(prices, rec(now, price, t0), rec(held, price, t0), rec(prev, price+50, t0))
			qtys = append(qtys, rec(now, p, t0+500))
			want[now] = price*1000 + p
			switch phase {
			case 2: // the first phase's held quantity, released by this phase's first record
				want[prev] = (price-100)*1000 + p - 1
				want[held] = price*1000 + p // released by tick2
			case 3: // late for the grace: at once, as of the second phase
				qtys = append(qtys, rec(prev, 9, t0-20000+2000))
				want[prev] = (price-100)*1000 + 9
			}
		}
		for i := range int64(4) {
			qtys = append(qtys, rec(fmt.Sprintf("p%d-i%d", p, i), p, t0+1000))
		}
		qtys = append(qtys, rec("tick", 0, t0+5800)) // releases what is 5 s older: the now quantities
		if phase == 2 {
			qtys = append(qtys, rec("tick2", 0, t0+7000)) // releases the rest before Kafka Streams takes over
		}
		return map[string][]*kgo.Record{"-in": qtys, "-in2": prices}
	}, func() map[string]int64 { return maps.Clone(want) }, false, 1)
}
