package topology

import (
	"errors"
	"fmt"
	"slices"
)

// GlobalStore is a store every process keeps whole (Kafka Streams' global store, behind a
// GlobalKTable or Topology.addGlobalStore): it is read from every partition of Topic, which is its
// own changelog, by the process itself and not through tasks, so the broker never sees it. The
// streams group's heartbeat carries no global store; Kafka Streams numbers the global store's node
// group among the subtopologies all the same (a program that declares a global table first has
// its first subtopology numbered 1), and Subtopology is that number: the key of the processor that
// keeps the store current (stream.Processors), which every record of Topic is handed to.
type GlobalStore struct {
	Subtopology string
	Name        string
	Topic       string
}

// Errors of WithGlobalStores.
var (
	// ErrGlobalStore: a global store's declaration is incomplete or clashes with the topology (an
	// empty name, topic or subtopology ID; a name or ID given twice; an ID or topic a subtopology
	// has already).
	ErrGlobalStore = errors.New("invalid global store")
)

// WithGlobalStores returns a copy of the topology with the global stores gs. They change neither
// the topology's ID nor its heartbeat: only the runtime reads them. A global store needs a name, a
// topic and a subtopology ID of its own (no subtopology of the topology has it), and its topic may
// not be an input, output or changelog of a subtopology (Kafka Streams refuses a topic registered
// twice).
func (t *Topology) WithGlobalStores(gs ...GlobalStore) (*Topology, error) {
	var problems []error
	bad := func(format string, args ...any) {
		problems = append(problems, fmt.Errorf("%w: %s", ErrGlobalStore, fmt.Sprintf(format, args...)))
	}
	used := map[string]bool{}
	for _, s := range t.subs {
		for _, topic := range slices.Concat(s.SourceTopics, s.RepartitionSinkTopics) {
			used[topic] = true
		}
		for _, ti := range slices.Concat(s.RepartitionSourceTopics, s.StateChangelogTopics) {
			used[ti.Name] = true
		}
	}
	names, ids := map[string]bool{}, map[string]bool{}
	for _, g := range gs {
		switch {
		case g.Name == "" || g.Topic == "" || g.Subtopology == "":
			bad("%+v: a global store needs a name, a topic and a subtopology ID", g)
			continue
		case names[g.Name]:
			bad("store %q is declared twice", g.Name)
		case ids[g.Subtopology]:
			bad("subtopology %q keeps two global stores (each global store has a subtopology of its own)", g.Subtopology)
		case t.HasSubtopology(g.Subtopology):
			bad("store %q: subtopology %q is a subtopology of the topology, not a global one", g.Name, g.Subtopology)
		case used[g.Topic]:
			bad("store %q: topic %q is read or written by a subtopology already", g.Name, g.Topic)
		}
		names[g.Name], ids[g.Subtopology], used[g.Topic] = true, true, true
	}
	if len(problems) > 0 {
		return nil, errors.Join(problems...)
	}
	c := *t
	c.globals = slices.Clone(gs)
	return &c, nil
}

// GlobalStores returns the topology's global stores (WithGlobalStores), in the order given.
func (t *Topology) GlobalStores() []GlobalStore { return slices.Clone(t.globals) }
