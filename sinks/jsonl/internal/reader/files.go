package reader

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/e0dc0000/scribe/claudedir"
)

// SessionFile is one transcript of a session: its main file, or one of
// its subagents' (AgentID set).
type SessionFile struct {
	Path      string
	Project   string // the project folder's name
	SessionID string
	AgentID   string
	Size      int64
	ModTime   time.Time
	Inode     uint64
}

// SessionFiles lists every transcript of every project folder (or of the
// one named by project): each session's main file and its subagents'.
func (l Layout) SessionFiles(ctx context.Context, project string) ([]SessionFile, error) {
	var out []SessionFile
	err := l.EachTranscriptIn(project, func(folder, dir, id string, fi os.FileInfo, hasFolder bool) error {
		main := dir + string(filepath.Separator) + id + claudedir.TranscriptExt // MainFile, without Join's cleaning
		out = append(out, sessionFile(main, folder, id, "", fi))
		if !hasFolder { // a session without a folder has no subagents to look for
			return nil
		}
		agents, err := l.walkAgents(ctx, main, "")
		if err != nil {
			return err
		}
		for _, a := range agents {
			if afi, err := os.Lstat(a.Path); err == nil {
				out = append(out, sessionFile(a.Path, folder, id, a.ID, afi))
			}
		}
		return nil
	})
	return out, err
}

func sessionFile(path, folder, id, agent string, fi os.FileInfo) SessionFile {
	f := SessionFile{Path: path, Project: folder, SessionID: id, AgentID: agent, Size: fi.Size(), ModTime: fi.ModTime()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		f.Inode = st.Ino
	}
	return f
}

// SearchIndexFile is where scribe's full-text index of the sessions lives
// (a cache, rebuilt from the transcripts whenever in doubt).
func (l Layout) SearchIndexFile() string {
	return filepath.Join(l.ConfigDir, "scribe", "index", "search.db")
}
