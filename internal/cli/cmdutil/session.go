package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/config"
	"github.com/e0dc0000/scribe/sinks/jsonl"
)

// ErrAmbiguous is returned when an id prefix names several sessions.
var ErrAmbiguous = errors.New("ambiguous session id")

// ResolveSession turns a full id or a unique prefix into a session id,
// searching every project folder.
func ResolveSession(ctx context.Context, l jsonl.Layout, arg string) (string, error) {
	if arg == "" {
		return "", &ExitError{Code: 2, Err: errors.New("no session id given")}
	}
	if claudedir.IsSessionID(arg) {
		return strings.ToLower(arg), nil
	}
	if strings.ContainsAny(arg, `/\.`) {
		return "", &ExitError{Code: 2, Err: fmt.Errorf("%q is not a session id or a prefix of one", arg)}
	}
	prefix := strings.ToLower(arg)
	projects, err := os.ReadDir(l.ProjectsDir())
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	found := map[string][]string{}
	for _, p := range projects {
		if !p.IsDir() {
			continue
		}
		files, _ := os.ReadDir(l.ProjectFolder(p.Name()))
		for _, f := range files {
			id, ok := claudedir.MainFileID(f.Name())
			if ok && strings.HasPrefix(strings.ToLower(id), prefix) {
				found[id] = append(found[id], p.Name())
			}
		}
	}
	switch len(found) {
	case 0:
		return "", &ExitError{Code: 1, Err: fmt.Errorf("no session id starts with %q in %s", arg, l.ProjectsDir())}
	case 1:
		for id := range found {
			return id, nil
		}
	}
	ids := make([]string, 0, len(found))
	for id := range found {
		ids = append(ids, fmt.Sprintf("  %s  (%s)", id, strings.Join(found[id], ", ")))
	}
	sort.Strings(ids)
	return "", &ExitError{Code: 2, Err: fmt.Errorf("%w: %q matches %d sessions:\n%s", ErrAmbiguous, arg, len(found), strings.Join(ids, "\n"))}
}

// LocalSession is a session found in the config folder.
type LocalSession struct {
	ID  string
	Dir string // its project folder
	// Size is the bytes of its transcript files, for the progress bar.
	Size  int64
	Files []jsonl.TranscriptFile
}

// AllLocalSessions lists every session of the store (StoredSessions).
func AllLocalSessions(l jsonl.Layout) ([]LocalSession, error) {
	stored, err := l.StoredSessions()
	out := make([]LocalSession, len(stored))
	for i, st := range stored {
		out[i] = LocalSession{ID: st.ID, Dir: st.ProjectDir}
	}
	return out, err
}

// LogIndexStats logs what a listing did with the index: a corrupt or
// unreadable index file as a warning, the rest at debug level.
func LogIndexStats(log hclog.Logger, l jsonl.Layout, st jsonl.IndexStats) {
	switch {
	case strings.HasPrefix(st.Discarded, "corrupt"), strings.HasPrefix(st.Discarded, "unreadable"):
		log.Warn("sessions index discarded and rebuilt from the transcripts", "index", l.IndexFile(), "reason", st.Discarded)
	case st.Discarded != "":
		log.Debug("sessions index rebuilt", "index", l.IndexFile(), "reason", st.Discarded)
	}
	if st.SaveError != "" {
		// A read-only config folder is no reason to complain on every
		// listing: the answer is right, only slower.
		log.Debug("sessions index not saved; listings stay correct but read changed files again", "index", l.IndexFile(), "error", st.SaveError)
	}
	log.Debug("sessions index", "files", st.Files, "hits", st.Hits, "read", st.Misses, "dropped", st.Dropped, "rebuilt", st.Rebuilt, "saved", st.Saved)
}

// indexLogger is the logger ls uses for index notes.
func (f *Factory) indexLogger(cfg *config.Config) hclog.Logger { return f.Logger(cfg, "scribe.index") }
