package freelist

import (
	"sync"
	"testing"
)

func TestLastInFirstOut(t *testing.T) {
	st := Stack[int]{Max: 3}
	if _, ok := st.Get(); ok {
		t.Fatal("Get from an empty stack")
	}
	for i := 1; i <= 4; i++ {
		if kept := st.Put(i); kept != (i <= 3) {
			t.Fatalf("Put(%d) kept %v", i, kept)
		}
	}
	for _, want := range []int{3, 2, 1} {
		if v, ok := st.Get(); !ok || v != want {
			t.Fatalf("Get = %d, %v; want %d", v, ok, want)
		}
	}
	st.Put(7)
	st.Clear()
	if _, ok := st.Get(); ok {
		t.Fatal("Clear left values")
	}
}

// Recycle keeps a slice emptied and cleared, and drops one with no
// capacity.
func TestRecycle(t *testing.T) {
	var st Stack[[]*int]
	st.Max = 2
	x := 1
	Recycle(&st, []*int{&x, &x})
	Recycle(&st, nil)
	s, ok := st.Get()
	if !ok || len(s) != 0 || cap(s) != 2 || s[:2][0] != nil {
		t.Fatalf("got %v (len %d cap %d), %v; want an empty, cleared slice of capacity 2", s, len(s), cap(s), ok)
	}
	if _, ok := st.Get(); ok {
		t.Fatal("a nil slice was kept")
	}
}

// Under concurrent use every value put and kept is got back once.
func TestConcurrent(t *testing.T) {
	st := Stack[*int]{Max: 1 << 20}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				v := g*1000 + i
				st.Put(&v)
			}
		})
	}
	wg.Wait()
	seen := map[int]bool{}
	for {
		p, ok := st.Get()
		if !ok {
			break
		}
		if seen[*p] {
			t.Fatalf("%d got twice", *p)
		}
		seen[*p] = true
	}
	if len(seen) != 8000 {
		t.Fatalf("got %d values back, want 8000", len(seen))
	}
}
