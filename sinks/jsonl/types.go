package jsonl

import (
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/transcript"
)

// The types the readers and the changes speak in are the session-store
// contract's (package sessions); these names keep the local store's own
// vocabulary.
type (
	SessionInfo           = sessions.Info
	ListOptions           = sessions.ListOptions
	MessagesOptions       = sessions.MessagesOptions
	MessagesReport        = sessions.MessagesReport
	MalformedLine         = sessions.MalformedLine
	ReadReport            = sessions.ReadReport
	IndexStats            = sessions.IndexStats
	IndexOptions          = sessions.IndexOptions
	SessionStatus         = sessions.Status
	SessionRecord         = sessions.Record
	SessionRecordMetadata = sessions.RecordMetadata
	ManageOptions         = sessions.ManageOptions
	ManageResult          = sessions.ManageResult
	TrashFile             = sessions.TrashFile
	TrashItem             = sessions.TrashItem
	TrashOptions          = sessions.TrashOptions
)

// The statuses.
const (
	StatusActive      = sessions.StatusActive
	StatusInterrupted = sessions.StatusInterrupted
	StatusCompleted   = sessions.StatusCompleted
)

// SessionMessage is one element of getSessionMessages' (or
// getSubagentMessages') result, with the SDK's JSON: its field names, its
// key order, and its omission rules. Message holds the transcript's own
// bytes for the message object.
type SessionMessage = transcript.SessionMessage
