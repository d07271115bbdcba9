package sinkhelper

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
	s.sp.Abandon()
}
