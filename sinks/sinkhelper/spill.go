package sinkhelper

// The Sender's disk side: the spool lane it opens at Start, what a dead
// process left in other lanes, and the spills when memory is full.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/seal"
	"github.com/e0dc0000/scribe/internal/spool"
)

// spoolKey loads (or makes) the spool's record key when encryption is
// configured; nil when it is not.
func (s *Sender) spoolKey() (*seal.RecordKey, error) {
	if s.opts.Encryption.IsZero() {
		return nil, nil
	}
	sl, err := seal.New(context.Background(), s.opts.Encryption, s.opts.Environ)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(s.opts.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("spool folder: %w", err)
	}
	return sl.RecordKey(filepath.Join(s.opts.Dir, "key.age"))
}

// adoptLocked moves what a dead process left in another lane to the end of
// this one, then empties that lane.
func (s *Sender) adoptLocked(o *spool.Lane) error {
	n := int64(0)
	from := o.Ack()
	for {
		recs, err := o.Read(from, s.opts.MaxBatch, s.opts.MaxBatchBytes)
		if err != nil {
			return err
		}
		if len(recs) == 0 {
			break
		}
		for i := range recs {
			recs[i].Seq = s.next
			s.next++
		}
		if err := s.sp.Append(recs); err != nil {
			return err
		}
		n += int64(len(recs))
	}
	if err := s.sp.Sync(); err != nil {
		return err
	}
	if err := o.SetAck(o.Tail()); err != nil {
		return err
	}
	if err := o.Close(true); err != nil {
		return err
	}
	s.adopted.Add(n)
	s.adoptedLanes.Add(1)
	s.log.Info("took over a spool lane left by a process that died", "lane", o.Dir(), "entries", n)
	return nil
}

// spillLocked moves the memory queue to the end of the spool and fsyncs.
// Entries in flight are written too, so that a crash before their
// acknowledgement does not lose them.
func (s *Sender) spillLocked() error {
	if len(s.mem) == 0 {
		return nil
	}
	recs := make([]spool.Record, 0, len(s.mem))
	room := s.opts.SpoolMaxBytes - s.sp.Bytes()
	var over int64
	var overErr error
	for _, m := range s.mem {
		if m.size > room {
			over++
			if overErr == nil {
				overErr = fmt.Errorf("spool full (%d bytes)", s.opts.SpoolMaxBytes)
			}
			continue
		}
		room -= m.size
		recs = append(recs, spool.Record{Seq: m.seq, Data: encodeEntry(m.e)})
	}
	err := s.sp.Append(recs)
	if err == nil {
		err = s.sp.Sync()
	}
	if err != nil {
		s.spoolErrors.Add(1)
		// Keep in memory only what did not reach the disk.
		k := 0
		for k < len(s.mem) && s.mem[k].seq < s.sp.Tail() {
			s.memSize -= s.mem[k].size
			k++
		}
		s.mem = append(s.mem[:0], s.mem[k:]...)
		return fmt.Errorf("spill to %s: %w", s.sp.Dir(), err)
	}
	if over > 0 {
		s.droppedLocked(over, overErr, "spool full: entries dropped")
	}
	s.spills.Add(1)
	s.spilled.Add(int64(len(recs)))
	clear(s.mem)
	s.mem = s.mem[:0]
	s.memSize = 0
	return nil
}

// The spooled form of an entry: a version byte, the session id the host
// routed it by (it may not be in the line), and the line.
const envelopeV1 = 1

func encodeEntry(e core.Entry) []byte {
	b := make([]byte, 0, 1+binary.MaxVarintLen64+len(e.SessionID)+len(e.Raw))
	b = append(b, envelopeV1)
	b = binary.AppendUvarint(b, uint64(len(e.SessionID)))
	b = append(b, e.SessionID...)
	return append(b, e.Raw...)
}

func decodeEntry(b []byte) (core.Entry, error) {
	if len(b) == 0 || b[0] != envelopeV1 {
		return core.Entry{}, errors.New("unknown record version")
	}
	n, k := binary.Uvarint(b[1:])
	if k <= 0 || uint64(len(b)-1-k) < n {
		return core.Entry{}, errors.New("bad session id length")
	}
	sid := string(b[1+k : 1+k+int(n)])
	e, err := core.ParseEntryOwned(b[1+k+int(n):])
	if err != nil {
		return core.Entry{}, err
	}
	if sid != "" {
		e.SessionID = sid
	}
	return e, nil
}
