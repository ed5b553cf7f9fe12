package dsl

import (
	"strconv"

	"github.com/streamsgroup/streamsgroup/stream"
)

// BranchedKStream splits a stream into branches (Kafka Streams' BranchedKStream): each record goes
// to the first branch whose predicate accepts it, else to the default branch if there is one, else
// nowhere.
type BranchedKStream[K, V any] struct {
	s        *KStream[K, V]
	splitter *node
	preds    []func(K, V) bool
	outs     []*fanout[K, V]
	def      *fanout[K, V]
	branches map[string]*KStream[K, V]
}

// Split starts splitting the stream (Kafka Streams' split); the splitter node is named by named or
// KSTREAM-BRANCH-<n>, and its branches by the splitter's name followed by the branch's name or
// number.
func (s *KStream[K, V]) Split(named ...Named) *BranchedKStream[K, V] {
	n := s.b.add(&node{name: s.b.nameOr(string(first(named)), "KSTREAM-BRANCH-"), kind: processorNode}, s.n)
	br := &BranchedKStream[K, V]{s: s, splitter: n, branches: map[string]*KStream[K, V]{}}
	s.out.attach(func(c *stream.Context, m meta, k K, v V) error {
		for i, pred := range br.preds {
			if pred(k, v) {
				return br.outs[i].emit(c, m, k, v)
			}
		}
		if br.def != nil {
			return br.def.emit(c, m, k, v)
		}
		return nil
	})
	return br
}

// Branch adds a branch of the records pred accepts (and no earlier branch did), named by name (Kafka
// Streams' Branched.as) or its number, from 1.
func (br *BranchedKStream[K, V]) Branch(pred func(K, V) bool, name ...string) *BranchedKStream[K, V] {
	br.preds = append(br.preds, pred)
	br.outs = append(br.outs, br.branch(name, len(br.preds)))
	return br
}

// DefaultBranch adds the branch of the records no predicate accepted (named by name or "0") and
// returns the branches by name: the splitter's name followed by the branch's.
func (br *BranchedKStream[K, V]) DefaultBranch(name ...string) map[string]*KStream[K, V] {
	br.def = br.branch(name, 0)
	return br.branches
}

// NoDefaultBranch ends the split without a default branch and returns the branches by name.
func (br *BranchedKStream[K, V]) NoDefaultBranch() map[string]*KStream[K, V] { return br.branches }

func (br *BranchedKStream[K, V]) branch(name []string, index int) *fanout[K, V] {
	b, s := br.s.b, br.s
	child := br.splitter.name + strconv.Itoa(index)
	if len(name) > 0 && name[0] != "" {
		child = br.splitter.name + name[0]
	}
	b.newName(child) // Kafka Streams takes a number for each branch, which it does not use
	n := b.add(&node{name: child, kind: processorNode}, br.splitter)
	out := &KStream[K, V]{b: b, n: n, out: newFanout[K, V](b), ks: s.ks, vs: s.vs, rekeyed: s.rekeyed, sources: s.sources}
	br.branches[child] = out
	return out.out
}
