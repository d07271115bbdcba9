package admin

// Disk use per project and per session: the transcript, subagents,
// tool-result files and sidecars apart, archived sessions and the trash
// apart, and the bytes forks duplicate: the lines of a fork whose entry is
// also in its source, by uuid (a /branch fork keeps the uuids) or by
// forkedFrom.messageUuid (an SDK fork gives fresh uuids and names the
// original in forkedFrom).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/listing"
	"github.com/e0dc0000/scribe/transcript"
)

// DUSession is one session's disk use in one project folder.
type DUSession struct {
	SessionID   string `json:"sessionId"`
	Project     string `json:"project"`
	Transcript  int64  `json:"transcript"`
	Subagents   int64  `json:"subagents"`
	ToolResults int64  `json:"toolResults"`
	Sidecars    int64  `json:"sidecars"`
	Total       int64  `json:"total"`
	Archived    bool   `json:"archived,omitempty"`
	// ForkOf is the source session of a fork; ForkDuplicate the bytes of
	// its lines whose entries its source holds too.
	ForkOf        string `json:"forkOf,omitempty"`
	ForkDuplicate int64  `json:"forkDuplicate,omitempty"`
}

// DUProject sums a project folder's sessions.
type DUProject struct {
	Project     string `json:"project"`
	Sessions    int    `json:"sessions"`
	Transcript  int64  `json:"transcript"`
	Subagents   int64  `json:"subagents"`
	ToolResults int64  `json:"toolResults"`
	Sidecars    int64  `json:"sidecars"`
	Total       int64  `json:"total"`
	// Archived is the part of Total in archived sessions.
	Archived      int64 `json:"archived"`
	ForkDuplicate int64 `json:"forkDuplicate"`
}

// DUReport is the disk use of a config folder.
type DUReport struct {
	Projects []DUProject `json:"projects"`
	Sessions []DUSession `json:"sessions"`
	// Total is every session's bytes (archived ones included); Archived
	// the part in archived sessions; Trash the trash, not in Total.
	Total         int64 `json:"total"`
	Archived      int64 `json:"archived"`
	ForkDuplicate int64 `json:"forkDuplicate"`
	Trash         int64 `json:"trash"`
	TrashItems    int   `json:"trashItems"`
	// StaleStaging is the bytes in StaleStagingFolders staging folders of
	// imports that died (not in Total; the next import or gc removes them).
	StaleStaging        int64 `json:"staleStaging"`
	StaleStagingFolders int   `json:"staleStagingFolders"`
}

// DiskUsage measures every session of every project folder (or of the
// one project folder named by project).
func (l Layout) DiskUsage(ctx context.Context, project string, progress func(done, total int)) (DUReport, error) {
	var rep DUReport
	var all []DUSession
	err := l.EachTranscript(project, func(folder, dir, id string, _ os.FileInfo) error {
		s, err := duSession(dir, folder, id)
		all = append(all, s)
		return err
	})
	if err != nil {
		return rep, fmt.Errorf("du: %w", err)
	}
	if err := l.duForks(ctx, all, progress); err != nil {
		return rep, err
	}
	byProject := map[string]*DUProject{}
	for _, s := range all {
		p := byProject[s.Project]
		if p == nil {
			p = &DUProject{Project: s.Project}
			byProject[s.Project] = p
		}
		p.Sessions++
		p.Transcript += s.Transcript
		p.Subagents += s.Subagents
		p.ToolResults += s.ToolResults
		p.Sidecars += s.Sidecars
		p.Total += s.Total
		p.ForkDuplicate += s.ForkDuplicate
		if s.Archived {
			p.Archived += s.Total
		}
	}
	for _, p := range byProject {
		rep.Projects = append(rep.Projects, *p)
		rep.Total += p.Total
		rep.Archived += p.Archived
		rep.ForkDuplicate += p.ForkDuplicate
	}
	sort.Slice(rep.Projects, func(i, j int) bool { return rep.Projects[i].Total > rep.Projects[j].Total })
	sort.Slice(all, func(i, j int) bool { return all[i].Total > all[j].Total })
	rep.Sessions = all
	items, _, err := l.ListTrash()
	if err != nil {
		return rep, fmt.Errorf("du: %w", err)
	}
	for _, it := range items {
		rep.Trash += it.Bytes
	}
	rep.TrashItems = len(items)
	stale, err := l.StaleStagings(time.Now())
	if err != nil {
		return rep, fmt.Errorf("du: %w", err)
	}
	for _, st := range stale {
		rep.StaleStaging += st.Bytes
	}
	rep.StaleStagingFolders = len(stale)
	return rep, nil
}

// duSession sorts a session's files into their kinds.
func duSession(dir, folder, id string) (DUSession, error) {
	s := DUSession{SessionID: id, Project: folder}
	names, err := sessionEntries(dir, id)
	if err != nil {
		return s, err
	}
	for _, name := range names {
		root := filepath.Join(dir, name)
		err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			n := fi.Size()
			rel, _ := filepath.Rel(dir, p)
			switch {
			case rel == id+".jsonl":
				s.Transcript += n
			case strings.HasPrefix(rel, filepath.Join(id, "subagents")+string(filepath.Separator)):
				s.Subagents += n
			case strings.HasPrefix(rel, filepath.Join(id, "tool-results")+string(filepath.Separator)):
				s.ToolResults += n
			default:
				s.Sidecars += n
			}
			s.Total += n
			return nil
		})
		if err != nil {
			return s, err
		}
	}
	if info, ok, _ := listing.ReadInfo(claudedir.MainFile(dir, id), ""); ok && info.Archived != nil && *info.Archived {
		s.Archived = true
	}
	return s, nil
}

// duForks finds the forks among the sessions (a forkedFrom in the first
// 64 KiB) and measures what they duplicate of their sources.
func (l Layout) duForks(ctx context.Context, all []DUSession, progress func(done, total int)) error {
	where := map[string]string{}
	for _, s := range all {
		where[s.SessionID] = l.ProjectFolder(s.Project)
	}
	for i := range all {
		if err := ctx.Err(); err != nil {
			return err
		}
		s := &all[i]
		path := claudedir.MainFile(where[s.SessionID], s.SessionID)
		src := forkSourceOf(path)
		if dir, ok := where[src]; ok && src != s.SessionID {
			s.ForkOf = src
			uuids, err := lineUUIDs(claudedir.MainFile(dir, src))
			if err != nil {
				return fmt.Errorf("du: %w", err)
			}
			if s.ForkDuplicate, err = sharedBytes(path, uuids); err != nil {
				return fmt.Errorf("du: %w", err)
			}
		}
		if progress != nil {
			progress(i+1, len(all))
		}
	}
	return nil
}

type duLine struct {
	UUID       string `json:"uuid"`
	ForkedFrom *struct {
		SessionID   string `json:"sessionId"`
		MessageUUID string `json:"messageUuid"`
	} `json:"forkedFrom"`
}

// forkSourceOf is the forkedFrom.sessionId of the first line of the head
// window that has one.
func forkSourceOf(path string) string {
	for _, line := range headLines(path) {
		if !bytes.Contains(line, []byte(`"forkedFrom"`)) {
			continue
		}
		var v duLine
		if json.Unmarshal(line, &v) == nil && v.ForkedFrom != nil && claudedir.IsSessionID(v.ForkedFrom.SessionID) {
			return v.ForkedFrom.SessionID
		}
	}
	return ""
}

// headLines is the lines of a file's first 64 KiB (the last may be cut);
// none when it cannot be read.
func headLines(path string) [][]byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	buf := make([]byte, claudedir.ListWindow)
	n, _ := f.ReadAt(buf, 0)
	return bytes.Split(buf[:n], []byte{'\n'})
}

func lineUUIDs(path string) (map[string]bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	set := map[string]bool{}
	err = transcript.EachLine(f, func(line []byte, _ bool) {
		var v duLine
		if bytes.Contains(line, []byte(`"uuid"`)) && json.Unmarshal(line, &v) == nil && v.UUID != "" {
			set[v.UUID] = true
		}
	})
	return set, err
}

// sharedBytes is the bytes (newlines included) of the lines of path whose
// uuid, or forkedFrom.messageUuid, is in uuids.
func sharedBytes(path string, uuids map[string]bool) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var n int64
	err = transcript.EachLine(f, func(line []byte, terminated bool) {
		var v duLine
		if !bytes.Contains(line, []byte(`"uuid"`)) || json.Unmarshal(line, &v) != nil {
			return
		}
		if uuids[v.UUID] || (v.ForkedFrom != nil && uuids[v.ForkedFrom.MessageUUID]) {
			n += int64(len(line))
			if terminated {
				n++
			}
		}
	})
	return n, err
}
