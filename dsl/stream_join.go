package dsl

import (
	"time"

	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/stream"
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
	b := s.b
	var j StreamJoined[K, V, VO]
	if len(sj) > 0 {
		j = sj[0]
	}
	if other == nil || other.b != b {
		b.fail("JoinStreams needs a stream of the same Builder")
		return &KStream[K, VR]{b: b, n: s.n, out: newFanout[K, VR](b)}
	}
	if err := jw.Validate(); err != nil {
		b.fail("JoinStreams: %w", err)
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
	thisWindowed := b.suffixedOr(j.Name, "-this-windowed", "KSTREAM-WINDOWED-")
	otherWindowed := b.suffixedOr(j.Name, "-other-windowed", "KSTREAM-WINDOWED-")
	thisGenerated, otherGenerated := b.newName("KSTREAM-JOINTHIS-"), b.newName("KSTREAM-JOINOTHER-")
	thisName, otherName := thisGenerated, otherGenerated
	if j.Name != "" {
		thisName, otherName = j.Name+"-this-join", j.Name+"-other-join"
	}
	mergeName := b.suffixedOr(j.Name, "-merge", "KSTREAM-MERGE-")
	thisStore, otherStore := thisGenerated+"-store", otherGenerated+"-store"
	if j.StoreName != "" {
		thisStore, otherStore = j.StoreName+"-this-join-store", j.StoreName+"-other-join-store"
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
		b.fail("the window stores of JoinStreams %q need StreamJoined serdes for %s, %s and %s", mergeName, typeName[K](), typeName[V](), typeName[VO]())
	}
	retention := jw.Size() + jw.Grace()
	if b.joinStores == nil {
		b.joinStores = map[string]int64{}
	}
	b.joinStores[thisStore], b.joinStores[otherStore] = retention, retention
	tw := b.add(&node{name: thisWindowed, kind: processorNode, stores: []string{thisStore}}, s.n)
	ow := b.add(&node{name: otherWindowed, kind: processorNode, stores: []string{otherStore}}, other.n)
	tj := b.add(&node{name: thisName, kind: processorNode, reads: []string{otherStore}}, tw)
	oj := b.add(&node{name: otherName, kind: processorNode, reads: []string{thisStore}}, ow)
	merge := b.add(&node{name: mergeName, kind: processorNode}, tj, oj)
	out := &KStream[K, VR]{b: b, n: merge, out: newFanout[K, VR](b), ks: j.Key, vs: defaultSerde[VR](),
		sources: append(append([]*node(nil), s.sources...), other.sources...)}
	if out.ks == nil {
		out.ks = s.ks
	}
	var thisWin stream.WindowStore[K, V]
	var otherWin stream.WindowStore[K, VO]
	tw.onBuild = append(tw.onBuild, func() {
		span := time.Duration(retention) * time.Millisecond
		thisWin = stream.Window(thisStore, span, ks, vs).RetainDuplicates()
		otherWin = stream.Window(otherStore, span, ks, vos).RetainDuplicates()
	})
	isNil := nilCheck[VR]()
	emit := func(c *stream.Context, md meta, k K, vr VR, at int64) error {
		md.at = time.UnixMilli(at)
		md.nullValue = nullFrom(isNil, vr, false)
		return out.out.emit(c, md, k, vr)
	}
	// Each side keeps its records, then joins the arriving one with the other's: this side looks
	// Before back and After ahead, the other side the reverse.
	s.out.attach(func(c *stream.Context, md meta, k K, v V) error {
		if !md.nullKey && !md.nullValue {
			if err := thisWin.Put(c, k, recordTime(c, md).UnixMilli(), v); err != nil {
				return err
			}
		}
		if md.nullKey || md.nullValue {
			c.Dropped() // Kafka Streams logs and counts a record without a key or value, and skips it
			return nil
		}
		ts := recordTime(c, md).UnixMilli()
		var pending []func() error
		err := otherWin.Fetch(c, k, max(0, ts-jw.BeforeMs()), max(0, ts+jw.AfterMs()), func(start int64, vo VO) bool {
			pending = append(pending, func() error { return emit(c, md, k, fn(k, v, vo), max(ts, start)) })
			return true
		})
		return runAll(err, pending)
	})
	other.out.attach(func(c *stream.Context, md meta, k K, vo VO) error {
		if !md.nullKey && !md.nullValue {
			if err := otherWin.Put(c, k, recordTime(c, md).UnixMilli(), vo); err != nil {
				return err
			}
		}
		if md.nullKey || md.nullValue {
			c.Dropped()
			return nil
		}
		ts := recordTime(c, md).UnixMilli()
		var pending []func() error
		err := thisWin.Fetch(c, k, max(0, ts-jw.AfterMs()), max(0, ts+jw.BeforeMs()), func(start int64, v V) bool {
			pending = append(pending, func() error { return emit(c, md, k, fn(k, v, vo), max(ts, start)) })
			return true
		})
		return runAll(err, pending)
	})
	return out
}

// runAll runs the emissions a fetch collected (outside the fetch: what they reach may write to
// stores), after its error.
func runAll(err error, pending []func() error) error {
	if err != nil {
		return err
	}
	for _, p := range pending {
		if err := p(); err != nil {
			return err
		}
	}
	return nil
}
