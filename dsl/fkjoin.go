package dsl

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/stream"
	"github.com/streamsgroup/streamsgroup/topology"
)

// JoinForeignKey joins each row of t with the row of other whose key fk extracts from it (Kafka
// Streams' KTable.join with a foreign-key extractor): the result, keyed as t, holds fn of both
// values for each row of t whose foreign key other holds, and follows both tables: a row of t that
// changes, or changes its foreign key, and a row of other that changes, update every result they
// make; a row leaving either table, or a foreign key that leaves other, deletes the result. fk's
// result is no foreign key when it is the nil of its type (the row then joins nothing). fn's
// result is a deletion when it is the nil of its type. opts: Named (TableJoined.as: the join's
// nodes, internal topics and store are named <name>-…), or a TableJoined[K, KO] with its
// partitioners for tables a custom partitioner wrote, and Materialized[K, VR] to keep the result
// in a store.
//
// The tables need not be co-partitioned: each row of t subscribes to its foreign key through the
// topic <application.id>-<name>-subscription-registration-topic, partitioned as other, whose side
// keeps the subscriptions in <name>-subscription-store and answers through
// <application.id>-<name>-subscription-response-topic, partitioned as t. An answer that no longer
// matches its row (the row changed since it asked: its value's hash differs) is dropped, so the
// result never shows a row joined with an old foreign value. Every part is in Kafka Streams 4.4's
// formats: Java members run the same join in the same group. Both tables are kept in stores (a
// table read from a topic gets its generated store), as there.
func JoinForeignKey[K, V, KO, VO, VR any](t *KTable[K, V], other *KTable[KO, VO], fk func(K, V) KO, fn func(k K, v V, vo VO) VR, opts ...TableOption) *KTable[K, VR] {
	return foreignKeyJoin(t, other, "JoinForeignKey", false, fk, func(k K, v V, vo VO, _ bool) VR { return fn(k, v, vo) }, opts)
}

// LeftJoinForeignKey joins t with other by foreign key as JoinForeignKey does, but keeps every row
// of t (Kafka Streams' KTable.leftJoin with a foreign-key extractor): fn gets found false and VO's
// zero value for a row whose foreign key other does not hold, or that has none (Java's joiner gets
// null).
func LeftJoinForeignKey[K, V, KO, VO, VR any](t *KTable[K, V], other *KTable[KO, VO], fk func(K, V) KO, fn func(k K, v V, vo VO, found bool) VR, opts ...TableOption) *KTable[K, VR] {
	return foreignKeyJoin(t, other, "LeftJoinForeignKey", true, fk, fn, opts)
}

// fkPartition is the partition of topic part places a foreign-key join's record with key k on,
// chosen false when part leaves it to the default; anything but one partition of the topic is an
// error (Kafka Streams' "should be a singleton set").
func fkPartition[KK any](c *stream.Context, topic string, part StreamPartitioner[KK, struct{}], k KK, headers []kgo.RecordHeader) (p int32, chosen bool, err error) {
	n, err := c.PartitionCount(topic)
	if err != nil {
		return 0, false, fmt.Errorf("dsl: placing a record on %s: %w", topic, err)
	}
	ps, ok := part(topic, k, struct{}{}, headers, n)
	if !ok {
		return 0, false, nil
	}
	if ps = distinct(ps); len(ps) != 1 {
		return 0, false, fmt.Errorf("%w: %d partitions of %s for a foreign-key join's record, which goes to exactly one", ErrPartition, len(ps), topic)
	}
	if err := partitionsIn(topic, ps, n); err != nil {
		return 0, false, err
	}
	return ps[0], true, nil
}

// foreignKeyJoin adds a foreign-key join (Kafka Streams' KTableImpl.doJoinOnForeignKey), its nodes
// named and numbered as there: on t's side the subscription sender and the response resolver, on
// other's the subscription receiver and the two joins that answer (a new subscription, a changed
// foreign row), and the result, a table as a KTableSource makes.
func foreignKeyJoin[K, V, KO, VO, VR any](t *KTable[K, V], other *KTable[KO, VO], op string, left bool,
	fk func(K, V) KO, fn func(k K, v V, vo VO, found bool) VR, opts []TableOption) *KTable[K, VR] {
	b := t.b
	var tj TableJoined[K, KO]
	rest := make([]TableOption, 0, len(opts))
	for _, o := range opts {
		if j, ok := o.(TableJoined[K, KO]); ok {
			tj = j
			if j.Name != "" {
				rest = append(rest, Named(j.Name))
			}
			continue
		}
		if _, ok := o.(interface{ tableJoined() }); ok {
			b.fail("%s: the option %T is not a TableJoined[%s, %s], of the tables' key types", op, o, typeName[K](), typeName[KO]())
			continue
		}
		rest = append(rest, o)
	}
	named, m, _ := tableOptions[K, VR](b, op, rest)
	if !joinable(t, other, op) {
		return &KTable[K, VR]{b: b, n: t.n, out: newFanout[K, change[VR]](b)}
	}
	if fk == nil || fn == nil {
		b.fail("%s needs a foreign-key extractor and a joiner", op)
	}
	if t.ks == nil || t.vs == nil || other.ks == nil || other.vs == nil {
		b.fail("%s needs both tables' serdes (Materialized): %s and %s, %s and %s", op,
			typeName[K](), typeName[V](), typeName[KO](), typeName[VO]())
	}
	// Kafka Streams has both tables send old values (so both are kept in stores) before it names
	// anything.
	other.enableOld(true)
	t.enableOld(true)
	n := string(named)
	registration := b.suffixedOr(n, "-subscription-registration", "KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-") + "-topic"
	sendName := b.suffixedOr(n, "-subscription-registration-processor", "KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-")
	send := b.add(&node{name: sendName, kind: processorNode}, t.n)
	subSink := b.add(&node{name: b.suffixedOr(n, "-subscription-registration-sink", "KTABLE-SINK-"), kind: sinkNode,
		topic: registration, internal: true}, send)
	subSource := b.add(&node{name: b.suffixedOr(n, "-subscription-registration-source", "KTABLE-SOURCE-"), kind: sourceNode,
		topic: registration, internal: true, writer: subSink})
	b.copartitions = append(b.copartitions, [][]*node{other.sources, {subSource}})
	subStore := b.suffixedOr(n, "-subscription-store", "KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-")
	b.declare(subStore, storeKind{decl: stream.RecordHeadersStore(subStore), changelog: func(n topology.Names) topology.TopicInfo { return n.KeyValueChangelog(subStore) }})
	receive := b.add(&node{name: b.suffixedOr(n, "-subscription-receive", "KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-"), kind: processorNode,
		stores: []string{subStore}}, subSource)
	otherStores, getOther := other.valueGetter()
	joinForeign := b.add(&node{name: b.suffixedOr(n, "-subscription-join-foreign", "KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-"), kind: processorNode,
		reads: otherStores}, receive)
	foreignJoin := b.add(&node{name: b.suffixedOr(n, "-foreign-join-subscription", "KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-"), kind: processorNode,
		reads: []string{subStore}}, other.n)
	responses := b.suffixedOr(n, "-subscription-response", "KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-") + "-topic"
	respSink := b.add(&node{name: b.suffixedOr(n, "-subscription-response-sink", "KTABLE-SINK-"), kind: sinkNode,
		topic: responses, internal: true}, joinForeign, foreignJoin)
	respSource := b.add(&node{name: b.suffixedOr(n, "-subscription-response-source", "KTABLE-SOURCE-"), kind: sourceNode,
		topic: responses, internal: true, writer: respSink})
	b.copartitions = append(b.copartitions, [][]*node{t.sources, {respSource}})
	thisStores, getThis := t.valueGetter()
	resolver := b.add(&node{name: b.suffixedOr(n, "-subscription-response-resolver", "KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-RESOLVER-PROCESSOR-"),
		kind: processorNode, reads: thisStores}, respSource)
	result := b.add(&node{name: b.suffixedOr(n, "-result", "KTABLE-FK-JOIN-OUTPUT-"), kind: processorNode}, resolver)
	unkept := ""
	if m.Name == "" {
		// Kafka Streams' Materialized takes a store name whether or not it keeps the result.
		unkept = b.newStoreName("KTABLE-FK-JOIN-OUTPUT-")
	}
	ks, vs := m.Key, m.Value
	if ks == nil {
		ks = t.ks
	}
	if vs == nil {
		vs = defaultSerde[VR]()
	}
	in := newFanout[K, VR](b)
	sources := append(append([]*node(nil), t.sources...), respSource)
	f := sourceTable(b, result, ks, vs, m.Name, unkept, m.CachingDisabled, sources, in, false, 0)
	if b.built || fk == nil || fn == nil || t.ks == nil || t.vs == nil || other.ks == nil || other.vs == nil {
		return f
	}

	fkNil := nilCheck[KO]()
	// fkOf is the foreign key of a row and its bytes (nil: none).
	fkOf := func(k K, v V) (KO, []byte, error) {
		ko := fk(k, v)
		if fkNil != nil && fkNil(ko) {
			return ko, nil, nil
		}
		kb, err := other.ks.Encode(ko)
		if err != nil {
			return ko, nil, fmt.Errorf("dsl: encoding the foreign key of %s: %w", sendName, err)
		}
		return ko, kb, nil
	}
	// hashOf is the hash of a row's value, by which its answers are matched to it.
	hashOf := func(v V) (valueHash, error) {
		vb, err := t.vs.Encode(v)
		if err != nil {
			return valueHash{}, fmt.Errorf("dsl: encoding a value of the table joined by %s: %w", sendName, err)
		}
		return murmur3(vb), nil
	}

	// t's side: each update subscribes its row to its foreign key, and unsubscribes it from the one
	// it had (Kafka Streams' SubscriptionSendProcessorSupplier).
	t.out.attach(func(c *stream.Context, md meta, k K, ch change[V]) error {
		if t.droppedOutOfOrder(c, ch) {
			return nil
		}
		var oldKO, newKO KO
		var oldFK, newFK []byte
		var err error
		if ch.hasOld {
			if oldKO, oldFK, err = fkOf(k, ch.old); err != nil {
				return err
			}
		}
		if ch.hasNew {
			if newKO, newFK, err = fkOf(k, ch.new); err != nil {
				return err
			}
		}
		// The key and the hash are made only for a subscription sent, as Kafka Streams serializes
		// them (an update that sends none encodes nothing).
		var pk []byte
		var hash valueHash
		subscribe := func(ko KO, to []byte, instr fkInstruction) error {
			if pk == nil {
				if pk, err = t.ks.Encode(k); err != nil {
					return fmt.Errorf("dsl: encoding a key of the table joined by %s: %w", sendName, err)
				}
				if pk == nil {
					pk = []byte{}
				}
				if ch.hasNew {
					if hash, err = hashOf(ch.new); err != nil {
						return err
					}
				}
			}
			// The partition the answer comes back to is the task's: every input of the table's
			// subtopology is co-partitioned (Kafka Streams takes the record's, the same but in a
			// punctuation, where it has none).
			v := encodeSubscription(subscription{version: subscriptionVersion, hash: hash, instr: instr, pk: pk, partition: c.Task().Partition})
			headers := md.headersOf(c)
			if tj.OtherPartitioner != nil {
				// Placed with the other table's row, as its custom partitioner placed it (Kafka
				// Streams' SubscriptionSinkPartitioner).
				p, chosen, err := fkPartition(c, subSink.sendTo, tj.OtherPartitioner, ko, headers)
				if err != nil {
					return err
				}
				if chosen {
					return c.SendTo(subSink.sendTo, p, recordTime(c, md), to, v, headers...)
				}
			}
			return c.SendAt(subSink.sendTo, recordTime(c, md), to, v, headers...)
		}
		changed := ch.hasOld && oldFK != nil && (newFK == nil || string(newFK) != string(oldFK))
		if left {
			if !ch.hasOld && !ch.hasNew {
				return nil
			}
			if changed {
				if err := subscribe(oldKO, oldFK, deleteNoPropagate); err != nil {
					return err
				}
			}
			// Every update asks for an answer, a deletion and a row without a foreign key too (their
			// subscription, without a key, keeps nothing): the result always follows t.
			return subscribe(newKO, newFK, propagateNullIfNoFK)
		}
		switch {
		case !ch.hasNew:
			if oldFK != nil {
				return subscribe(oldKO, oldFK, deleteAndPropagate)
			}
		case newFK == nil:
			c.Dropped() // Kafka Streams skips and counts a row without a foreign key
			if oldFK != nil {
				return subscribe(oldKO, oldFK, deleteAndPropagate)
			}
		case changed:
			if err := subscribe(oldKO, oldFK, deleteNoPropagate); err != nil {
				return err
			}
			return subscribe(newKO, newFK, propagateNullIfNoFK)
		default:
			// A new row, or one whose foreign key stayed: an answer only if it joins (had it not
			// joined before, with the same key, there is no result to delete).
			return subscribe(newKO, newFK, propagateOnlyIfFK)
		}
		return nil
	})

	// other's side: a subscription is kept (or removed) and answered with the foreign row's value
	// (Kafka Streams' SubscriptionReceiveProcessorSupplier and SubscriptionJoinProcessorSupplier).
	answer := func(c *stream.Context, at time.Time, headers []kgo.RecordHeader, s subscription, value []byte) error {
		r := encodeResponse(response{hash: s.hash, value: value})
		if tj.Partitioner != nil {
			// Placed as the left table's custom partitioner places its row's key, not on the
			// partition the subscription names (Kafka Streams' ForeignResponseSinkPartitioner).
			pk, err := t.ks.Decode(s.pk)
			if err != nil {
				return fmt.Errorf("dsl: decoding a key of the table joined by %s: %w", sendName, err)
			}
			p, chosen, err := fkPartition(c, respSink.sendTo, tj.Partitioner, pk, headers)
			if err != nil {
				return err
			}
			if chosen {
				return c.SendTo(respSink.sendTo, p, at, s.pk, r, headers...)
			}
			return c.SendAt(respSink.sendTo, at, s.pk, r, headers...) // left to the default: by key
		}
		if s.version > 0 {
			return c.SendTo(respSink.sendTo, s.partition, at, s.pk, r, headers...)
		}
		return c.SendAt(respSink.sendTo, at, s.pk, r, headers...) // no partition before version 1: by key
	}
	subSource.entry = func(c *stream.Context, r *stream.Record) error {
		if r.Value == nil {
			return stream.UndecodableRecord(fmt.Errorf("a foreign-key subscription without a value"))
		}
		s, err := decodeSubscription(r.Value)
		if err != nil {
			return stream.UndecodableRecord(fmt.Errorf("value: %w", err))
		}
		if r.Key == nil && s.instr != propagateNullIfNoFK {
			c.Dropped()
			return nil
		}
		var ko KO
		if r.Key != nil {
			if ko, err = other.ks.Decode(r.Key); err != nil {
				return stream.UndecodableRecord(fmt.Errorf("key: %w", err))
			}
			st, key := c.Store(subStore), combinedKey(r.Key, s.pk)
			if s.instr == deleteAndPropagate || s.instr == deleteNoPropagate {
				err = st.Delete(key)
			} else {
				// Kept as Kafka Streams keeps it: the record's timestamp and its value as it came.
				err = st.Put(key, append(binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(r.Value)), uint64(r.Timestamp.UnixMilli())), r.Value...))
			}
			if err != nil {
				return err
			}
		}
		if s.instr == deleteNoPropagate {
			return nil
		}
		var fv stamped[VO]
		found := false
		if r.Key != nil {
			if fv, found, err = getOther(c, ko); err != nil {
				return err
			}
		}
		at := r.Timestamp
		if found && fv.at.After(at) {
			at = fv.at
		}
		switch {
		case s.instr == deleteAndPropagate || s.instr == propagateNullIfNoFK && !found:
			return answer(c, at, c.Headers(), s, nil)
		case found:
			vb, err := other.vs.Encode(fv.v)
			if err != nil {
				return fmt.Errorf("dsl: encoding a value of the table joined by %s: %w", sendName, err)
			}
			return answer(c, at, c.Headers(), s, vb)
		}
		return nil
	}
	// A foreign row's update answers every subscription to it (Kafka Streams'
	// ForeignTableJoinProcessorSupplier).
	other.out.attach(func(c *stream.Context, md meta, ko KO, ch change[VO]) error {
		if other.droppedOutOfOrder(c, ch) {
			return nil
		}
		kb, err := other.ks.Encode(ko)
		if err != nil {
			return fmt.Errorf("dsl: encoding a key of the table joined by %s: %w", sendName, err)
		}
		prefix := combinedPrefix(kb)
		var subs []subscription
		it, err := c.Store(subStore).Prefix(prefix)
		if err != nil {
			return err
		}
		for it.Next() {
			v := it.Value()
			if len(v) < 8 {
				it.Close()
				return fmt.Errorf("dsl: the subscription store %s holds a value of %d bytes", subStore, len(v))
			}
			s, err := decodeSubscription(append([]byte(nil), v[8:]...))
			if err != nil {
				it.Close()
				return fmt.Errorf("dsl: the subscription store %s: %w", subStore, err)
			}
			s.pk = append([]byte(nil), it.Key()[len(prefix):]...)
			subs = append(subs, s)
		}
		if err := it.Err(); err != nil {
			it.Close()
			return err
		}
		if err := it.Close(); err != nil {
			return err
		}
		var vb []byte
		if ch.hasNew {
			if vb, err = other.vs.Encode(ch.new); err != nil {
				return fmt.Errorf("dsl: encoding a value of the table joined by %s: %w", sendName, err)
			}
		}
		at, headers := recordTime(c, md), md.headersOf(c)
		for _, s := range subs {
			if err := answer(c, at, headers, s, vb); err != nil {
				return err
			}
		}
		return nil
	})

	// t's side again: an answer still matching its row makes the result (Kafka Streams'
	// ResponseJoinProcessorSupplier), which the result table keeps as a KTableSource does.
	vrNil := nilCheck[VR]()
	respSource.entry = func(c *stream.Context, r *stream.Record) error {
		if r.Key == nil || r.Value == nil {
			return stream.UndecodableRecord(fmt.Errorf("a foreign-key response without a key or value"))
		}
		k, err := t.ks.Decode(r.Key)
		if err != nil {
			return stream.UndecodableRecord(fmt.Errorf("key: %w", err))
		}
		resp, err := decodeResponse(r.Value)
		if err != nil {
			return stream.UndecodableRecord(fmt.Errorf("value: %w", err))
		}
		var vo VO
		hasVO := resp.value != nil
		if hasVO {
			if vo, err = other.vs.Decode(resp.value); err != nil {
				return stream.UndecodableRecord(fmt.Errorf("value: %w", err))
			}
		}
		cur, found, err := getThis(c, k)
		if err != nil {
			return err
		}
		var now valueHash
		if found {
			if now, err = hashOf(cur.v); err != nil {
				return err
			}
		}
		if now != resp.hash {
			c.Dropped() // the row changed since it asked: a newer answer is on its way
			return nil
		}
		md := meta{}
		var vr VR
		if !hasVO && (!left || !found) {
			md.nullValue = true
		} else {
			vr = fn(k, cur.v, vo, hasVO)
			md.nullValue = vrNil != nil && vrNil(vr)
		}
		return in.emit(c, md, k, vr)
	}
	return f
}
