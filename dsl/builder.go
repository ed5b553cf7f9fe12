package dsl

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/stream"
	"github.com/streamsgroup/streamsgroup/topology"
)

// Builder builds a program: its processing and its topology (Kafka Streams' StreamsBuilder). Start
// streams with Stream, chain operations on them, then Build.
type Builder struct {
	index int     // Kafka Streams' name counter: every generated node and store name takes the next
	nodes []*node // in the order Kafka Streams writes them into its topology
	errs  []error // what the program got wrong, reported by Build
	built bool
	// stores are the stores added with AddStore, and whether a processor uses them, and those
	// added with AddGlobalStore (always used).
	stores map[string]bool
	// globals are the stores added with AddGlobalStore, which Process must not name.
	globals map[string]bool
	// copartitions are the copartition groups the program registers, each as its sides' source
	// nodes (the side whose method registered it first), in the order they were registered.
	copartitions [][][]*node
	// cache is the record cache's budget, shared by the tables kept in stores (cache.go).
	cache *recordCache
	// kinds are the DSL's own stores that are not timestamped key-value stores (window, session,
	// join and suppression stores): how each is declared and its changelog.
	kinds map[string]storeKind
}

// storeKind is how Build declares one of the DSL's own stores that is not a timestamped key-value
// store.
type storeKind struct {
	decl      stream.Store
	changelog func(topology.Names) topology.TopicInfo
	// headersDecl, when set, is how the store is declared with dsl.store.format=HEADERS (Kafka
	// Streams 4.4's headers-aware stores); decl is used otherwise.
	headersDecl stream.Store
}

// declare records how Build declares store.
func (b *Builder) declare(store string, k storeKind) {
	if b.kinds == nil {
		b.kinds = map[string]storeKind{}
	}
	b.kinds[store] = k
}

// AddStore adds a key-value store, with its changelog, for the processors given to Process that
// name it (Kafka Streams' StreamsBuilder.addStateStore with a key-value store builder). The
// processors read and write it with stream.Context.Store or stream.KeyValue.
func (b *Builder) AddStore(name string) {
	if name == "" {
		b.fail("AddStore needs a name")
		return
	}
	if b.stores == nil {
		b.stores = map[string]bool{}
	}
	if _, ok := b.stores[name]; ok {
		b.fail("the store %q was added twice", name)
	}
	b.stores[name] = false
}

// NewBuilder returns an empty Builder.
func NewBuilder() *Builder { return &Builder{} }

// nodeKind is what a node does in the topology.
type nodeKind int

const (
	sourceNode nodeKind = iota
	processorNode
	sinkNode
)

// node is one processor node of the topology, as Kafka Streams names and groups them.
type node struct {
	name    string
	kind    nodeKind
	parents []*node
	// topic is a source's or a sink's (a repartition topic's without the application ID, which Build
	// learns: sendTo is the full name a sink writes).
	topic, sendTo string
	// internal: a repartition source or sink (its topic is <application.id>-<topic>).
	internal bool
	// partitions is a repartition topic's fixed count (0: the input's).
	partitions int32
	// stores are the key-value stores a stateful processor keeps.
	stores []string
	// reads are stores other nodes keep that the processor reads (a join's table): they put it in
	// their subtopology, as Kafka Streams groups the processors connected to one store.
	reads []string
	// relaxedJoin: a join that takes records without a key (a left join): the repartitions before it
	// keep such records (keepNullKeys), where the others drop them, as Kafka Streams 4.4 rewrites
	// its repartitions.
	relaxedJoin, keepNullKeys bool
	// global: a node of a global table (GlobalTable), whose subtopology is a global store's.
	global bool
	// writer is a repartition source's sink.
	writer *node
	// init runs as each of the processor's tasks starts (a stream.Initializer's Init).
	init func(c *stream.Context) error
	// onBuild runs once Build named the node's topic (sendTo).
	onBuild []func()
	// flushers are the record caches of the node's stores (set by Build).
	flushers []flusher
	// entry handles a record of the source's topic (sources only): decode and hand it on.
	entry func(c *stream.Context, r *stream.Record) error

	root *node // union-find: nodes of one subtopology share a root
}

// newName is Kafka Streams' generated name: prefix and the counter, ten digits.
func (b *Builder) newName(prefix string) string {
	n := fmt.Sprintf("%s%010d", prefix, b.index)
	b.index++
	return n
}

// newStoreName is a generated store name (prefix + "STATE-STORE-" + the counter).
func (b *Builder) newStoreName(prefix string) string { return b.newName(prefix + "STATE-STORE-") }

// nameOr is the user's name, or a generated one. The number is taken either way: Kafka Streams 4.4
// numbers a named operation too, so that naming one does not change the generated names of the
// others (a named store takes none).
func (b *Builder) nameOr(named, prefix string) string {
	generated := b.newName(prefix)
	if named != "" {
		return named
	}
	return generated
}

// suffixedOr is the user's name with suffix, or a generated one (the number is taken either way, as
// Kafka Streams' NamedInternal.suffixWithOrElseGet does).
func (b *Builder) suffixedOr(named, suffix, prefix string) string {
	generated := b.newName(prefix)
	if named != "" {
		return named + suffix
	}
	return generated
}

// add appends n, a child of parents, to the topology.
func (b *Builder) add(n *node, parents ...*node) *node {
	n.parents = parents
	n.root = n
	b.nodes = append(b.nodes, n)
	return n
}

// fail records a program error for Build.
func (b *Builder) fail(format string, args ...any) {
	b.errs = append(b.errs, fmt.Errorf("dsl: "+format, args...))
}

// generated matches the names Kafka Streams generates (a repartition named after one gets generated
// node names too).
var generated = regexp.MustCompile(`^KSTREAM.*-[0-9]{10}$`)

// repartition adds the three nodes of a repartition topic named after prefix (a filter, a sink to
// the topic, a source from it) below parent and returns the source. The three numbers are taken in
// any case, as Kafka Streams does for compatibility.
func (b *Builder) repartition(prefix string, partitions int32, parent *node) (sink, source *node) {
	topic := prefix
	if !strings.HasSuffix(topic, "-repartition") { // Kafka Streams does not add the suffix twice
		topic += "-repartition"
	}
	sinkName, filterName, sourceName := b.newName("KSTREAM-SINK-"), b.newName("KSTREAM-FILTER-"), b.newName("KSTREAM-SOURCE-")
	if !generated.MatchString(prefix) {
		sinkName, filterName, sourceName = topic+"-sink", topic+"-filter", topic+"-source"
	}
	filter := b.add(&node{name: filterName, kind: processorNode}, parent)
	sink = b.add(&node{name: sinkName, kind: sinkNode, topic: topic, internal: true, partitions: partitions}, filter)
	source = b.add(&node{name: sourceName, kind: sourceNode, topic: topic, internal: true, partitions: partitions, writer: sink})
	return sink, source
}

// find is the node's subtopology root.
func (n *node) find() *node {
	for n.root != n {
		n.root = n.root.root
		n = n.root
	}
	return n
}

// ProgramError is Build's answer to a program it cannot build: every problem found, each naming the
// operation (a serde missing where one is needed, a topic missing, two nodes with one name, a
// store added and never used, a construct Kafka Streams cannot run in a streams group).
type ProgramError struct {
	Problems []error
}

func (e *ProgramError) Error() string { return errors.Join(e.Problems...).Error() }

// Unwrap returns the problems, for errors.Is and errors.As.
func (e *ProgramError) Unwrap() []error { return e.Problems }

// ErrBuilt is returned by a second Build: a Builder's program is built once.
var ErrBuilt = errors.New("dsl: the builder was built already")

// Build derives the topology and the processors of the program for the application cfg names
// (application.id prefixes its internal topics): the arguments of stream.New. It reports every
// error of the program (a serde missing where one is needed, a name given twice) at once.
// Operations added to the program after Build are not part of what it built: the processors it
// returned do not change, and a second Build returns ErrBuilt.
func (b *Builder) Build(cfg config.Config) (*topology.Topology, stream.Processors, error) {
	if b.built {
		return nil, nil, ErrBuilt
	}
	if cfg.ApplicationID == "" {
		return nil, nil, fmt.Errorf("dsl: %s is required: it prefixes the internal topics", config.KeyApplicationID)
	}
	for st, used := range b.stores {
		if !used {
			b.fail("the store %q added with AddStore is used by no Process", st)
		}
	}
	// Kafka Streams refuses a global store named as another store when it builds: only the global
	// store's own node keeps a store of its name.
	keeping := map[string]int{}
	for _, n := range b.nodes {
		for _, st := range n.stores {
			if keeping[st]++; keeping[st] == 2 && b.globals[st] {
				b.fail("the global store %q has the name of another store", st)
			}
		}
	}
	seen := map[string]bool{}
	for _, n := range b.nodes {
		if seen[n.name] {
			b.fail("two processor nodes are named %q: names given with Named, Consumed, Produced, Grouped or Repartitioned must differ", n.name)
		}
		seen[n.name] = true
	}
	if len(b.nodes) == 0 {
		b.fail("the program reads no topic: start it with Stream")
	}
	if len(b.errs) > 0 {
		return nil, nil, &ProgramError{Problems: b.errs}
	}
	b.built = true
	names := topology.Names{AppID: cfg.ApplicationID, ReplicationFactor: max(cfg.ReplicationFactor, 0)}
	// A repartition with a left join below it, however far, keeps records without a key.
	relaxed := map[*node]bool{}
	for _, n := range slices.Backward(b.nodes) {
		if !n.relaxedJoin && !relaxed[n] {
			continue
		}
		for _, p := range n.parents {
			relaxed[p] = true
		}
		if n.writer != nil {
			relaxed[n.writer] = true
			n.writer.keepNullKeys = true
		}
	}
	keepers := map[string]*node{}
	for _, n := range b.nodes {
		for _, st := range n.stores {
			if keepers[st] == nil {
				keepers[st] = n
			}
		}
	}
	unite := func(a, b *node) {
		if r1, r2 := a.find(), b.find(); r1 != r2 {
			r1.root = r2
		}
	}
	for _, n := range b.nodes {
		for _, p := range n.parents {
			unite(n, p)
		}
		for _, st := range n.reads {
			if k := keepers[st]; k != nil && !k.global {
				unite(n, k)
			}
		}
	}
	// Subtopologies are numbered in the order their first node was written (Kafka Streams'
	// makeNodeGroups over its nodes in insertion order).
	ids := map[*node]int{}
	var subs []*subtopology
	for _, n := range b.nodes {
		r := n.find()
		id, ok := ids[r]
		if !ok {
			id = len(subs)
			ids[r] = id
			subs = append(subs, &subtopology{entries: map[string]func(*stream.Context, *stream.Record) error{}})
		}
		s := subs[id]
		switch {
		case n.global:
			if n.kind == sourceNode {
				s.global = &topology.GlobalStore{Topic: n.topic}
				s.entries[n.topic] = n.entry
			} else {
				s.global.Name = n.stores[0]
			}
			if n.init != nil {
				s.inits = append(s.inits, n.init)
			}
			s.nodes = append(s.nodes, n)
			continue
		case n.kind == sourceNode && n.internal:
			// A repartition topic's, or a foreign-key join's (…-topic), with a repartition's configs.
			ti := names.Repartition("", n.partitions)
			ti.Name = names.AppID + "-" + n.topic
			s.def.RepartitionSourceTopics = append(s.def.RepartitionSourceTopics, ti)
			s.entries[names.AppID+"-"+n.topic] = n.entry
		case n.kind == sourceNode:
			s.def.SourceTopics = append(s.def.SourceTopics, n.topic)
			s.entries[n.topic] = n.entry
		case n.kind == sinkNode && n.internal:
			n.sendTo = names.AppID + "-" + n.topic
			s.def.RepartitionSinkTopics = append(s.def.RepartitionSinkTopics, n.sendTo)
		case n.kind == sinkNode:
			n.sendTo = n.topic
		}
		for _, st := range n.stores {
			if !slices.ContainsFunc(s.def.StateChangelogTopics, func(ti topology.TopicInfo) bool { return ti.Name == names.ChangelogTopic(st) }) {
				ti := names.KeyValueChangelog(st)
				if k, ok := b.kinds[st]; ok {
					ti = k.changelog(names)
				}
				s.def.StateChangelogTopics = append(s.def.StateChangelogTopics, ti)
			}
		}
		if n.init != nil {
			s.inits = append(s.inits, n.init)
		}
		s.nodes = append(s.nodes, n)
	}
	// Copartition groups: each group's topics in Kafka Streams' order (from its source nodes' names),
	// merged as Kafka Streams merges them, in the subtopology that reads them.
	var joins [][]string
	for _, sides := range b.copartitions {
		var in [][]topology.JoinInput
		for _, side := range sides {
			var js []topology.JoinInput
			for _, n := range side {
				if n.kind != sourceNode {
					// Kafka Streams names some tables' and streams' sources after processors (a
					// cogroup's or a suppression's table, a reused join repartition): no topics.
					continue
				}
				topic := n.topic
				if n.internal {
					topic = names.AppID + "-" + n.topic
				}
				js = append(js, topology.Source(n.name, topic))
			}
			in = append(in, js)
		}
		joins = append(joins, topology.CopartitionGroup(in...))
	}
	for _, group := range topology.CopartitionGroups(joins...) {
		for _, s := range subs {
			if slices.Contains(s.def.SourceTopics, group[0]) || slices.ContainsFunc(s.def.RepartitionSourceTopics, func(ti topology.TopicInfo) bool { return ti.Name == group[0] }) {
				s.def.CopartitionGroups = append(s.def.CopartitionGroups, group)
			}
		}
	}
	for _, n := range b.nodes {
		for _, f := range n.onBuild {
			f()
		}
	}
	for _, s := range subs {
		s.cache = b.rc()
		for _, n := range s.nodes { // in the order of the nodes: a cache flushes before those below it
			s.flushers = append(s.flushers, n.flushers...)
		}
	}
	var defs []topology.Subtopology
	var globals []topology.GlobalStore
	procs := stream.Processors{}
	for i, s := range subs {
		// Kafka Streams numbers a global store's node group among the subtopologies, and leaves
		// it out of what it sends.
		s.def.ID = fmt.Sprint(i)
		if s.global != nil {
			s.global.Subtopology = s.def.ID
			globals = append(globals, *s.global)
		} else {
			slices.Sort(s.def.SourceTopics)
			defs = append(defs, s.def)
		}
		// The DSL's own stores keep each value's timestamp, as Kafka Streams' do; the stores added
		// for Process are plain.
		var stores []stream.Store
		for _, n := range s.nodes {
			for _, st := range n.stores {
				_, added := b.stores[st]
				k, special := b.kinds[st]
				switch {
				case special && k.headersDecl != nil && cfg.Runtime.DSLStoreFormat == config.DSLStoreFormatHeaders:
					stores = append(stores, k.headersDecl)
				case special:
					stores = append(stores, k.decl)
				case added:
					stores = append(stores, stream.StoreName(st))
				case cfg.Runtime.DSLStoreFormat == config.DSLStoreFormatHeaders:
					stores = append(stores, stream.TimestampedHeadersStore(st))
				default:
					stores = append(stores, stream.TimestampedStore(st))
				}
			}
		}
		if len(s.entries) == 1 {
			for topic, e := range s.entries {
				s.onlyTopic, s.only = topic, e
			}
		}
		procs[s.def.ID] = stream.Connect(s, stores...)
	}
	topo, err := topology.New(defs...)
	if err == nil && len(globals) > 0 {
		topo, err = topo.WithGlobalStores(globals...)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("dsl: the derived topology is not valid: %w", err)
	}
	return topo, procs, nil
}

// flusher is one table's record cache, as its subtopology's processor flushes and discards it.
type flusher struct {
	flush   func(*stream.Context) error
	discard func(*stream.Context)
}

// subtopology is one subtopology's processor: each input topic's source node.
type subtopology struct {
	def topology.Subtopology
	// global is the global store the subtopology keeps, if it is a global table's.
	global   *topology.GlobalStore
	flushers []flusher
	cache    *recordCache
	entries  map[string]func(*stream.Context, *stream.Record) error
	inits    []func(*stream.Context) error
	nodes    []*node
	// only is the entry of the one topic the subtopology reads, if it reads one (set by Build, then
	// only read: the processor is shared by the stream threads).
	only      func(*stream.Context, *stream.Record) error
	onlyTopic string
}

// PanicError is a function of the program (a predicate, a mapper, an aggregator, a processor given
// to Process) that panicked: the runtime handles it as the processor's error, by
// processing.exception.handler, as Kafka Streams hands an exception thrown in a function to that
// handler.
type PanicError struct {
	Value any    // what the function panicked with
	Stack []byte // where
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("dsl: a function of the program panicked: %v", e.Value)
}

// Unwrap is the error the function panicked with, if it panicked with one.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// recovered turns a panic of the program's functions into a *PanicError in *err.
func recovered(err *error) {
	if p := recover(); p != nil {
		*err = &PanicError{Value: p, Stack: debug.Stack()}
	}
}

// Init runs the Init of the processors (Process) of the subtopology as its task starts.
func (s *subtopology) Init(c *stream.Context) (err error) {
	defer recovered(&err)
	// The record cache's size is the running application's (statestore.cache.max.bytes).
	s.cache.configure(c.Config())
	for _, in := range s.inits {
		if err := in(c); err != nil {
			return err
		}
	}
	return nil
}

// Flush writes what the record caches of the subtopology's tables hold for c's task, before the
// task's work is committed (stream.Flusher).
func (s *subtopology) Flush(c *stream.Context) (err error) {
	defer recovered(&err)
	for _, f := range s.flushers {
		if err := f.flush(c); err != nil {
			return err
		}
	}
	return nil
}

// Discard drops what the record caches of the subtopology's tables hold for c's task on c's thread
// (stream.Flusher).
func (s *subtopology) Discard(c *stream.Context) {
	for _, f := range s.flushers {
		f.discard(c)
	}
}

// Process hands the record to the source node of its topic.
func (s *subtopology) Process(c *stream.Context, r *stream.Record) (err error) {
	defer recovered(&err)
	if s.only != nil && r.Topic == s.onlyTopic { // most subtopologies read one topic: no map look-up
		return s.only(c, r)
	}
	if e := s.entries[r.Topic]; e != nil {
		return e(c, r)
	}
	return fmt.Errorf("dsl: no source node reads %s in this subtopology", r.Topic)
}

// Run builds the program b holds into an App for cfg (stream.New with opts) and runs it until ctx
// ends: what Kafka Streams' new KafkaStreams(builder.build(), props).start() does.
func Run(ctx context.Context, cfg config.Config, b *Builder, opts ...stream.Option) error {
	topo, procs, err := b.Build(cfg)
	if err != nil {
		return err
	}
	app, err := stream.New(cfg, topo, procs, opts...)
	if err != nil {
		return err
	}
	return app.Run(ctx)
}
