package watch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/durable"
)

// HookEvent is what Claude Code hands a command hook on stdin (the fields
// scribe uses), plus when scribe received it.
type HookEvent struct {
	SessionID           string `json:"session_id"`
	TranscriptPath      string `json:"transcript_path"`
	CWD                 string `json:"cwd"`
	Event               string `json:"hook_event_name"`
	AgentID             string `json:"agent_id,omitempty"`
	AgentType           string `json:"agent_type,omitempty"`
	AgentTranscriptPath string `json:"agent_transcript_path,omitempty"`
	Source              string `json:"source,omitempty"`
	Reason              string `json:"reason,omitempty"`
	Model               string `json:"model,omitempty"`
	Trigger             string `json:"trigger,omitempty"`
	NotificationType    string `json:"notification_type,omitempty"`
	Message             string `json:"message,omitempty"`
	ToolName            string `json:"tool_name,omitempty"`
	// ReceivedAt is set by scribe hook; it stamps the records the event
	// makes, so handling the same event twice stores it once.
	ReceivedAt time.Time `json:"scribe_received_at"`
}

// WriteInbox stores ev in the inbox folder, durably, for the process that
// holds the checkpoints (watch, or the hook itself) to take.
func WriteInbox(dir string, ev HookEvent) (string, error) {
	b, err := json.Marshal(ev)
	if err != nil {
		return "", fmt.Errorf("encode hook event: %w", err)
	}
	name := filepath.Join(dir, fmt.Sprintf("%020d-%d.json", ev.ReceivedAt.UnixNano(), os.Getpid()))
	if err := durable.WriteFile(name, b, 0o600); err != nil {
		return "", fmt.Errorf("store hook event: %w", err)
	}
	return name, nil
}

// inboxExpiry is how long a lifecycle event waits for its transcript.
const inboxExpiry = 24 * time.Hour

type inboxMark struct {
	seq  int64
	path string
}

// takeInbox submits the hook events waiting in the inbox, in the order
// they came; an event whose records belong beside a transcript the sinks
// do not have yet waits for it. Each file is removed once what it made is
// acknowledged.
func (w *Watcher) takeInbox(ctx context.Context) error {
	ents, err := os.ReadDir(w.o.Inbox)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read hook inbox: %w", err)
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		if n := e.Name(); strings.HasSuffix(n, ".json") && !strings.HasPrefix(n, ".") {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	w.inboxWaiting = false
	for _, n := range names {
		path := filepath.Join(w.o.Inbox, n)
		if w.inboxTaken[path] {
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		var ev HookEvent
		if err := json.Unmarshal(b, &ev); err != nil || ev.SessionID == "" {
			w.Stats.Errors.Add(1)
			w.log.Error("hook event unreadable; removed", "path", path, "error", err)
			_ = os.Remove(path)
			continue
		}
		if !w.hookReady(ev) {
			if time.Since(ev.ReceivedAt) > inboxExpiry {
				// Its session never reached the sinks (Claude Code creates
				// the transcript on the first message): nothing to add to.
				w.Stats.Errors.Add(1)
				w.log.Warn("hook event dropped: its session's transcript never reached the sinks", "path", path, "event", ev.Event, "session", ev.SessionID)
				_ = os.Remove(path)
			}
			w.inboxWaiting = true
			continue // tried again at the next retry tick
		}
		if err := w.applyHook(ctx, ev); err != nil {
			return err
		}
		w.Stats.HookEvents.Add(1)
		w.seq++
		w.inboxMarks = append(w.inboxMarks, inboxMark{seq: w.seq, path: path})
		w.inboxTaken[path] = true
	}
	return nil
}

// hookReady reports whether ev's records can go now: state changes
// always; lifecycle records once the session's transcript has reached the
// sinks (the local store keeps them beside it).
func (w *Watcher) hookReady(ev HookEvent) bool {
	switch ev.Event {
	case "UserPromptSubmit", "Stop", "Interrupt", "PermissionRequest", "Notification", "PostToolUse", "SubagentStop":
		return true
	}
	if ev.TranscriptPath == "" {
		return true
	}
	f := w.files[ev.TranscriptPath]
	if f == nil {
		// A transcript watch does not follow, or not yet: wait for it,
		// unless it is outside every root.
		return w.rootOf(ev.TranscriptPath) == ""
	}
	// A user or assistant line went to the sinks before this record: the
	// store has the transcript by the time the record reaches it.
	return f.st.Messages || f.msgs
}

// ackInbox removes the inbox files whose records are acknowledged.
func (w *Watcher) ackInbox(acked int64) {
	n := 0
	for n < len(w.inboxMarks) && w.inboxMarks[n].seq <= acked {
		p := w.inboxMarks[n].path
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			w.log.Warn("hook event not removed from the inbox", "path", p, "error", err)
		}
		delete(w.inboxTaken, p)
		n++
	}
	w.inboxMarks = append(w.inboxMarks[:0], w.inboxMarks[n:]...)
}

// applyHook submits what one hook event means: a state change, or a
// lifecycle record.
func (w *Watcher) applyHook(ctx context.Context, ev HookEvent) error {
	cwd := ev.CWD
	if f := w.files[ev.TranscriptPath]; f != nil && f.st.CWD != "" {
		cwd = f.st.CWD
	}
	meta := core.LifecycleMeta{SessionID: ev.SessionID, CWD: cwd, At: ev.ReceivedAt}
	var d core.LifecycleData
	var to core.State
	switch ev.Event {
	case "UserPromptSubmit", "PostToolUse":
		to = core.StateRunning
	case "PermissionRequest":
		to = core.StateRequiresAction
	case "Notification":
		if !strings.Contains(ev.NotificationType, "permission") {
			return nil
		}
		to = core.StateRequiresAction
	case "Stop":
		to = core.StateIdle
	case "Interrupt":
		// The turn was cut short (Esc, a denied permission, a rewind):
		// the session waits for a prompt again.
		to = core.StateIdle
	case "SessionStart":
		d = core.SessionStart{Model: ev.Model, Source: ev.Source}
	case "SessionEnd":
		d = core.SessionEnd{Reason: core.EndCompleted, Detail: "claude code: " + ev.Reason}
	case "PreCompact":
		d = core.UnknownLifecycle{Event: "compaction_started", Fields: mustJSON(map[string]string{"trigger": ev.Trigger})}
	case "PostCompact":
		d = core.Compaction{Trigger: ev.Trigger}
	default:
		return nil
	}
	if d != nil {
		res, err := w.submitLifecycle(ctx, meta, d)
		if err != nil {
			return fmt.Errorf("record %s of session %s: %w", ev.Event, ev.SessionID, err)
		}
		w.count(res)
		if ev.Event == "SessionEnd" {
			delete(w.states, ev.SessionID) // the checkpoints keep live sessions only
			w.changed = true
		}
		return nil
	}
	from := w.sessionState(ev.SessionID)
	if from == to {
		return nil // PostToolUse while running, a second prompt: no change
	}
	if to == core.StateRunning && ev.Event == "PostToolUse" && from != core.StateRequiresAction {
		return nil
	}
	m, err := core.NewStateMachine(ev.SessionID, from)
	if err != nil {
		return err
	}
	reason := "hook " + ev.Event
	if why := strings.Trim(ev.Source+", "+ev.Reason, ", "); ev.Event == "Interrupt" && why != "" {
		reason += " (" + why + ")"
	}
	c, err := m.Transition(to, reason)
	if err != nil {
		w.Stats.StatesRefused.Add(1)
		w.log.Debug("hook event implies a transition the state machine refuses; not recorded", "session", ev.SessionID, "error", err)
		return nil
	}
	c.At = ev.ReceivedAt
	e, err := c.Entry()
	if err != nil {
		return err
	}
	res, err := w.submit(ctx, e)
	if err != nil {
		return fmt.Errorf("record the state of session %s: %w", ev.SessionID, err)
	}
	w.count(res)
	w.states[ev.SessionID] = to
	w.changed = true
	return nil
}

func (w *Watcher) sessionState(id string) core.State {
	if s, ok := w.states[id]; ok && s.Valid() {
		return s
	}
	return core.StateIdle
}

func (w *Watcher) count(res core.Result) {
	w.Stats.Submitted.Add(1)
	switch res.Status {
	case core.Accepted:
		w.Stats.Accepted.Add(1)
	case core.Duplicate:
		w.Stats.Duplicates.Add(1)
	case core.Rejected:
		w.Stats.Rejected.Add(1)
	default:
		w.Stats.Refused.Add(1)
	}
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}
