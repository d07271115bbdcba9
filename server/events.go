package server

// POST /v1/code/sessions/{id}/events: batched v2 events.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/ident"
	"github.com/e0dc0000/scribe/server/wire"
)

// step is a parsed event: an entry to store, or a state to set.
type step struct {
	it    item
	state string
}

// parseEvents parses a batch body.
func parseEvents(body []byte, session string) ([]step, error) {
	body = bytes.TrimSpace(body)
	if steps, ok := parseEventsFast(body, session); ok {
		return steps, nil
	}
	// Anything the fast parser does not take (an error, an unusual shape)
	// is parsed again with encoding/json, which also words the error.
	return parseEventsJSON(body, session)
}

// parseEventsJSON is parseEvents with encoding/json, for a trimmed body.
func parseEventsJSON(body []byte, session string) ([]step, error) {
	var raws []json.RawMessage
	switch {
	case len(body) > 0 && body[0] == '[':
		if err := json.Unmarshal(body, &raws); err != nil {
			return nil, fmt.Errorf("the body is not a JSON array of events: %v", err)
		}
	case len(body) > 0 && body[0] == '{':
		var b struct {
			Events *[]json.RawMessage `json:"events"`
		}
		if err := json.Unmarshal(body, &b); err != nil {
			return nil, fmt.Errorf("the body is not {\"events\":[...]}: %v", err)
		}
		if b.Events == nil {
			return nil, errors.New(`the body has no "events": want {"events":[...]} or a JSON array of entries`)
		}
		raws = *b.Events
	default:
		return nil, errors.New(`want {"events":[...]} or a JSON array of entries`)
	}
	if len(raws) > maxBatchEvents {
		return nil, fmt.Errorf("%d events in one batch; at most %d", len(raws), maxBatchEvents)
	}
	steps := make([]step, 0, len(raws))
	for i, raw := range raws {
		var ev wire.Event
		if err := json.Unmarshal(raw, &ev); err != nil {
			return nil, fmt.Errorf("events[%d]: not an object: %v", i, err)
		}
		st, err := eventStep(i, raw, &ev, session)
		if err != nil {
			return nil, err
		}
		steps = append(steps, st)
	}
	return steps, nil
}

// eventStep turns events[i] (raw, decoded into ev) into a step.
func eventStep(i int, raw []byte, ev *wire.Event, session string) (step, error) {
	hasPayload := len(ev.Payload) > 0 && !bytes.Equal(bytes.TrimSpace(ev.Payload), []byte("null"))
	if ev.Type == "state" {
		st := ev.State
		if st == "" && hasPayload {
			var p struct {
				State string `json:"state"`
			}
			_ = json.Unmarshal(ev.Payload, &p)
			st = p.State
		}
		if !core.State(st).Valid() {
			return step{}, fmt.Errorf("events[%d]: state %q: want idle, running or requires_action", i, truncate(st, 50))
		}
		return step{state: st}, nil
	}
	entry, agent, key := raw, "", ""
	if hasPayload {
		entry, agent, key = ev.Payload, ev.AgentID, ev.EventID
		if agent != "" && !ident.Token(agent, 64) {
			return step{}, fmt.Errorf("events[%d]: agent_id %q: want 1 to 64 of letters, digits, '-' and '_'", i, truncate(agent, 100))
		}
	}
	it, err := parseEntry(entry, session, agent, key)
	if err != nil {
		return step{}, fmt.Errorf("events[%d]: %v", i, err)
	}
	return step{it: it}, nil
}

func (s *Server) postEvents(w http.ResponseWriter, r *http.Request, req request) {
	body, ok := s.readBody(w, r)
	if !ok {
		return
	}
	steps, err := parseEvents(body, req.session)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "%v", err)
		return
	}
	stored, dups := 0, 0
	var meta *sessionMeta
	var pending []item
	flush := func() error {
		if len(pending) == 0 {
			return nil
		}
		res, err := s.st.append(req.ctx, req.tenant, req.session, pending, nil)
		pending = pending[:0]
		if err != nil {
			return err
		}
		stored += res.stored
		dups += res.dups
		s.m.Duplicates.Add(int64(res.dups))
		if res.meta != nil {
			meta = res.meta
		}
		return nil
	}
	for i := range steps {
		if steps[i].state != "" {
			continue
		}
		if steps[i].it, err = s.process(req.ctx, steps[i].it); err != nil {
			writeError(w, http.StatusBadRequest, "invalid_request_error", "events[%d]: %v", i, err)
			return
		}
	}
	for _, st := range steps {
		if st.state == "" {
			pending = append(pending, st.it)
			continue
		}
		if err := flush(); err != nil {
			s.storeError(w, err)
			return
		}
		m, err := s.st.setState(req.ctx, req.tenant, req.session, st.state)
		if err != nil {
			s.storeError(w, err)
			return
		}
		s.m.StateEvents.Add(1)
		meta = m
	}
	if err := flush(); err != nil {
		s.storeError(w, err)
		return
	}
	out := wire.EventsResult{Stored: stored, Duplicates: dups}
	if meta != nil {
		out.LastUUID, out.State = meta.LastUUID, meta.State
	}
	writeJSON(w, http.StatusOK, out)
}
