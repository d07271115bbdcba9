package jsonl

import (
	"time"

	"github.com/e0dc0000/scribe/sessions"
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

func ixISO(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }
