package watch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/e0dc0000/scribe/core"
)

const (
	readChunk = 1 << 20
	// maxHeld bounds the lines of a file kept back before its first user
	// or assistant line; past it they are sent anyway (counted).
	maxHeld = 8 << 20
)

// openQuiet opens a followed file read-only without updating its access
// time where the kernel allows it: watch never writes to, locks or slows
// the files it follows.
func openQuiet(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOATIME, 0)
	if errors.Is(err, unix.EPERM) {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// read submits the complete lines of f after its read offset.
func (w *Watcher) read(ctx context.Context, f *follower) error {
	fh, err := openQuiet(f.st.Path)
	if errors.Is(err, os.ErrNotExist) {
		return w.deleted(ctx, f.st.Path, f)
	}
	if err != nil {
		return err
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return fmt.Errorf("stat %s: %w", f.st.Path, err)
	}
	size, inode := fi.Size(), inodeOf(fi)
	head := make([]byte, min(size, FingerprintSize))
	if _, err := io.ReadFull(io.NewSectionReader(fh, 0, int64(len(head))), head); err != nil {
		return fmt.Errorf("read %s: %w", f.st.Path, err)
	}
	if why := f.moved(fh, head, size, inode); why != "" {
		w.restart(f, why)
	} else if size == f.size && fi.ModTime().UnixNano() != f.mtime && f.readOff+f.torn == size {
		w.Stats.Touches.Add(1) // mtime only: nothing to read
	}
	f.size, f.mtime, f.inode = size, fi.ModTime().UnixNano(), inode
	if f.readOff >= size {
		f.torn = 0
		return nil
	}
	return w.readFrom(ctx, f, fh, head, size)
}

// moved says why reading cannot go on at f.readOff in this file: another
// inode (replaced whole), shorter than what was read (truncated), other
// first bytes or no line end just before the offset (rewritten); "" when
// it can.
func (f *follower) moved(fh *os.File, head []byte, size int64, inode uint64) string {
	if f.readOff == 0 && len(f.marks) == 0 && f.fpLen == 0 {
		return ""
	}
	switch {
	case f.inode != 0 && inode != f.inode:
		return "replaced"
	case size < f.readOff:
		return "truncated"
	case f.fpLen > len(head):
		return "truncated"
	case fingerprint(head[:f.fpLen]) != f.fp:
		return "rewritten"
	}
	if f.readOff > 0 {
		var b [1]byte
		if _, err := fh.ReadAt(b[:], f.readOff-1); err != nil || b[0] != '\n' {
			return "rewritten"
		}
	}
	return ""
}

// restart reads a replaced, truncated or rewritten file again from its
// start: dedup drops the entries the sinks already have, and the
// metadata lines an archive already holds are skipped.
func (w *Watcher) restart(f *follower, why string) {
	switch why {
	case "truncated":
		w.Stats.Truncations.Add(1)
	default:
		w.Stats.Rewrites.Add(1)
	}
	w.log.Info("file changed under its checkpoint; reading it again from the start (entries already sent are dropped by dedup)", "path", f.st.Path, "why", why, "offset", f.readOff)
	f.skipUntil = f.readOff
	f.metaSkip = w.archivedMetadata(f)
	f.readOff, f.fp, f.fpLen, f.msgs, f.torn = 0, "", 0, false, 0
	f.marks = nil
	f.nlAt, f.nlFree = 0, 0
	delete(w.unacked, f)
}

// pendingLine is a complete line read but not yet submitted.
type pendingLine struct {
	raw   []byte
	start int64 // offset of its first byte
	end   int64 // offset just after its newline
	// parsed says e and err hold raw's parse (a line held before the
	// file's first message is parsed once, when it is read).
	parsed bool
	e      core.Entry
	err    error
	// owned: raw is the line's own buffer (a long line), not a view of
	// the read buffer that must be copied.
	owned bool
	// over is the length of a line past the line cap: raw is nil, the
	// line is counted and passed over.
	over int64
}

// readFrom reads complete lines from f.readOff to size and submits them.
func (w *Watcher) readFrom(ctx context.Context, f *follower, fh *os.File, head []byte, size int64) error {
	r := newLineReader(fh, f.readOff, size, w.maxLine())
	r.nlAt, r.nlFree = f.nlAt, f.nlFree
	defer func() {
		w.Stats.BytesRead.Add(r.read)
		f.nlAt, f.nlFree = r.nlAt, r.nlFree
	}()
	var held []pendingLine
	var heldBytes int64
	submitted := false
	for {
		pl, ok, err := r.next()
		if err != nil {
			return fmt.Errorf("read %s: %w", f.st.Path, err)
		}
		if !ok {
			break
		}
		if len(held) > 0 || !f.msgs {
			if !pl.owned && pl.over == 0 {
				pl.raw, pl.owned = bytes.Clone(pl.raw), true
			}
			if pl.over == 0 {
				pl.e, pl.err = core.ParseEntryOwned(pl.raw)
				pl.parsed = true
			}
			held = append(held, pl)
			heldBytes += int64(len(pl.raw))
			if (pl.parsed && pl.err == nil && pl.e.IsMessage()) || heldBytes > maxHeld || f.st.Kind == KindLifecycle {
				if err := w.submitLines(ctx, f, held, head); err != nil {
					return err
				}
				held, heldBytes, submitted = nil, 0, true
			}
			continue
		}
		if err := w.submitLines(ctx, f, []pendingLine{pl}, head); err != nil {
			return err
		}
		submitted = true
	}
	f.torn = size - r.off
	if len(held) > 0 {
		// Lines before the file's first user or assistant line wait for it.
		f.torn = size - held[0].start
	}
	if submitted && f.firstRead.IsZero() {
		f.firstRead = time.Now()
	}
	return nil
}

// submitLines submits lines of f in order; each moves the read offset.
func (w *Watcher) submitLines(ctx context.Context, f *follower, lines []pendingLine, head []byte) error {
	for _, pl := range lines {
		w.Stats.Lines.Add(1)
		if err := w.submitLine(ctx, f, pl); err != nil {
			return err
		}
		f.readOff = pl.end
		if f.fpLen < FingerprintSize {
			n := int(min(pl.end, int64(len(head))))
			f.fp, f.fpLen = fingerprint(head[:n]), n
		}
		w.seq++
		f.marks = append(f.marks, mark{seq: w.seq, off: pl.end, fp: f.fp, fpLen: f.fpLen, inode: f.inode, msgs: f.msgs, at: time.Now()})
		w.unacked[f] = true
		if f.metaSkip != nil && pl.end >= f.skipUntil {
			f.metaSkip = nil
		}
	}
	return nil
}

// submitLine submits one line; a malformed or blank one, or one past the
// line cap, is counted and passed over, like a refusal. An error leaves
// the line to be read again.
func (w *Watcher) submitLine(ctx context.Context, f *follower, pl pendingLine) error {
	if pl.over > 0 {
		w.Stats.OverLimit.Add(1)
		w.log.Warn("line longer than the line cap passed over, not mirrored (raise watch { max_line_bytes } to take it)",
			"path", f.st.Path, "offset", pl.start, "bytes", pl.over, "max_line_bytes", w.maxLine())
		return nil
	}
	if len(bytes.TrimSpace(pl.raw)) == 0 {
		w.Stats.Blank.Add(1)
		return nil
	}
	e, err := pl.e, pl.err
	switch {
	case pl.parsed:
	case pl.owned:
		e, err = core.ParseEntryOwned(pl.raw)
	default:
		e, err = core.ParseEntry(pl.raw)
	}
	if err != nil {
		w.Stats.Malformed.Add(1)
		w.log.Warn("malformed line passed over", "path", f.st.Path, "offset", pl.start, "error", err)
		return nil
	}
	// Raw is the entry's own memory, never reused: with a lease, a sink
	// writes a long line from it instead of copying it (core.Lease).
	e.Lease = core.NewLease()
	return w.submitEntry(ctx, f, e)
}

// submitEntry submits a parsed line of f (submitLine, replayArchive).
func (w *Watcher) submitEntry(ctx context.Context, f *follower, e core.Entry) error {
	if e.IsMessage() {
		f.msgs = true
	}
	if f.metaSkip != nil && e.UUID == "" && f.metaSkip[string(e.Raw)] {
		w.Stats.MetaSkipped.Add(1)
		return nil
	}
	if e.SessionID == "" {
		e.SessionID = f.st.Session
	}
	if e.CWD == "" {
		e.CWD = f.st.CWD
	} else if f.st.CWD == "" {
		f.st.CWD = e.CWD
	}
	if f.st.Kind == KindAgent && e.AgentID == "" && e.IsMetadata() {
		e.AgentID = f.st.Agent
	}
	e.Seq = w.seq + 1
	res, err := w.submit(ctx, e)
	if err != nil {
		return err
	}
	w.count(res)
	if res.Status == core.Rejected {
		w.log.Warn("entry not recorded", "path", f.st.Path, "uuid", e.UUID, "reason", res.Reason)
	}
	return nil
}
