package writer

// The sidecar: scribe's own lifecycle records (core.TypeLifecycle) and
// checkpoints (core.TypeCheckpoint) of a session, kept beside its
// transcript instead of in it:
//
//	projects/<sanitized cwd>/<sessionId>.jsonl                         Claude Code's transcript
//	projects/<sanitized cwd>/<sessionId>/scribe-lifecycle.jsonl        the sidecar
//
// A lifecycle line in the transcript would change what the SDK's
// listSessions and the CLI's /resume picker show (see core/lifecycle.go and
// TestLifecycleInTranscriptChangesTheSDKListing); no reader of Claude Code
// opens this file, and deleting the session (the SDK's deleteSession, the
// CLI's retention sweep) removes it with the <sessionId>/ folder.
//
// The sink routes these entries here (Sink.route → routeSide). Like the
// transcript's own metadata, they wait in memory until the session's
// transcript exists or gets its first user or assistant entry, so a session
// that never starts leaves no sidecar; then they go through the same write
// queue, drain, fsync policy, torn-tail sealing and session lock as the
// transcript. Their uuids seed dedup with the transcript's.

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/core"
)

// sideFor returns the session's sidecar queue, scanning the file the first
// time the session's folder is known. Called with s.mu held.
func (s *Sink) sideFor(ss *session) (*file, error) {
	if ss.side == nil {
		ss.side = &file{sess: ss, latest: make([][]byte, len(reappendTypes)), latestEnd: make([]int64, len(reappendTypes))}
	}
	f := ss.side
	if f.scanned == nil && ss.dir != "" {
		f.path = claudedir.SidecarFile(ss.dir, ss.id)
		sc, err := s.scanOf(f)
		if err != nil {
			return nil, err
		}
		f.adopt(sc)
	}
	return f, nil
}

// routeSide queues a lifecycle record on the session's sidecar, or holds it
// until the transcript materializes. Called with s.mu held, after touch.
func (s *Sink) routeSide(ss *session, e *core.Entry) error {
	main, err := s.fileFor(ss, "")
	if err != nil {
		return err
	}
	side, err := s.sideFor(ss)
	if err != nil {
		return err
	}
	if !main.materialized {
		side.held = append(side.held, held{raw: bytes.Clone(e.Raw), typ: e.Type, seq: e.Seq})
		s.heldN++
		return nil
	}
	s.queue(side, e.Raw, e.Type, e.Lease)
	return nil
}

// releaseSide queues what the sidecar held, once the transcript has
// materialized. Called with s.mu held.
func (s *Sink) releaseSide(ss *session) error {
	if ss.side == nil || len(ss.side.held) == 0 {
		return nil
	}
	side, err := s.sideFor(ss)
	if err != nil {
		return err
	}
	hl := side.held
	side.held = nil
	s.heldN -= len(hl)
	for _, h := range hl {
		s.queue(side, h.raw, h.typ, nil)
	}
	return nil
}

// seedSide adds the uuids of the session's sidecar to uuids. Called with
// s.mu held, once the session's folder is known.
func (s *Sink) seedSide(ss *session, uuids []string) ([]string, error) {
	side, err := s.sideFor(ss)
	if err != nil {
		return nil, err
	}
	if sc := side.scanned; sc != nil {
		uuids = append(uuids, sc.uuids...)
		sc.uuids, sc.metadata = nil, nil
	}
	return uuids, nil
}

// AppendCheckpoint takes a checkpoint of a session now, for a host without
// a pipeline: it takes the session's lock as a writer does (waiting up to
// lockWait for another writer), builds the checkpoint after the current
// leaf (CheckpointAtLeaf), appends it to the sidecar through a sink, syncs
// it and releases the lock.
func (l Layout) AppendCheckpoint(ctx context.Context, sessionID, label string, lockWait time.Duration, commitOf core.CommitLookup) (cp core.Checkpoint, err error) {
	s, err := New(Options{ConfigDir: l.ConfigDir, LockWait: lockWait, Fsync: FsyncBatch})
	if err != nil {
		return cp, err
	}
	if err := s.Start(ctx); err != nil {
		return cp, err
	}
	defer func() {
		if serr := s.Shutdown(context.WithoutCancel(ctx)); err == nil && serr != nil {
			err = serr
		}
	}()
	// Seed takes the session's lock before the leaf is read.
	if _, err := s.Seed(ctx, core.SessionRef{SessionID: sessionID}); err != nil {
		return cp, fmt.Errorf("checkpoint: %w", err)
	}
	cp, e, err := l.reader().CheckpointAtLeaf(ctx, sessionID, "", label, time.Time{}, commitOf)
	if err != nil {
		return cp, err
	}
	if err := s.Write(ctx, []core.Entry{e}); err != nil {
		return cp, err
	}
	return cp, s.Flush(ctx)
}
