package sinkhelper

import "golang.org/x/sys/unix"

// abandon stops the Sender as kill -9 would: memory is lost, nothing more
// is written or synced, and the spool lane is released. For tests.
func (s *Sender) abandon() {
	s.mu.Lock()
	s.closed = true
	started := s.started
	s.mu.Unlock()
	if !started {
		return
	}
	s.cancel()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mem = nil
	s.sp.abandon()
}

// abandon drops the lane as a killed process would: nothing more is
// written or synced. Tests use it to play kill -9.
func (s *spool) abandon() {
	for _, f := range s.unsynced {
		f.Close() // the kernel keeps what was written
	}
	s.unsynced = nil
	s.closeFiles()
	if s.ackF != nil {
		s.ackF.Close()
		s.ackF = nil
	}
	if s.lock != nil {
		_ = unix.Flock(int(s.lock.Fd()), unix.LOCK_UN)
		s.lock.Close()
		s.lock = nil
	}
}
