package topology

import (
	"math"
	"slices"
	"sort"
)

// Kafka Streams does not sort copartition groups: it sends them in the iteration order of
// java.util.HashSet, and the broker compares the lists in order. A Go member that shares a group with
// Java members must produce the same order, so this file reproduces it.
//
// A HashSet is a HashMap table of n buckets (a power of two, at least 16, doubled whenever the size
// exceeds 0.75·n). An element with hash code h lives in bucket (h ^ (h >>> 16)) & (n-1); iteration
// walks the buckets in ascending order and each bucket in insertion order. A resize splits every
// bucket keeping the relative order of its entries, so the final order is: by bucket index under the
// final n, ties by insertion order. (A bucket of 8+ entries in a table of 64+ buckets becomes a tree
// ordered differently; copartition groups never come near that size.)

// javaStringHash is java.lang.String.hashCode: h = 31*h + c over the UTF-16 code units, with int32
// wrap-around.
func javaStringHash(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 { // a surrogate pair in UTF-16
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}

// javaSetHash is java.util.AbstractSet.hashCode: the int32 sum of the elements' hash codes.
func javaSetHash(members []string) int32 {
	var h int32
	for _, m := range members {
		h += javaStringHash(m)
	}
	return h
}

// javaTableSizeForAdds is the bucket count of a HashSet made with the default constructor after n adds.
func javaTableSizeForAdds(n int) int {
	size := 16
	for n > size*3/4 {
		size *= 2
	}
	return size
}

// JavaRuntime selects the Java version whose HashSet sizing Kafka Streams ran with. It matters only
// for the order of copartition groups, and only for some group counts (see javaTableSizeForCopy).
type JavaRuntime int

const (
	// Java17 covers Java 11 to 18: the Kafka Streams JVMs of today (the default).
	Java17 JavaRuntime = iota
	// Java19Plus covers Java 19 and later, whose HashSet copy constructor sizes the table differently.
	Java19Plus
)

// javaTableSizeForCopy is the bucket count of a HashSet made with the copy constructor
// HashSet(Collection c) from a collection of n elements. Java 11 to 18 ask for max(n/0.75f + 1, 16)
// buckets; Java 19+ for ceil(max(n, 12)/0.75). Rounded up to a power of two, these differ when n/0.75
// is one exactly (n = 12, 24, 48, …). Either way the table holds n elements below the load factor
// (0.75·size ≥ n), so the adds that fill it never grow it.
func javaTableSizeForCopy(n int, rt JavaRuntime) int {
	var want int
	if rt == Java19Plus {
		want = int(math.Ceil(float64(max(n, 12)) / 0.75))
	} else {
		want = max(int(float32(n)/0.75)+1, 16)
	}
	size := 1
	for size < want {
		size *= 2
	}
	return size
}

// javaHashOrder returns the indices 0..len(hashes)-1 in the order a Java HashSet with the given
// bucket count iterates elements with these hash codes, inserted in index order.
func javaHashOrder(hashes []int32, buckets int) []int {
	order := make([]int, len(hashes))
	bucket := make([]int, len(hashes))
	for i, h := range hashes {
		order[i] = i
		u := uint32(h)
		bucket[i] = int((u ^ (u >> 16)) & uint32(buckets-1))
	}
	sort.SliceStable(order, func(a, b int) bool { return bucket[order[a]] < bucket[order[b]] })
	return order
}

// javaSet simulates a java.util.HashSet<String> well enough to know its iteration order: the
// elements in insertion order and the table size. Iteration is by bucket, ties in insertion order
// (a resize keeps the relative order inside each bucket), which javaHashOrder computes.
type javaSet struct {
	elems   []string
	buckets int
}

// newJavaSet is `new HashSet<>()`.
func newJavaSet() *javaSet { return &javaSet{buckets: 16} }

// copyJavaSet is `new HashSet<>(src)`: sized by the copy constructor, filled in src's iteration order.
func copyJavaSet(src *javaSet) *javaSet {
	s := &javaSet{buckets: javaTableSizeForCopy(len(src.elems), Java17)}
	for _, e := range src.iter() {
		s.add(e)
	}
	return s
}

// add is HashSet.add: a new element is appended; the table doubles once the size exceeds 0.75 of it.
func (s *javaSet) add(e string) {
	if slices.Contains(s.elems, e) {
		return
	}
	s.elems = append(s.elems, e)
	for len(s.elems) > s.buckets*3/4 {
		s.buckets *= 2
	}
}

// iter returns the elements in iteration order.
func (s *javaSet) iter() []string {
	hashes := make([]int32, len(s.elems))
	for i, e := range s.elems {
		hashes[i] = javaStringHash(e)
	}
	out := make([]string, 0, len(s.elems))
	for _, i := range javaHashOrder(hashes, s.buckets) {
		out = append(out, s.elems[i])
	}
	return out
}
