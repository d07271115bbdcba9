package plugins

// The plugin sink's spool side: what goes to disk, what comes back, and
// the release watermark that lets it go.

import (
	"bytes"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/e0dc0000/scribe/internal/spool"
	pb "github.com/e0dc0000/scribe/plugins/proto"
)

// spill writes every batch through target that is only in memory to the
// spool and fsyncs it.
func (s *Sink) spill(target uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sp == nil {
		return fmt.Errorf("sink %s: %w", s.id, ErrClosed)
	}
	n := 0
	for _, b := range s.batches {
		if b.id > target {
			break
		}
		if b.onDisk || b.n == 0 {
			continue
		}
		b.sealed = true
		payload, err := proto.Marshal(&pb.WriteRequest{BatchId: b.id, Entries: b.entries})
		if err != nil {
			return fmt.Errorf("sink %s: encode batch: %w", s.id, err)
		}
		ref, err := s.sp.Append(b.id, b.n, s.sealPayload(payload))
		if err != nil {
			return fmt.Errorf("sink %s: spool: %w", s.id, err)
		}
		b.onDisk, b.ref, b.entries = true, ref, nil
		s.memEntries -= b.n
		s.spooled += b.n
		n += b.n
	}
	if err := s.sp.Sync(); err != nil {
		return fmt.Errorf("sink %s: %w", s.id, err)
	}
	if n > 0 {
		s.spills.Add(1)
		s.log.Debug("plugin not caught up; entries made durable in the spool", "entries", n, "state", s.state)
	}
	return nil
}

// unreleasedMem counts entries in memory that the plugin acknowledged but
// has not made durable; s.mu is held.
func (s *Sink) unreleasedMem() int {
	n := 0
	for _, b := range s.batches {
		if b.id > s.acked {
			break
		}
		if !b.onDisk {
			n += b.n
		}
	}
	return n
}

func (s *Sink) readSpooled(ref spool.Ref) ([]*pb.Entry, error) {
	s.mu.Lock()
	sp := s.sp
	s.mu.Unlock()
	if sp == nil {
		return nil, ErrClosed
	}
	payload, err := sp.Read(ref)
	if err != nil {
		return nil, err
	}
	if payload, err = s.openPayload(payload); err != nil {
		return nil, err
	}
	var msg pb.WriteRequest
	if err := proto.Unmarshal(payload, &msg); err != nil {
		return nil, err
	}
	return msg.Entries, nil
}

// dropCorrupt gives up a spooled batch that cannot be read back, loudly.
func (s *Sink) dropCorrupt(b *qbatch, err error) {
	s.corrupt.Add(int64(b.n))
	s.log.Error("spooled batch unreadable; its entries are lost", "batch", b.id, "entries", b.n, "error", err)
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, x := range s.batches {
		if x == b {
			s.batches = append(s.batches[:i], s.batches[i+1:]...)
			s.queued -= b.n
			s.spooled -= b.n
			break
		}
	}
	s.broadcast()
}

// releaseLocked forgets every batch through id; s.mu is held.
func (s *Sink) releaseLocked(id uint64) {
	if id <= s.released {
		return
	}
	i := 0
	disk := false
	for ; i < len(s.batches) && s.batches[i].id <= id; i++ {
		b := s.batches[i]
		s.queued -= b.n
		if b.onDisk {
			s.spooled -= b.n
			disk = true
		}
		if b.entries != nil {
			s.memEntries -= b.n
		}
	}
	clear(s.batches[:i])
	s.batches = s.batches[i:]
	s.released = id
	if disk && s.sp != nil {
		if err := s.sp.Release(id, false); err != nil {
			s.log.Warn("spool cleanup failed", "error", err)
		}
	}
}

// sealedMagic starts a spooled batch that spool_encryption sealed.
var sealedMagic = []byte("scribe-sealed-1\x00")

// sealPayload seals a batch before it goes to the spool, when a key is
// configured.
func (s *Sink) sealPayload(payload []byte) []byte {
	if s.key == nil {
		return payload
	}
	return s.key.Seal(append([]byte(nil), sealedMagic...), payload, sealedMagic)
}

// openPayload opens a sealed batch; a sealed batch without the key, or
// with another key, is an error, never read as plain.
func (s *Sink) openPayload(payload []byte) ([]byte, error) {
	if !bytes.HasPrefix(payload, sealedMagic) {
		return payload, nil
	}
	if s.key == nil {
		return nil, fmt.Errorf("sink %s: the spool holds sealed batches and no spool_encryption key is configured", s.id)
	}
	out, err := s.key.Open(nil, payload[len(sealedMagic):], sealedMagic)
	if err != nil {
		return nil, fmt.Errorf("sink %s: open a spooled batch: %w", s.id, err)
	}
	return out, nil
}
