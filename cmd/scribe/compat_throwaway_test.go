package main_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/e0dc0000/scribe/internal/peer"
)

// fakeRecorder follows the record contract in plain Go (no re-appends).
func fakeRecorder(t *testing.T, configDir string, f *corpusFile, session, cwd string) recordReport {
	data, _ := os.ReadFile(f.abs)
	var rep recordReport
	type out struct {
		sid, agent string
		line       []byte
	}
	var outs []out
	firstCwd := map[string]string{}
	def := session
	if def == "" && len(f.sessionIDs) > 0 {
		def = f.sessionIDs[0]
	}
	for i, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		var o struct {
			SessionID   string `json:"sessionId"`
			Cwd         string `json:"cwd"`
			IsSidechain bool   `json:"isSidechain"`
			AgentID     string `json:"agentId"`
		}
		var m map[string]any
		if json.Unmarshal(line, &m) != nil || m == nil {
			rep.Malformed = append(rep.Malformed, struct {
				File  string `json:"file"`
				Line  int    `json:"line"`
				Error string `json:"error"`
			}{f.abs, i + 1, "bad"})
			continue
		}
		json.Unmarshal(line, &o)
		sid := session
		if sid == "" {
			sid = o.SessionID
		}
		if sid == "" {
			sid = def
		}
		if o.Cwd != "" && firstCwd[sid] == "" {
			firstCwd[sid] = o.Cwd
		}
		ag := ""
		if o.IsSidechain && o.AgentID != "" {
			ag = o.AgentID
		}
		outs = append(outs, out{sid, ag, line})
		rep.Accepted++
	}
	for _, x := range outs {
		proj := ""
		if m, _ := filepath.Glob(filepath.Join(configDir, "projects", "*", x.sid+".jsonl")); len(m) > 0 {
			proj = filepath.Dir(m[0])
		} else if m, _ := filepath.Glob(filepath.Join(configDir, "projects", "*", x.sid)); len(m) > 0 {
			proj = filepath.Dir(m[0])
		} else {
			c := firstCwd[x.sid]
			if c == "" {
				c = cwd
			}
			proj = filepath.Join(configDir, "projects", sanitizeProjectPath(c))
		}
		dst := filepath.Join(proj, x.sid+".jsonl")
		if x.agent != "" {
			dst = filepath.Join(proj, x.sid, "subagents", "agent-"+x.agent+".jsonl")
		}
		os.MkdirAll(filepath.Dir(dst), 0o700)
		fh, err := os.OpenFile(dst, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		fh.Write(append(x.line, '\n'))
		fh.Close()
	}
	return rep
}

func TestThrowawayOriginalVsFake(t *testing.T) {
	p := peer.Find(t)
	c := loadCorpus(t)
	logCorpus(t, c)
	exc := &exceptions{}
	forEachUnit(t, c, func(t *testing.T, u *unit) { compareUnit(t, p, fakeRecorder, u, exc) })
	t.Logf("exceptions: %q", exc.cases)
}
