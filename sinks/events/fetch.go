package events

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/ident"
	"github.com/e0dc0000/scribe/sinks/backend"
)

// FetchedFile is one transcript of a session as the server has it: its
// lines, ready to be a file of the local store.
type FetchedFile struct {
	// Agent is the subagent's id ("" for the main transcript and the
	// sidecar).
	Agent string
	// Meta is a subagent's agent_metadata row (a SessionStore's form of its
	// .meta.json), the last one the server has.
	Meta    *core.Entry
	Data    bytes.Buffer
	Entries int
	UUIDs   map[string]bool
}

func newFetchedFile(agent string) *FetchedFile {
	return &FetchedFile{Agent: agent, UUIDs: map[string]bool{}}
}

// FetchedSession is a session as the server has it, split into the files
// the local store keeps: the main transcript, the sidecar of scribe's
// lifecycle records, and each subagent's transcript.
type FetchedSession struct {
	Main, Side *FetchedFile
	Agents     map[string]*FetchedFile
	Order      []string // agent ids, as first met
	// FirstCWD and AgentCWD are the first cwd of the main conversation and
	// of any subagent: where the project folder is.
	FirstCWD, AgentCWD string
	// LastAt is the latest timestamp of the main transcript's rows: when
	// the session was last active (zero when no row has one).
	LastAt time.Time
	// Filtered counts the internal rows left out (session-owner,
	// data-flow-*, ...), Malformed the rows that are not JSON objects.
	Filtered, Malformed int
}

// Cwd is where the session's project folder is: the main conversation's
// first cwd, else a subagent's ("" when no row says).
func (s *FetchedSession) Cwd() string {
	if s.FirstCWD != "" {
		return s.FirstCWD
	}
	return s.AgentCWD
}

// FetchSession reads a session's rows from the server (its subagents' too with
// subagents), leaving out the internal rows; onRow, when set, hears each
// row's size. A session with no row to keep is core.ErrNotFound.
func (c *Client) FetchSession(ctx context.Context, id string, subagents bool, onRow func(bytes int)) (*FetchedSession, error) {
	s := &FetchedSession{Main: newFetchedFile(""), Side: newFetchedFile(""), Agents: map[string]*FetchedFile{}}
	err := c.History(ctx, id, HistoryQuery{Subagents: subagents}, func(ev HistoryEvent) error {
		if onRow != nil {
			onRow(len(ev.Payload) + 1)
		}
		e, err := core.ParseEntry(ev.Payload)
		if err != nil {
			s.Malformed++
			return nil
		}
		if InternalRow(e.Type) {
			s.Filtered++
			return nil
		}
		s.add(ev.AgentID, e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, a := range s.Order {
		if !ident.Token(a, 64) {
			return nil, fmt.Errorf("the server names subagent %q, which cannot be a file name", a)
		}
	}
	if s.Main.Entries == 0 && len(s.Order) == 0 && s.Side.Entries == 0 {
		return nil, fmt.Errorf("session %s: the server has no rows for it to write (%d internal rows left out): %w", id, s.Filtered, core.ErrNotFound)
	}
	return s, nil
}

// add files one row where the local store keeps it.
func (s *FetchedSession) add(agent string, e core.Entry) {
	f := s.Main
	switch {
	case agent == "" && core.IsLifecycleRecord(e.Type):
		// scribe's own records: the sidecar, as the local store keeps them.
		f = s.Side
	case agent != "":
		if f = s.Agents[agent]; f == nil {
			f = newFetchedFile(agent)
			s.Agents[agent] = f
			s.Order = append(s.Order, agent)
		}
		if e.Type == backend.TypeAgentMetadata {
			f.Meta = &e
			return
		}
		if s.AgentCWD == "" {
			s.AgentCWD = e.CWD
		}
	case s.FirstCWD == "":
		s.FirstCWD = e.CWD
	}
	f.Data.Write(e.Raw)
	f.Data.WriteByte('\n')
	f.Entries++
	if f == s.Main && e.Timestamp != "" {
		if at, err := time.Parse(time.RFC3339Nano, e.Timestamp); err == nil && at.After(s.LastAt) {
			s.LastAt = at
		}
	}
	if e.UUID != "" {
		f.UUIDs[e.UUID] = true
	}
}
