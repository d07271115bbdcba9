// Package freelist keeps buffers for reuse, last in first out: the buffer
// given back last, the likeliest still in the CPU's caches, is handed out
// first. A channel used as a free list is a queue, which hands out the
// coldest; a sync.Pool drops its buffers at every garbage collection, and a
// buffer of fresh memory pays a page fault per 4 KiB when first written.
package freelist

import "sync"

// Stack holds at most Max values; the zero value holds none. It is safe
// for concurrent use.
type Stack[T any] struct {
	Max int
	mu  sync.Mutex
	s   []T
}

// Get takes the value put last; ok is false when the stack is empty.
func (st *Stack[T]) Get() (v T, ok bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	n := len(st.s)
	if n == 0 {
		return v, false
	}
	v = st.s[n-1]
	var zero T
	st.s[n-1] = zero
	st.s = st.s[:n-1]
	return v, true
}

// Put keeps v, unless Max values are kept already (it reports whether it
// kept it).
func (st *Stack[T]) Put(v T) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.s) >= st.Max {
		return false
	}
	st.s = append(st.s, v)
	return true
}

// Clear drops every value kept.
func (st *Stack[T]) Clear() {
	st.mu.Lock()
	defer st.mu.Unlock()
	clear(st.s)
	st.s = st.s[:0]
}

// Recycle keeps slice s for reuse, emptied (its elements cleared, so that
// it holds nothing alive); a slice with no capacity is not kept.
func Recycle[E any](st *Stack[[]E], s []E) {
	if cap(s) == 0 {
		return
	}
	clear(s)
	st.Put(s[:0])
}
