package ui

import (
	"context"
	"encoding/json"
	"strings"
	"sync"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/sessions"
)

// Redact replaces the secrets of a JSON value (a line, a message, a
// listing entry) by markers, keeping it JSON; the redact processor's
// Redactor.Redact is one.
type Redact func([]byte) []byte

// shareStore is what a share link reads: one session of a tenant's store
// (or one message of it), every string redacted, read only. Any other
// session does not exist for it, and neither do the session's raw
// transcript and lifecycle records.
type shareStore struct {
	st sessions.Store
	// id is the session, message the only message shown ("" for all).
	id, message string

	mu     sync.Mutex // the redactor remembers the secrets it saw
	redact Redact
}

var _ sessions.Store = (*shareStore)(nil)

func newShareStore(st sessions.Store, sh Share, redact Redact) *shareStore {
	return &shareStore{st: st, id: strings.ToLower(sh.Session), message: sh.Message, redact: redact}
}

func (s *shareStore) Name() string  { return "share" }
func (s *shareStore) Where() string { return "a share link" }

// mine checks that id is the shared session.
func (s *shareStore) mine(id string) error {
	if strings.ToLower(id) != s.id {
		return sessions.ErrNotFound
	}
	return nil
}

// scrub redacts v through its JSON.
func scrub[T any](s *shareStore, v *T) (*T, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	b = s.redact(b)
	s.mu.Unlock()
	var out T
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func (s *shareStore) Resolve(_ context.Context, arg string) (string, error) {
	if err := s.mine(arg); err != nil {
		return "", err
	}
	return s.id, nil
}

func (s *shareStore) Info(ctx context.Context, id string) (*sessions.Info, error) {
	if err := s.mine(id); err != nil {
		return nil, err
	}
	in, err := s.st.Info(ctx, s.id)
	if err != nil || in == nil {
		return nil, err
	}
	return scrub(s, in)
}

func (s *shareStore) List(ctx context.Context, _ sessions.ListOptions) ([]sessions.Info, error) {
	in, err := s.Info(ctx, s.id)
	if err != nil || in == nil {
		return nil, err
	}
	return []sessions.Info{*in}, nil
}

func (s *shareStore) Records(ctx context.Context, opt sessions.ListOptions) ([]sessions.Record, error) {
	infos, err := s.List(ctx, opt)
	if err != nil || len(infos) == 0 {
		return nil, err
	}
	return []sessions.Record{{ID: s.id, Info: infos[0]}}, nil
}

func (s *shareStore) Messages(ctx context.Context, id string, opt sessions.MessagesOptions) ([]sessions.Message, *sessions.MessagesReport, error) {
	if err := s.mine(id); err != nil {
		return nil, nil, err
	}
	msgs, rep, err := s.st.Messages(ctx, s.id, opt)
	if err != nil {
		return nil, nil, err
	}
	if s.message != "" {
		var one []sessions.Message
		for _, m := range msgs {
			if m.UUID == s.message {
				one = append(one, m)
			}
		}
		msgs = one
	}
	out, err := s.scrubAll(msgs)
	return out, rep, err
}

// scrubAll redacts messages.
func (s *shareStore) scrubAll(msgs []sessions.Message) ([]sessions.Message, error) {
	out := make([]sessions.Message, 0, len(msgs))
	for i := range msgs {
		m, err := scrub(s, &msgs[i])
		if err != nil {
			return nil, err
		}
		out = append(out, *m)
	}
	return out, nil
}

// Subagents are the session's when the whole session is shared; a
// message alone shares none.
func (s *shareStore) Subagents(ctx context.Context, id string) ([]string, error) {
	if err := s.mine(id); err != nil || s.message != "" {
		return nil, err
	}
	return s.st.Subagents(ctx, s.id)
}

func (s *shareStore) SubagentMessages(ctx context.Context, id, agent string, opt sessions.MessagesOptions) ([]sessions.Message, *sessions.MessagesReport, error) {
	if err := s.mine(id); err != nil {
		return nil, nil, err
	}
	if s.message != "" {
		return nil, nil, sessions.ErrNotFound
	}
	msgs, rep, err := s.st.SubagentMessages(ctx, s.id, agent, opt)
	if err != nil {
		return nil, nil, err
	}
	out, err := s.scrubAll(msgs)
	return out, rep, err
}

// Transcript is not shared: a link shows messages, redacted, not the
// lines as stored.
func (s *shareStore) Transcript(context.Context, string) (*sessions.Transcript, error) {
	return nil, sessions.Unsupported(s, "hand out a transcript", "a share link shows messages only")
}

func (s *shareStore) AgentTranscript(context.Context, string, string) (*sessions.Transcript, error) {
	return nil, sessions.Unsupported(s, "hand out a transcript", "a share link shows messages only")
}

// Lifecycle is not shared.
func (s *shareStore) Lifecycle(context.Context, string) ([]core.Entry, error) { return nil, nil }

// Close closes the tenant's store (the share link's own).
func (s *shareStore) Close(ctx context.Context) error { return s.st.Close(ctx) }
