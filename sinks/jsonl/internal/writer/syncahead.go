package writer

import (
	"context"
	"errors"
	"os"
	"sync"
	"sync/atomic"

	"github.com/e0dc0000/scribe/internal/durable"
)

// syncAhead syncs, in the background, files a sized drain wrote without
// syncing (the batch policy), so that the sync an acknowledgement or a
// Flush waits for finds the disk done. It is a hint, not a promise: the
// books (file.unsynced, Sink.toSync) do not change, the sync that counts is
// still made, and an error here is only counted. What it buys: a virtual
// disk flushes its cache at each fsync, in time with what was written since
// the last one, and SYNC_FILE_RANGE_WRITE does not flush it: 256 MiB
// written to 20 files took 110 ms to sync at the end after it, 1 ms after
// fsyncs made along the way (bench/results/2026-12-05-record.md).
//
// At most one round runs at a time; files asked for while it runs wait
// for the next round, each file once. The files are *os.File, whose Sync
// and Close may race: a file closed meanwhile (and so synced by the drain)
// is skipped; another error is counted.
type syncAhead struct {
	mu      sync.Mutex
	written map[*os.File]struct{} // written since the last round was asked for
	bytes   int64                 // how many bytes
	pending map[*os.File]struct{} // to sync in the next round
	running bool
	idle    *sync.Cond // signalled when a round ends with nothing pending

	rounds, syncs, failed atomic.Int64
}

func newSyncAhead() *syncAhead {
	a := &syncAhead{written: make(map[*os.File]struct{}), pending: make(map[*os.File]struct{})}
	a.idle = sync.NewCond(&a.mu)
	return a
}

// aheadEvery is how many bytes written wait for their background sync: a
// round after every sized drain slowed the bench's writes by a third, one
// per 32 MiB did not (16 MiB was no better, 64 MiB left more for the end).
const aheadEvery = 32 << 20

// wrote counts n bytes written to fd; once aheadEvery bytes wait, every
// file they went to is synced in the next round.
func (a *syncAhead) wrote(fd *os.File, n int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.written[fd] = struct{}{}
	if a.bytes += n; a.bytes < aheadEvery {
		return
	}
	a.bytes = 0
	for fd := range a.written {
		a.pending[fd] = struct{}{}
	}
	clear(a.written)
	if !a.running {
		a.running = true
		go a.run()
	}
}

func (a *syncAhead) run() {
	a.mu.Lock()
	for len(a.pending) > 0 {
		fds := make([]*os.File, 0, len(a.pending))
		for fd := range a.pending {
			fds = append(fds, fd)
		}
		clear(a.pending)
		a.mu.Unlock()
		a.round(fds)
		a.mu.Lock()
	}
	a.running = false
	a.idle.Broadcast()
	a.mu.Unlock()
}

// aheadWorkers is how many background fsyncs wait at once.
const aheadWorkers = 4

// round syncs fds side by side, at most aheadWorkers at once.
func (a *syncAhead) round(fds []*os.File) {
	a.rounds.Add(1)
	_ = durable.Each(context.Background(), aheadWorkers, len(fds), func(_ context.Context, i int) error {
		switch err := fds[i].Sync(); {
		case err == nil:
			a.syncs.Add(1)
		case !errors.Is(err, os.ErrClosed): // closed meanwhile: synced then
			a.failed.Add(1)
		}
		return nil
	})
}

// wait returns once no round runs (Shutdown: no goroutine outlives the
// sink).
func (a *syncAhead) wait() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for a.running {
		a.idle.Wait()
	}
}
