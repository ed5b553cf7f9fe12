package dsl

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/stream"
	"github.com/streamsgroup/streamsgroup/topology"
	"github.com/streamsgroup/streamsgroup/windowed"
)

// StreamJoined is how two streams are joined (Kafka Streams' StreamJoined): the serdes of the
// repartition topics and window stores (the streams' when empty), the join's name
// (StreamJoined.withName: its nodes <Name>-this-windowed, <Name>-other-windowed,
// <Name>-this-join, <Name>-other-join, <Name>-merge, and the repartitions <Name>-left and
// <Name>-right), and the base name of its stores (withStoreName: <StoreName>-this-join-store and
// <StoreName>-other-join-store; otherwise named after the join nodes).
type StreamJoined[K, V, VO any] struct {
	Key        serde.Serde[K]
	Value      serde.Serde[V]
	OtherValue serde.Serde[VO]
	Name       string
	StoreName  string
}

// JoinStreams joins two streams within windows (Kafka Streams' KStream.join with a KStream): each
// record of either is joined with every record of the other with its key whose timestamp is within
// the windows of its own (another record at most jw's Before earlier or After later than one of s,
// seen from s), as it arrives, in whichever order the two come; fn makes the result's value, which
// takes the later of the two timestamps and the arriving record's key and headers. Records with a
// null key or value are dropped (and counted); a record is kept for later joins for the windows'
// size plus their grace, in a window store of each side that Kafka Streams reads. s and other must
// be co-partitioned (a copartition group in the topology); after a key change either goes through a
// repartition topic first.
func JoinStreams[K, V, VO, VR any](s *KStream[K, V], other *KStream[K, VO], fn func(k K, v V, vo VO) VR, jw windowed.JoinWindows,
	sj ...StreamJoined[K, V, VO]) *KStream[K, VR] {
	return streamStreamJoin(s, other, innerJoin, func(k K, v V, _ bool, vo VO, _ bool) VR { return fn(k, v, vo) }, jw, sj)
}

// LeftJoinStreams joins two streams as JoinStreams does, and also emits each record of s that no
// record of other joined (Kafka Streams' KStream.leftJoin with a KStream): fn gets found false and
// VO's zero value for it (Java's joiner gets null). Such a record waits in a store shared by both
// sides until its window closes (its time plus After plus the grace, in stream time), and is then
// emitted with its own timestamp, unless a record of other joined it meanwhile; Kafka Streams looks
// for closed windows at most once a second of wall-clock time, so when they are emitted depends on
// the clock too. A record of s without a key is emitted at once as not joined.
func LeftJoinStreams[K, V, VO, VR any](s *KStream[K, V], other *KStream[K, VO], fn func(k K, v V, vo VO, found bool) VR, jw windowed.JoinWindows,
	sj ...StreamJoined[K, V, VO]) *KStream[K, VR] {
	return streamStreamJoin(s, other, leftJoin, func(k K, v V, _ bool, vo VO, found bool) VR { return fn(k, v, vo, found) }, jw, sj)
}

// OuterJoinStreams joins two streams as LeftJoinStreams does, the records of either that the other
// did not join emitted too (Kafka Streams' KStream.outerJoin with a KStream): fn gets hasV or hasVO
// false, and the zero value, for the side that had no record.
func OuterJoinStreams[K, V, VO, VR any](s *KStream[K, V], other *KStream[K, VO], fn func(k K, v V, hasV bool, vo VO, hasVO bool) VR,
	jw windowed.JoinWindows, sj ...StreamJoined[K, V, VO]) *KStream[K, VR] {
	return streamStreamJoin(s, other, outerJoin, fn, jw, sj)
}

// streamStreamJoin adds a stream-stream join (Kafka Streams' KStreamImplJoin): the repartitions of
// rekeyed sides, a windowed node per side keeping its records, a join node per side looking the other
// up, a merge node, and for left and outer joins the store of records not joined yet.
func streamStreamJoin[K, V, VO, VR any](s *KStream[K, V], other *KStream[K, VO], kind joinKind, fn func(K, V, bool, VO, bool) VR,
	jw windowed.JoinWindows, sj []StreamJoined[K, V, VO]) *KStream[K, VR] {
	b := s.b
	var j StreamJoined[K, V, VO]
	if len(sj) > 0 {
		j = sj[0]
	}
	op := map[joinKind]string{innerJoin: "JoinStreams", leftJoin: "LeftJoinStreams", outerJoin: "OuterJoinStreams"}[kind]
	if other == nil || other.b != b {
		b.fail("%s needs a stream of the same Builder", op)
		return &KStream[K, VR]{b: b, n: s.n, out: newFanout[K, VR](b)}
	}
	if err := jw.Validate(); err != nil {
		b.fail("%s: %w", op, err)
	}
	named := func(suffix string) string {
		if j.Name == "" {
			return ""
		}
		return j.Name + suffix
	}
	if s.rekeyed {
		s = s.repartitionForJoin(j.Key, j.Value, named("-left"))
	}
	if other.rekeyed {
		other = other.repartitionForJoin(j.Key, j.OtherValue, named("-right"))
	}
	b.copartitions = append(b.copartitions, [][]*node{s.sources, other.sources})
	leftOuter, rightOuter := kind != innerJoin, kind == outerJoin
	thisPrefix, otherPrefix, thisSuffix, otherSuffix := "KSTREAM-JOINTHIS-", "KSTREAM-JOINOTHER-", "-this-join", "-other-join"
	if rightOuter {
		thisPrefix, thisSuffix = "KSTREAM-OUTERTHIS-", "-outer-this-join"
	}
	if leftOuter {
		otherPrefix, otherSuffix = "KSTREAM-OUTEROTHER-", "-outer-other-join"
	}
	thisWindowed := b.suffixedOr(j.Name, "-this-windowed", "KSTREAM-WINDOWED-")
	otherWindowed := b.suffixedOr(j.Name, "-other-windowed", "KSTREAM-WINDOWED-")
	thisGenerated, otherGenerated := b.newName(thisPrefix), b.newName(otherPrefix)
	thisName, otherName := thisGenerated, otherGenerated
	if j.Name != "" {
		thisName, otherName = j.Name+thisSuffix, j.Name+otherSuffix
	}
	mergeName := b.suffixedOr(j.Name, "-merge", "KSTREAM-MERGE-")
	thisStore, otherStore := thisGenerated+"-store", otherGenerated+"-store"
	if j.StoreName != "" {
		thisStore, otherStore = j.StoreName+thisSuffix+"-store", j.StoreName+otherSuffix+"-store"
	}
	shared := ""
	if leftOuter {
		switch {
		case j.StoreName != "" && rightOuter:
			shared = j.StoreName + "-outer-shared-join-store"
		case j.StoreName != "":
			shared = j.StoreName + "-left-shared-join-store"
		default:
			shared = "KSTREAM-OUTERSHARED-" + thisGenerated[len(thisPrefix):] + "-store"
		}
	}
	ks, vs, vos := j.Key, j.Value, j.OtherValue
	if ks == nil {
		ks = s.ks
	}
	if vs == nil {
		vs = s.vs
	}
	if vos == nil {
		vos = other.vs
	}
	if ks == nil || vs == nil || vos == nil {
		b.fail("the stores of %s %q need StreamJoined serdes for %s, %s and %s", op, mergeName, typeName[K](), typeName[V](), typeName[VO]())
	}
	retention := jw.Size() + jw.Grace()
	// Kafka Streams 4.4 keeps a join's window stores headers-aware, whatever dsl.store.format says:
	// each record with its headers, which every changelog record carries (the values are plain).
	for _, st := range []string{thisStore, otherStore} {
		b.declare(st, storeKind{
			decl:      stream.Window[[]byte, []byte](st, time.Duration(retention)*time.Millisecond, nil, nil).RetainDuplicates().WithRecordHeaders(),
			changelog: func(n topology.Names) topology.TopicInfo { return n.JoinWindowChangelog(st, retention) },
		})
	}
	tw := b.add(&node{name: thisWindowed, kind: processorNode, stores: []string{thisStore}}, s.n)
	ow := b.add(&node{name: otherWindowed, kind: processorNode, stores: []string{otherStore}}, other.n)
	tj := b.add(&node{name: thisName, kind: processorNode, reads: []string{otherStore}}, tw)
	oj := b.add(&node{name: otherName, kind: processorNode, reads: []string{thisStore}}, ow)
	if shared != "" {
		tj.stores = []string{shared}
		oj.reads = append(oj.reads, shared)
		// Kafka Streams' plain-format ListValueStore, whatever dsl.store.format says.
		b.declare(shared, storeKind{decl: stream.StoreName(shared),
			changelog: func(n topology.Names) topology.TopicInfo { return n.KeyValueChangelog(shared) }})
	}
	merge := b.add(&node{name: mergeName, kind: processorNode}, tj, oj)
	if leftOuter || rightOuter {
		merge.relaxedJoin = true // its repartitions keep records without a key, as Kafka Streams' do
	}
	out := &KStream[K, VR]{b: b, n: merge, out: newFanout[K, VR](b), ks: j.Key, vs: defaultSerde[VR](),
		sources: append(append([]*node(nil), s.sources...), other.sources...)}
	if out.ks == nil {
		out.ks = s.ks
	}
	jn := &streamJoin[K, V, VO, VR]{jw: jw, fn: fn, out: out, isNil: nilCheck[VR](), ks: ks, vs: vs, vos: vos, shared: shared}
	tw.onBuild = append(tw.onBuild, func() {
		span := time.Duration(retention) * time.Millisecond
		jn.this = stream.Window(thisStore, span, ks, vs).RetainDuplicates()
		jn.other = stream.Window(otherStore, span, ks, vos).RetainDuplicates()
	})
	tj.init = jn.times.start
	// Each record with a key goes into its side's window store, as Kafka Streams' KStreamJoinWindow
	// puts it: one without a value too, as a null (its changelog's tombstone, and a sequence number).
	s.out.attach(func(c *stream.Context, md meta, k K, v V) error {
		if err := windowPut(c, jn.this, md, k, v); err != nil {
			return err
		}
		return jn.left(c, md, k, v, leftOuter)
	})
	other.out.attach(func(c *stream.Context, md meta, k K, vo VO) error {
		if err := windowPut(c, jn.other, md, k, vo); err != nil {
			return err
		}
		return jn.right(c, md, k, vo, rightOuter)
	})
	return out
}

// windowPut puts a record with a key into a join's window store at its time: its value, or a null.
func windowPut[K, V any](c *stream.Context, w stream.WindowStore[K, V], md meta, k K, v V) error {
	switch {
	case md.nullKey:
		return nil
	case md.nullValue:
		return w.PutNull(c, k, recordTime(c, md).UnixMilli())
	}
	return w.Put(c, k, recordTime(c, md).UnixMilli(), v)
}

// streamJoin is the processing of a stream-stream join (Kafka Streams' KStreamKStreamJoinLeftSide
// and RightSide over the two window stores, and for left and outer joins the shared store of
// records not joined yet, by their time, side and key).
type streamJoin[K, V, VO, VR any] struct {
	jw     windowed.JoinWindows
	fn     func(K, V, bool, VO, bool) VR
	out    *KStream[K, VR]
	isNil  func(VR) bool
	ks     serde.Serde[K]
	vs     serde.Serde[V]
	vos    serde.Serde[VO]
	this   stream.WindowStore[K, V]
	other  stream.WindowStore[K, VO]
	shared string // the store of records not joined yet ("": an inner join)
	times  joinTimes
}

// emit hands a result on, stamped at.
func (jn *streamJoin[K, V, VO, VR]) emit(c *stream.Context, md meta, k K, vr VR, at int64) error {
	md.at = time.UnixMilli(at)
	md.nullValue = nullFrom(jn.isNil, vr, false)
	return jn.out.out.emit(c, md, k, vr)
}

// left processes a record of the left stream (this side): it looks Before back and After ahead.
func (jn *streamJoin[K, V, VO, VR]) left(c *stream.Context, md meta, k K, v V, outer bool) error {
	tr, ts, done, err := jn.begin(c, md, outer, jn.jw.AfterMs(), func() VR { var vo VO; return jn.fn(k, v, true, vo, false) })
	if done || err != nil {
		return err
	}
	var found []int64
	var vals []VO
	err = jn.other.Fetch(c, k, max(0, ts-jn.jw.BeforeMs()), max(0, ts+jn.jw.AfterMs()), func(start int64, vo VO) bool {
		found, vals = append(found, start), append(vals, vo)
		return true
	})
	if err != nil {
		return err
	}
	for i, at := range found {
		if err := jn.joined(c, k, at, false); err != nil {
			return err
		}
		if err := jn.emit(c, md, k, jn.fn(k, v, true, vals[i], true), max(ts, at)); err != nil {
			return err
		}
	}
	if !outer || len(found) > 0 {
		return nil
	}
	return jn.notJoined(c, md, tr, k, ts, max(0, ts+jn.jw.AfterMs()), true, func() ([]byte, error) { return jn.vs.Encode(v) },
		func() VR { var vo VO; return jn.fn(k, v, true, vo, false) })
}

// right processes a record of the right stream (the other side): it looks After back and Before
// ahead.
func (jn *streamJoin[K, V, VO, VR]) right(c *stream.Context, md meta, k K, vo VO, outer bool) error {
	tr, ts, done, err := jn.begin(c, md, outer, jn.jw.BeforeMs(), func() VR { var v V; return jn.fn(k, v, false, vo, true) })
	if done || err != nil {
		return err
	}
	var found []int64
	var vals []V
	err = jn.this.Fetch(c, k, max(0, ts-jn.jw.AfterMs()), max(0, ts+jn.jw.BeforeMs()), func(start int64, v V) bool {
		found, vals = append(found, start), append(vals, v)
		return true
	})
	if err != nil {
		return err
	}
	for i, at := range found {
		if err := jn.joined(c, k, at, true); err != nil {
			return err
		}
		if err := jn.emit(c, md, k, jn.fn(k, vals[i], true, vo, true), max(ts, at)); err != nil {
			return err
		}
	}
	if !outer || len(found) > 0 {
		return nil
	}
	return jn.notJoined(c, md, tr, k, ts, max(0, ts+jn.jw.BeforeMs()), false, func() ([]byte, error) { return jn.vos.Encode(vo) },
		func() VR { var v V; return jn.fn(k, v, false, vo, true) })
}

// begin moves the join's stream time and sorts out the records that join nothing: one without a key
// is emitted at once by an outer side (alone), dropped otherwise, as is one without a value; then,
// when the record is the newest, the closed windows' records not joined are emitted (after is how
// far ahead this side looks).
func (jn *streamJoin[K, V, VO, VR]) begin(c *stream.Context, md meta, outer bool, after int64, alone func() VR) (tr *joinTime, ts int64, done bool, err error) {
	tr = jn.times.of(c)
	ts = recordTime(c, md).UnixMilli()
	tr.streamTime = max(tr.streamTime, ts)
	if outer && md.nullKey && !md.nullValue {
		var k K
		return tr, ts, true, jn.emit(c, md, k, alone(), ts)
	}
	if md.nullKey || md.nullValue {
		c.Dropped() // Kafka Streams logs and counts a record without a key or value, and skips it
		return tr, ts, true, nil
	}
	if jn.shared != "" && ts == tr.streamTime {
		if err := jn.emitNotJoined(c, md, tr, after); err != nil {
			return tr, ts, true, err
		}
	}
	return tr, ts, false, nil
}

// joined forgets the other side's record at of k as not joined (Kafka Streams' putIfAbsent(key,
// null) in the shared store): otherIsLeft says which side it is on.
func (jn *streamJoin[K, V, VO, VR]) joined(c *stream.Context, k K, at int64, otherIsLeft bool) error {
	if jn.shared == "" {
		return nil
	}
	key, err := jn.sharedKey(k, at, otherIsLeft)
	if err != nil {
		return err
	}
	st := c.Store(jn.shared)
	if _, ok, err := st.Get(key); err != nil || !ok {
		return err
	}
	return st.Delete(key)
}

// notJoined handles a record that joined nothing on an outer side: emitted at once when its window
// can no longer take a record of the other side (to, its window's end, before the stream time) or
// the join keeps no such records; else kept in the shared store until its window closes.
func (jn *streamJoin[K, V, VO, VR]) notJoined(c *stream.Context, md meta, tr *joinTime, k K, ts, to int64, isLeft bool,
	encode func() ([]byte, error), alone func() VR) error {
	if jn.shared == "" || to < tr.streamTime {
		return jn.emit(c, md, k, alone(), ts)
	}
	tr.minTime = min(tr.minTime, ts)
	key, err := jn.sharedKey(k, ts, isLeft)
	if err != nil {
		return err
	}
	vb, err := encode()
	if err != nil {
		return fmt.Errorf("dsl: encoding a value for the join store %s: %w", jn.shared, err)
	}
	if vb == nil {
		return nil // Kafka Streams' store takes no null value
	}
	side := byte(0)
	if isLeft {
		side = 1
	}
	st := c.Store(jn.shared)
	old, _, err := st.Get(key)
	if err != nil {
		return err
	}
	list, err := appendListValue(old, append([]byte{side}, vb...))
	if err != nil {
		return fmt.Errorf("dsl: the join store %s: %w", jn.shared, err)
	}
	return st.Put(key, list)
}

// emitNotJoined emits the records not joined whose window closed (Kafka Streams'
// emitNonJoinedOuterRecords): at most once per config.KeyOuterJoinEmitInterval of wall-clock time
// (1 s by default), and only when
// the oldest of them may be closed, it walks the shared store in order of time, side and key,
// emitting and deleting the closed ones, until both sides' oldest open one.
func (jn *streamJoin[K, V, VO, VR]) emitNotJoined(c *stream.Context, md meta, tr *joinTime, after int64) error {
	// As in Kafka Streams, the sum overflows when nothing waits (minTime is the largest time): the
	// look goes on then.
	if tr.minTime+after+jn.jw.Grace() >= tr.streamTime {
		return nil
	}
	now := c.CurrentSystemTime().UnixMilli()
	if now < tr.nextEmit {
		return nil
	}
	tr.nextEmit = now + c.Config().Runtime.OuterJoinEmitEvery()
	tr.minTime = math.MaxInt64
	st := c.Store(jn.shared)
	type entry struct{ key, value []byte }
	var entries []entry
	it, err := st.Range(nil, nil)
	if err != nil {
		return err
	}
	for it.Next() {
		entries = append(entries, entry{bytes.Clone(it.Key()), bytes.Clone(it.Value())})
	}
	if err := errors.Join(it.Err(), it.Close()); err != nil {
		return err
	}
	var prev []byte
	leftOpen, rightOpen := false, false
walk:
	for _, e := range entries {
		at, isLeft, kb, err := splitSharedKey(e.key)
		if err != nil {
			return fmt.Errorf("dsl: the join store %s: %w", jn.shared, err)
		}
		values, err := splitListValue(e.value)
		if err != nil {
			return fmt.Errorf("dsl: the join store %s: %w", jn.shared, err)
		}
		for _, val := range values {
			tr.minTime = at
			if leftOpen && rightOpen {
				break walk
			}
			lookBack := jn.jw.BeforeMs()
			if isLeft {
				lookBack = jn.jw.AfterMs()
			}
			if tr.minTime+lookBack+jn.jw.Grace() >= tr.streamTime {
				if isLeft {
					leftOpen = true
				} else {
					rightOpen = true
				}
				continue
			}
			if err := jn.emitStored(c, md, kb, at, val); err != nil {
				return err
			}
			if prev != nil && !bytes.Equal(prev, e.key) {
				if err := st.Delete(prev); err != nil {
					return err
				}
			}
			prev = e.key
		}
	}
	if prev != nil {
		return st.Delete(prev)
	}
	return nil
}

// emitStored emits a stored record not joined: its key and time, its value alone on its side.
func (jn *streamJoin[K, V, VO, VR]) emitStored(c *stream.Context, md meta, kb []byte, at int64, val []byte) error {
	k, err := jn.ks.Decode(kb)
	if err != nil {
		return fmt.Errorf("dsl: decoding a key of the join store %s: %w", jn.shared, err)
	}
	if len(val) == 0 {
		return fmt.Errorf("dsl: the join store %s holds an empty value", jn.shared)
	}
	var v V
	var vo VO
	var vr VR
	if val[0] == 1 {
		if v, err = jn.vs.Decode(val[1:]); err != nil {
			return fmt.Errorf("dsl: decoding a value of the join store %s: %w", jn.shared, err)
		}
		vr = jn.fn(k, v, true, vo, false)
	} else {
		if vo, err = jn.vos.Decode(val[1:]); err != nil {
			return fmt.Errorf("dsl: decoding a value of the join store %s: %w", jn.shared, err)
		}
		vr = jn.fn(k, v, false, vo, true)
	}
	md.nullKey = false
	return jn.emit(c, md, k, vr, at)
}

// sharedKey is the shared store's key of k's record at ts on a side (Kafka Streams'
// TimestampedKeyAndJoinSide): the time, 1 for the left side or 0 for the right, the key's bytes.
func (jn *streamJoin[K, V, VO, VR]) sharedKey(k K, ts int64, isLeft bool) ([]byte, error) {
	kb, err := jn.ks.Encode(k)
	if err != nil {
		return nil, fmt.Errorf("dsl: encoding a key for the join store %s: %w", jn.shared, err)
	}
	b := binary.BigEndian.AppendUint64(make([]byte, 0, 9+len(kb)), uint64(ts))
	side := byte(0)
	if isLeft {
		side = 1
	}
	return append(append(b, side), kb...), nil
}

// ErrJoinStore is returned (wrapped) for a shared join store entry not in Kafka Streams' format.
var ErrJoinStore = errors.New("not a stream-stream join store entry")

func splitSharedKey(b []byte) (ts int64, isLeft bool, key []byte, err error) {
	if len(b) < 9 || b[8] > 1 {
		return 0, false, nil, fmt.Errorf("%w: a key of %d bytes", ErrJoinStore, len(b))
	}
	return int64(binary.BigEndian.Uint64(b)), b[8] == 1, b[9:], nil
}

// appendListValue adds v to a list of values as Kafka Streams' ListValueStore keeps them (its
// ListSerde of byte arrays: 1 for variable-size entries, the count, each entry length-prefixed).
func appendListValue(list, v []byte) ([]byte, error) {
	values, err := splitListValue(list)
	if err != nil {
		return nil, err
	}
	values = append(values, v)
	out := []byte{1}
	out = binary.BigEndian.AppendUint32(out, uint32(len(values)))
	for _, e := range values {
		out = binary.BigEndian.AppendUint32(out, uint32(len(e)))
		out = append(out, e...)
	}
	return out, nil
}

// splitListValue reads a list written by appendListValue (nil: an empty list).
func splitListValue(b []byte) ([][]byte, error) {
	if b == nil {
		return nil, nil
	}
	if len(b) < 5 || b[0] != 1 {
		return nil, fmt.Errorf("%w: a list of %d bytes", ErrJoinStore, len(b))
	}
	n := int(binary.BigEndian.Uint32(b[1:]))
	b = b[5:]
	if n < 0 || n > len(b)/4 {
		return nil, fmt.Errorf("%w: %d entries", ErrJoinStore, n)
	}
	out := make([][]byte, 0, n)
	for range n {
		if len(b) < 4 {
			return nil, fmt.Errorf("%w: an entry cut short", ErrJoinStore)
		}
		l := int(int32(binary.BigEndian.Uint32(b)))
		b = b[4:]
		if l < 0 || l > len(b) {
			return nil, fmt.Errorf("%w: an entry of %d bytes", ErrJoinStore, l)
		}
		out = append(out, b[:l:l])
		b = b[l:]
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the entries", ErrJoinStore, len(b))
	}
	return out, nil
}

// joinTime is a join's time on one task, shared by its two sides (Kafka Streams' TimeTracker): the
// stream time, the time of the oldest record not joined it may hold, and when it may next look.
type joinTime struct {
	streamTime, minTime, nextEmit int64
}

// joinTimes are each task's joinTime; a task's starts over when the task starts (Init). A sync.Map:
// the processor is shared by the stream threads, each with its own tasks.
type joinTimes struct{ m sync.Map }

func (j *joinTimes) start(c *stream.Context) error {
	j.m.Store(c.Task(), &joinTime{streamTime: -1, minTime: math.MaxInt64})
	return nil
}

func (j *joinTimes) of(c *stream.Context) *joinTime {
	if p, ok := j.m.Load(c.Task()); ok {
		return p.(*joinTime)
	}
	p, _ := j.m.LoadOrStore(c.Task(), &joinTime{streamTime: -1, minTime: math.MaxInt64})
	return p.(*joinTime)
}
