package admin

// Retention that users can trust: gc is keyed on the last activity
// recorded inside the log (the newest "timestamp" of the transcript's
// lines, found from the end), never on the file's mtime, which backups,
// syncs and editors change (cc#62250). A session a live writer holds, or
// with activity in the last hour, is never collected; what is collected
// goes to the trash.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
)

// GCMinIdle is how long a session must have been quiet before gc may
// collect it, whatever the options.
const GCMinIdle = time.Hour

// GCOptions say what gc collects. At least one of OlderThan and MaxSize
// must be set.
type GCOptions struct {
	// OlderThan collects sessions whose last activity is older than this.
	OlderThan time.Duration
	// MaxSize collects sessions, oldest activity first, until the bytes of
	// the sessions in scope are at most this.
	MaxSize int64
	// Project limits gc to one project folder (a name under projects/);
	// "" is every project.
	Project string
	DryRun  bool
	Now     time.Time
	// Progress is called after each session is looked at or moved.
	Progress func(done, total int)
}

// GCSession is one session as gc judged it.
type GCSession struct {
	SessionID string `json:"sessionId"`
	Project   string `json:"project"`
	// LastActivity is the newest timestamp inside the transcript; nil when
	// it has none (such a session is kept).
	LastActivity *time.Time `json:"lastActivity,omitempty"`
	Bytes        int64      `json:"bytes"`
	// Action is "collect" (to the trash; "would collect" with DryRun) or
	// "keep"; Reason says why.
	Action string `json:"action"`
	Reason string `json:"reason"`
	// TrashID is set for a collected session.
	TrashID string `json:"trashId,omitempty"`
}

// GCReport is what gc did.
type GCReport struct {
	DryRun         bool        `json:"dryRun"`
	Sessions       []GCSession `json:"sessions"`
	Collected      int         `json:"collected"`
	CollectedBytes int64       `json:"collectedBytes"`
	Kept           int         `json:"kept"`
	// BytesBefore and BytesAfter are the bytes of the sessions in scope.
	BytesBefore int64 `json:"bytesBefore"`
	BytesAfter  int64 `json:"bytesAfter"`
	// QuotaMet is false when MaxSize was set and could not be reached.
	QuotaMet *bool `json:"quotaMet,omitempty"`
	// StaleStagings are the staging folders of imports that died, removed
	// (listed only with DryRun).
	StaleStagings []StaleStaging `json:"staleStagings,omitempty"`
}

// LastActivity returns the newest parseable "timestamp" among the lines
// of a transcript, reading backwards from the end in growing windows; ok
// is false when no line has one.
func LastActivity(path string) (t time.Time, ok bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return t, false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return t, false, err
	}
	size := fi.Size()
	for win := int64(claudedir.ListWindow); ; win *= 4 {
		off := max(size-win, 0)
		buf := make([]byte, size-off)
		if _, err := f.ReadAt(buf, off); err != nil {
			return t, false, fmt.Errorf("read %s: %w", path, err)
		}
		if off > 0 {
			// The first line may be cut: start after its end.
			if i := bytes.IndexByte(buf, '\n'); i >= 0 {
				buf = buf[i+1:]
			}
		}
		if t, ok = newestTimestamp(buf); ok || off == 0 {
			return t, ok, nil
		}
	}
}

func newestTimestamp(buf []byte) (time.Time, bool) {
	var best time.Time
	found := false
	for _, line := range bytes.Split(buf, []byte{'\n'}) {
		if !bytes.Contains(line, []byte(`"timestamp"`)) {
			continue
		}
		var v struct {
			Timestamp string `json:"timestamp"`
		}
		if json.Unmarshal(line, &v) != nil || v.Timestamp == "" {
			continue
		}
		ts, err := time.Parse(time.RFC3339Nano, v.Timestamp)
		if err != nil {
			continue
		}
		if !found || ts.After(best) {
			best, found = ts, true
		}
	}
	return best, found
}

// SessionBytes is the bytes of everything that belongs to a session in a
// project folder (transcript, its folder, sidecars).
func SessionBytes(projectDir, id string) (int64, error) {
	names, err := sessionEntries(projectDir, id)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, name := range names {
		err := filepath.WalkDir(filepath.Join(projectDir, name), func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.Type().IsRegular() {
				fi, err := d.Info()
				if err != nil {
					return err
				}
				n += fi.Size()
			}
			return nil
		})
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// GC plans, and unless DryRun carries out, the collection of old sessions
// to the trash.
func (l Layout) GC(ctx context.Context, opt GCOptions) (GCReport, error) {
	rep := GCReport{DryRun: opt.DryRun}
	if opt.OlderThan <= 0 && opt.MaxSize <= 0 {
		return rep, errors.New("gc: give --older-than or --max-size")
	}
	if opt.Now.IsZero() {
		opt.Now = time.Now()
	}
	var err error
	if opt.DryRun {
		rep.StaleStagings, err = l.StaleStagings(opt.Now)
	} else {
		rep.StaleStagings, err = l.RemoveStaleStagings()
	}
	if err != nil {
		return rep, fmt.Errorf("gc: %w", err)
	}
	cands, err := l.gcScan(opt)
	if err != nil {
		return rep, err
	}
	active := l.index().ActiveProbe()
	// Oldest activity first; sessions without a timestamp last.
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := cands[i].LastActivity, cands[j].LastActivity
		if a == nil || b == nil {
			return a != nil && b == nil
		}
		return a.Before(*b)
	})
	for _, c := range cands {
		rep.BytesBefore += c.Bytes
	}
	remaining := rep.BytesBefore
	for i := range cands {
		c := &cands[i]
		c.Action = "keep"
		switch {
		case c.LastActivity == nil:
			c.Reason = "no timestamp inside the transcript"
		case active(c.SessionID):
			c.Reason = "a live writer holds it"
		case opt.Now.Sub(*c.LastActivity) < GCMinIdle:
			c.Reason = "activity in the last hour"
		case opt.OlderThan > 0 && opt.Now.Sub(*c.LastActivity) > opt.OlderThan:
			c.Action, c.Reason = "collect", "last activity older than "+opt.OlderThan.String()
		case opt.MaxSize > 0 && remaining > opt.MaxSize:
			c.Action, c.Reason = "collect", fmt.Sprintf("over the quota of %d bytes (oldest activity first)", opt.MaxSize)
		default:
			c.Reason = "within the retention"
		}
		if c.Action == "collect" {
			remaining -= c.Bytes
		}
	}
	for i := range cands {
		c := &cands[i]
		if c.Action == "collect" && !opt.DryRun {
			items, err := l.trashFrom(ctx, c.SessionID, c.Project)
			if err != nil {
				if !errors.Is(err, layout.ErrLocked) {
					return rep, err
				}
				c.Action, c.Reason = "keep", "a live writer took it during gc"
				remaining += c.Bytes
			} else {
				c.TrashID = items.ID
			}
		}
		if c.Action == "collect" {
			rep.Collected++
			rep.CollectedBytes += c.Bytes
		} else {
			rep.Kept++
		}
		if opt.Progress != nil {
			opt.Progress(i+1, len(cands))
		}
	}
	rep.Sessions, rep.BytesAfter = cands, remaining
	if opt.MaxSize > 0 {
		met := remaining <= opt.MaxSize
		rep.QuotaMet = &met
	}
	return rep, nil
}

// gcScan lists the sessions in scope with their last activity and size.
func (l Layout) gcScan(opt GCOptions) ([]GCSession, error) {
	var out []GCSession
	err := l.EachTranscript(opt.Project, func(folder, dir, id string, _ os.FileInfo) error {
		s := GCSession{SessionID: id, Project: folder}
		t, ok, err := LastActivity(claudedir.MainFile(dir, id))
		if err != nil {
			return err
		}
		if ok {
			s.LastActivity = &t
		}
		if s.Bytes, err = SessionBytes(dir, id); err != nil {
			return err
		}
		out = append(out, s)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("gc: %w", err)
	}
	return out, nil
}

// trashFrom moves one project folder's copy of a session to the trash
// (no lock wait: a live writer keeps it).
func (l Layout) trashFrom(ctx context.Context, id, folder string) (sessions.TrashItem, error) {
	lk, err := l.Lock(ctx, id, 0)
	if err != nil {
		return sessions.TrashItem{}, err
	}
	defer lk.Release()
	it, err := l.trashOne(id, folder, sessions.TrashOptions{Reason: "gc"}, time.Now().UTC())
	if err != nil {
		return it, fmt.Errorf("gc %s: %w", id, err)
	}
	return it, nil
}
