package layout

import (
	"os"
	"sync"
	"syscall"
	"time"
)

// AgentFile is one subagent transcript of a session: its agent id and
// path.
type AgentFile struct{ ID, Path string }

// WalkCache keeps the walks of sessions' subagents folders (every
// agent-<id>.jsonl under <session>/subagents, in the order the SDK walks
// them), each with the identity and modification time of every folder it
// read: a walk is used again only while every one of those folders is as
// it was (a file added, removed or renamed in a folder changes its
// time). A walk is not kept when a folder changed less than RacyWindow
// before it was read, since a change within the file system's clock tick
// would not show. A store that reads the same session's subagents again
// and again (the web viewer: one lookup per subagent call shown, each a
// listing of a folder of hundreds of files) keeps one; nil keeps none.
type WalkCache struct {
	mu    sync.Mutex
	walks map[string]cachedWalk
}

// RacyWindow is how recently a folder may have changed for a walk of it
// to be kept.
const RacyWindow = time.Second

// maxWalks bounds the walks kept; beyond it they are all dropped.
const maxWalks = 1024

// DirStamp is a folder a walk read, as it was.
type DirStamp struct {
	Path  string
	Ino   uint64
	Mtime int64 // nanoseconds
}

type cachedWalk struct {
	dirs  []DirStamp
	files []AgentFile
}

// NewWalkCache returns an empty cache.
func NewWalkCache() *WalkCache { return &WalkCache{walks: map[string]cachedWalk{}} }

// StampDir is the folder's stamp, and whether a walk that reads it now
// may be kept (it exists and did not change within RacyWindow).
func StampDir(path string, now time.Time) (DirStamp, bool) {
	fi, err := os.Stat(path)
	if err != nil || !fi.IsDir() {
		return DirStamp{}, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return DirStamp{}, false
	}
	s := DirStamp{Path: path, Ino: st.Ino, Mtime: fi.ModTime().UnixNano()}
	return s, now.Sub(fi.ModTime()) >= RacyWindow
}

// Get is the walk kept for top, while every folder it read is unchanged.
func (c *WalkCache) Get(top string) ([]AgentFile, bool) {
	c.mu.Lock()
	w, ok := c.walks[top]
	c.mu.Unlock()
	if !ok {
		return nil, false
	}
	now := time.Now()
	for _, d := range w.dirs {
		s, _ := StampDir(d.Path, now)
		if s != d {
			c.mu.Lock()
			delete(c.walks, top)
			c.mu.Unlock()
			return nil, false
		}
	}
	return w.files, true
}

// Put keeps the walk of top (the caller keeps only walks whose folders
// were all stamped as keepable before they were read).
func (c *WalkCache) Put(top string, dirs []DirStamp, files []AgentFile) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.walks) >= maxWalks {
		clear(c.walks)
	}
	c.walks[top] = cachedWalk{dirs: dirs, files: files}
}
