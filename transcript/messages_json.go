package transcript

import (
	"bytes"
	"encoding/json"
)

// AppendJSON appends m as encoding/json marshals it with HTML escaping off,
// up to space inside its raw values (session_id, message, timestamp,
// origin), which encoding/json would compact: a reader that indents the
// result (jsonv.AppendIndent) prints what an Encoder with SetIndent prints.
// It is the show command's fast path for long conversations; the field
// order and omission rules are SessionMessage's tags.
func (m *SessionMessage) AppendJSON(dst []byte) ([]byte, error) {
	dst = append(dst, `{"type":`...)
	dst = appendGoString(dst, m.Type)
	dst = append(dst, `,"uuid":`...)
	dst = appendGoString(dst, m.UUID)
	dst = appendRaw(dst, `,"session_id":`, m.SessionID)
	dst = appendRaw(dst, `,"message":`, m.Message)
	dst = append(dst, `,"parent_tool_use_id":`...)
	dst = appendNullable(dst, m.ParentToolUseID)
	dst = append(dst, `,"parent_agent_id":`...)
	dst = appendNullable(dst, m.ParentAgentID)
	dst = appendFlag(dst, `,"interruptedByShutdown":true`, m.InterruptedByShutdown)
	if m.ToolDenialUnanswered != "" {
		dst = append(dst, `,"toolDenialUnanswered":`...)
		dst = appendGoString(dst, m.ToolDenialUnanswered)
	}
	if len(m.ToolResultMeta) > 0 {
		b, err := marshalNoHTML(m.ToolResultMeta)
		if err != nil {
			return nil, err
		}
		dst = append(dst, `,"tool_result_meta":`...)
		dst = append(dst, b...)
	}
	if m.NamesPlanFile != "" {
		dst = append(dst, `,"names_plan_file":`...)
		dst = appendGoString(dst, m.NamesPlanFile)
	}
	dst = appendFlag(dst, `,"isCompactSummary":true`, m.IsCompactSummary)
	dst = appendFlag(dst, `,"is_meta":true`, m.IsMeta)
	dst = appendFlag(dst, `,"isQueuedCommand":true`, m.IsQueuedCommand)
	dst = appendFlag(dst, `,"resultEndsInWaitingNote":true`, m.ResultEndsInWaitingNote)
	dst = appendFlag(dst, `,"isCompletedLocalCommand":true`, m.IsCompletedLocalCommand)
	dst = appendFlag(dst, `,"noCommandRan":true`, m.NoCommandRan)
	dst = appendRaw(dst, `,"timestamp":`, m.Timestamp)
	dst = appendRaw(dst, `,"origin":`, m.Origin)
	return append(dst, '}'), nil
}

func appendRaw(dst []byte, key string, v json.RawMessage) []byte {
	if len(v) == 0 {
		return dst
	}
	return append(append(dst, key...), v...)
}

func appendFlag(dst []byte, member string, set bool) []byte {
	if set {
		dst = append(dst, member...)
	}
	return dst
}

func appendNullable(dst []byte, s *string) []byte {
	if s == nil {
		return append(dst, "null"...)
	}
	return appendGoString(dst, *s)
}

// appendGoString appends s as encoding/json quotes it with HTML escaping
// off: plain printable ASCII directly, anything else through encoding/json.
func appendGoString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			b, _ := marshalNoHTML(s) // a string always marshals
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

func marshalNoHTML(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
