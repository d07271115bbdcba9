// Package wire is the JSON of scribe serve's HTTP API that the server
// (package server) and its Go clients (package events: the events sink and
// the Client behind push, pull, ls --remote and the cloud loader) share:
// each request and answer both sides read or write is defined here once.
// The routes are listed in server/http.go.
package wire

import (
	"encoding/json"
	"time"
)

// Event is one element of an events batch, the body of
//
//	POST /v1/code/sessions/{id}/events   {"events":[<Event>, …]}
//
// An entry (Type its type, Payload its line byte for byte), the subagent it
// belongs to ("" for the main transcript) and, for an entry without a
// uuid, an optional idempotency key the server uses instead of a hash of
// its bytes; or, with Type "state", a state to set (idle, running,
// requires_action).
type Event struct {
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload"`
	AgentID string          `json:"agent_id"`
	EventID string          `json:"event_id"`
	State   string          `json:"state"`
}

// AppendEvent appends ev as the clients send it: type, payload byte for
// byte, agent_id and event_id only when set (a client sends no state).
func AppendEvent(buf []byte, ev *Event) []byte {
	buf = append(buf, `{"type":`...)
	buf = appendString(buf, ev.Type)
	buf = append(buf, `,"payload":`...)
	buf = append(buf, ev.Payload...)
	if ev.AgentID != "" {
		buf = append(buf, `,"agent_id":`...)
		buf = appendString(buf, ev.AgentID)
	}
	if ev.EventID != "" {
		buf = append(buf, `,"event_id":`...)
		buf = appendString(buf, ev.EventID)
	}
	return append(buf, '}')
}

// appendString appends s as encoding/json writes it.
func appendString(buf []byte, s string) []byte {
	b, _ := json.Marshal(s) // a string always marshals
	return append(buf, b...)
}

// EventsResult is the answer to an events batch. Stored counts the entries
// the server stored now, Duplicates the ones it already had (sent earlier,
// by anyone); LastUUID and State are the session's after the batch. (The
// fields are in the order the server has always written them.)
type EventsResult struct {
	Duplicates int    `json:"duplicates"`
	LastUUID   string `json:"last_uuid"`
	State      string `json:"state"`
	Stored     int    `json:"stored"`
}

// HistoryEvent is one row of a history page.
type HistoryEvent struct {
	// Payload is the entry, byte for byte as the server stored it.
	Payload json.RawMessage `json:"payload"`
	// AgentID is the subagent the row belongs to, "" for the main
	// transcript.
	AgentID string `json:"session_agent_id,omitempty"`
}

// HistoryPage is one page of
//
//	GET /v1/code/sessions/{id}/teleport-events?limit=…&cursor=…
//
// NextCursor is null on the last page.
type HistoryPage struct {
	Data       []HistoryEvent `json:"data"`
	NextCursor *string        `json:"next_cursor"`
}

// SessionInfo is one session of GET /v1/sessions.
type SessionInfo struct {
	ID           string    `json:"id"`
	Title        string    `json:"title"`
	Tag          string    `json:"tag"`
	State        string    `json:"state"`
	CreatedAt    time.Time `json:"created_at"`
	LastActivity time.Time `json:"last_activity"`
	Entries      int64     `json:"entries"`
	MainEntries  int64     `json:"main_entries"`
	Subagents    int       `json:"subagents"`
	// ProjectKey and StoreSessionID are the Agent SDK SessionStore key the
	// session holds, if any.
	ProjectKey     string `json:"project_key,omitempty"`
	StoreSessionID string `json:"store_session_id,omitempty"`
}

// SessionList is the answer to GET /v1/sessions?limit=…&id_prefix=…: the
// sessions, most recently active first, and whether the limit left some
// out.
type SessionList struct {
	Data    []SessionInfo `json:"data"`
	HasMore bool          `json:"has_more"`
}

// TrashItem is a session in a tenant's trash on the server (GET /v1/trash
// and the answers of the trash's POST routes): the session as it was
// listed when it went to the trash, with the item's id, when and why.
type TrashItem struct {
	// ID names the item: the time it was trashed (UTC,
	// 20060102T150405.000000000Z) and the session, joined by '-'.
	ID        string    `json:"id"`
	SessionID string    `json:"session_id"`
	TrashedAt time.Time `json:"trashed_at"`
	// Reason is the command that moved it (rm).
	Reason       string    `json:"reason"`
	Title        string    `json:"title"`
	Tag          string    `json:"tag"`
	CreatedAt    time.Time `json:"created_at"`
	LastActivity time.Time `json:"last_activity"`
	Entries      int64     `json:"entries"`
	MainEntries  int64     `json:"main_entries"`
	Subagents    []string  `json:"subagents"`
	// ProjectKey and StoreSessionID are the Agent SDK SessionStore key the
	// session holds, if any.
	ProjectKey     string `json:"project_key,omitempty"`
	StoreSessionID string `json:"store_session_id,omitempty"`
}

// TrashList is the answer to GET /v1/trash (oldest first) and to POST
// /v1/trash/empty (the items emptied, or that would be with dry_run).
type TrashList struct {
	Data []TrashItem `json:"data"`
}

// TrashRequest is the body of the trash's POST routes: /v1/trash moves
// SessionID (with Reason); /v1/trash/restore puts Ref back (an item id, a
// session id, or a unique prefix of either); /v1/trash/empty deletes Ref,
// or else every item trashed more than OlderThanSeconds ago (every item
// with 0), or only lists them with DryRun.
type TrashRequest struct {
	SessionID        string `json:"session_id,omitempty"`
	Reason           string `json:"reason,omitempty"`
	Ref              string `json:"ref,omitempty"`
	OlderThanSeconds int64  `json:"older_than_seconds,omitempty"`
	DryRun           bool   `json:"dry_run,omitempty"`
}
