package dsl

import (
	"time"

	"github.com/streamsgroup/streamsgroup/stream"
)

// JoinTables joins two tables on their key (Kafka Streams' KTable.join): the result holds fn of
// both values for each key both tables hold, and is updated whenever either table's value of a key
// changes; a key leaving either table leaves the result (a deletion downstream). Each update carries
// the later of the two values' timestamps. fn's result is a deletion when it is the nil of its type.
// opts: Named (the join's nodes: <name>-join-this, <name>-join-other and the merge node <name>) and
// Materialized[K, VR] to keep the result in a store (named, or generated from KTABLE-MERGE- when the
// Materialized has no name, as in Kafka Streams).
//
// Both tables are read where they are kept (a table read from a topic gets its store), and must be
// co-partitioned: the topology declares their source topics as a copartition group.
func JoinTables[K, V, VO, VR any](t *KTable[K, V], other *KTable[K, VO], fn func(k K, v V, vo VO) VR, opts ...TableOption) *KTable[K, VR] {
	return joinTables(t, other, "JoinTables", innerJoin, func(k K, v V, _ bool, vo VO, _ bool) VR { return fn(k, v, vo) }, opts)
}

// LeftJoinTables joins two tables as JoinTables does, but keeps every key of t (Kafka Streams'
// KTable.leftJoin): fn gets found false and VO's zero value for a key other does not hold (Java's
// joiner gets null).
func LeftJoinTables[K, V, VO, VR any](t *KTable[K, V], other *KTable[K, VO], fn func(k K, v V, vo VO, found bool) VR, opts ...TableOption) *KTable[K, VR] {
	return joinTables(t, other, "LeftJoinTables", leftJoin, func(k K, v V, _ bool, vo VO, found bool) VR { return fn(k, v, vo, found) }, opts)
}

// OuterJoinTables joins two tables as JoinTables does, but keeps every key of either (Kafka
// Streams' KTable.outerJoin): fn gets hasV or hasVO false, and the zero value, for the side that
// does not hold the key (Java's joiner gets null).
func OuterJoinTables[K, V, VO, VR any](t *KTable[K, V], other *KTable[K, VO], fn func(k K, v V, hasV bool, vo VO, hasVO bool) VR, opts ...TableOption) *KTable[K, VR] {
	return joinTables(t, other, "OuterJoinTables", outerJoin, fn, opts)
}

// joinKind is which keys a table-table join keeps.
type joinKind int

const (
	innerJoin joinKind = iota
	leftJoin
	outerJoin
)

// joinSide is one side's processor of a table-table join (Kafka Streams' KTableKTableInnerJoin,
// LeftJoin, RightJoin and OuterJoin processors): how an update of its table joins the other's value.
type joinSide struct {
	otherRequired bool // no result without the other table's value (inner; the right side of a left join)
	selfOptional  bool // a result even when this table's value is null (the right side of a left join; outer)
}

// sides are the processors of a join kind: the one below t (this) and the one below other.
func (k joinKind) sides() (this, other joinSide) {
	switch k {
	case leftJoin:
		return joinSide{}, joinSide{otherRequired: true, selfOptional: true}
	case outerJoin:
		return joinSide{selfOptional: true}, joinSide{selfOptional: true}
	}
	return joinSide{otherRequired: true}, joinSide{otherRequired: true}
}

// joinTables adds a table-table join (Kafka Streams' KTableImpl.doJoin): a processor below each
// table that looks the other up, and a merge node below both, which keeps the result when a
// Materialized asks.
func joinTables[K, V, VO, VR any](t *KTable[K, V], other *KTable[K, VO], op string, kind joinKind,
	fn func(k K, v V, hasV bool, vo VO, hasVO bool) VR, opts []TableOption) *KTable[K, VR] {
	b := t.b
	named, m, materialized := tableOptions[K, VR](b, op, opts)
	if !joinable(t, other, op) {
		return &KTable[K, VR]{b: b, n: t.n, out: newFanout[K, change[VR]](b)}
	}
	store := m.Name
	if materialized && store == "" {
		store = b.newStoreName("KTABLE-MERGE-") // Kafka Streams keeps an unnamed Materialized's result in a generated store
	}
	mergeName := b.nameOr(string(named), "KTABLE-MERGE-")
	b.copartitions = append(b.copartitions, [][]*node{t.sources, other.sources})
	if kind != innerJoin {
		t.enableOld(true)
	}
	if kind == outerJoin {
		other.enableOld(true)
	}
	thisStores, getThis := t.valueGetter()
	otherStores, getOther := other.valueGetter()
	thisName := b.suffixedOr(string(named), "-join-this", "KTABLE-JOINTHIS-")
	otherName := b.suffixedOr(string(named), "-join-other", "KTABLE-JOINOTHER-")
	thisNode := b.add(&node{name: thisName, kind: processorNode, reads: otherStores}, t.n)
	otherNode := b.add(&node{name: otherName, kind: processorNode, reads: thisStores}, other.n)
	merge := b.add(&node{name: mergeName, kind: processorNode}, thisNode, otherNode)
	ks, vs := m.Key, m.Value
	if ks == nil {
		ks = t.ks
	}
	if vs == nil {
		vs = defaultSerde[VR]()
	}
	f := &KTable[K, VR]{b: b, n: merge, out: newFanout[K, change[VR]](b), ks: ks, vs: vs,
		sources: append(append([]*node(nil), t.sources...), other.sources...)}
	if store != "" {
		f.keepIn(store, op, m.CachingDisabled)
	}
	// The result sends old values when asked, and has both tables send theirs for it (Kafka
	// Streams' KTableKTableJoinMerger.enableSendingOldValues).
	f.enableOld = func(bool) bool {
		t.enableOld(true)
		other.enableOld(true)
		f.sendOld = true
		return true
	}
	isNil := nilCheck[VR]()
	joined := func(k K, v V, hasV bool, vo VO, hasVO bool) (VR, bool) {
		vr := fn(k, v, hasV, vo, hasVO)
		return vr, isNil == nil || !isNil(vr)
	}
	thisSide, otherSide := kind.sides()
	t.out.attach(func(c *stream.Context, md meta, k K, ch change[V]) error {
		if t.droppedOutOfOrder(c, ch) {
			return nil
		}
		return joinUpdate(c, f, thisSide, md, k, ch, getOther, func(v V, hasV bool, vo VO, hasVO bool) (VR, bool) {
			return joined(k, v, hasV, vo, hasVO)
		})
	})
	other.out.attach(func(c *stream.Context, md meta, k K, ch change[VO]) error {
		if other.droppedOutOfOrder(c, ch) {
			return nil
		}
		return joinUpdate(c, f, otherSide, md, k, ch, getThis, func(vo VO, hasVO bool, v V, hasV bool) (VR, bool) {
			return joined(k, v, hasV, vo, hasVO)
		})
	})
	f.getter = func() ([]string, func(*stream.Context, K) (stamped[VR], bool, error)) {
		return append(append([]string(nil), thisStores...), otherStores...), func(c *stream.Context, k K) (stamped[VR], bool, error) {
			return joinedValue(c, kind, k, getThis, getOther, joined)
		}
	}
	return f
}

// joinable says whether op can join other with t: a table of the same Builder (else the program
// fails); windowed tables fail the program too.
func joinable[K, V, KO, VO any](t *KTable[K, V], other *KTable[KO, VO], op string) bool {
	if other == nil || other.b != t.b {
		t.b.fail("%s needs a table of the same Builder", op)
		return false
	}
	if t.storeKs != nil || other.storeKs != nil {
		t.b.fail("%s: windowed tables cannot be joined", op)
	}
	return true
}

// joinUpdate is one side's processing of an update of its table's key k: the other table's value
// looked up, the joined new value (and old one when the result sends old values), with the later
// of the two timestamps, handed to the result (Kafka Streams' table-table join processors and
// KTableKTableJoinMerger). fn joins this side's value with the other's.
func joinUpdate[K, V, VO, VR any](c *stream.Context, f *KTable[K, VR], side joinSide, md meta, k K, ch change[V],
	getOther func(*stream.Context, K) (stamped[VO], bool, error), fn func(v V, hasV bool, vo VO, hasVO bool) (VR, bool)) error {
	if md.nullKey {
		c.Dropped() // Kafka Streams logs and counts a table update without a key, and skips it
		return nil
	}
	o, found, err := getOther(c, k)
	if err != nil {
		return err
	}
	if !found && (side.otherRequired || !ch.hasNew && !ch.hasOld) {
		return nil
	}
	at := recordTime(c, md)
	if found && o.at.After(at) {
		at = o.at
	}
	var out change[VR]
	if ch.hasNew || found && side.selfOptional {
		out.new, out.hasNew = fn(ch.new, ch.hasNew, o.v, found)
	}
	if f.sendOld && (ch.hasOld || found && side.selfOptional) {
		out.old, out.hasOld = fn(ch.old, ch.hasOld, o.v, found)
	}
	md.at = at
	return f.emitDerived(c, md, k, out, false)
}

// joinedValue is a join result's value of k computed from both tables, for a result kept in no
// store (Kafka Streams' table-table join value getters): absent where the join has no result.
func joinedValue[K, V, VO, VR any](c *stream.Context, kind joinKind, k K, getThis func(*stream.Context, K) (stamped[V], bool, error),
	getOther func(*stream.Context, K) (stamped[VO], bool, error), joined func(K, V, bool, VO, bool) (VR, bool)) (stamped[VR], bool, error) {
	v, hasV, err := getThis(c, k)
	if err != nil || !hasV && kind != outerJoin {
		return stamped[VR]{}, false, err
	}
	vo, hasVO, err := getOther(c, k)
	if err != nil || !hasVO && (kind == innerJoin || !hasV) {
		return stamped[VR]{}, false, err
	}
	at := time.Time{}
	if hasV {
		at = v.at
	}
	if hasVO && vo.at.After(at) {
		at = vo.at
	}
	vr, ok := joined(k, v.v, hasV, vo.v, hasVO)
	return stamped[VR]{v: vr, at: at}, ok, nil
}
