package core

// The contract between the engine and Claude Code's transcript format.
// core knows none of the format's rules: resume is handed them as a
// Format (transcript.Format{}), and these types are what they return.

import (
	"errors"
	"time"
)

// Rebuilt is a conversation rebuilt from one transcript's entries.
type Rebuilt struct {
	// Entries is the conversation from root to leaf.
	Entries []Entry
	// Trailing holds the queued commands a host sends after the leaf.
	Trailing []Entry
	// Leaf is the uuid of the chain's last row ("" for an empty chain).
	Leaf string
}

// Format is what Resume needs of Claude Code's transcript format. core
// knows none of its rules: the host passes transcript.Format{}.
type Format interface {
	// Rebuild rebuilds the conversation of one file's entries, in file
	// order, as Claude Code reads it back (sidechain selects a subagent
	// file's rule).
	Rebuild(entries []Entry, sidechain bool) Rebuilt
	// Repair classifies how a rebuilt conversation (rows in chain order,
	// root first) ended and builds the rows that repair it; it never
	// changes conv.
	Repair(conv []Entry, opt RecoveryOptions) Recovery
	// Validate checks a conversation against the model API's rules and
	// returns every violation in row order.
	Validate(conv []Entry) []Violation
}

// ErrNoFormat is returned by Resume when ResumeOptions.Format is nil.
var ErrNoFormat = errors.New("resume: ResumeOptions.Format is not set")

// RecoveryOptions configures Format.Repair (transcript.ClassifyAndRepair).
type RecoveryOptions struct {
	// Now is the time the repairs are stamped with and the age of the
	// interruption is measured at. Zero means time.Now().
	Now time.Time
	// MaxAge is how old an interrupted turn may be and still be continued;
	// 0 means no limit. Claude Code uses 6h. The age runs from the timestamp
	// of the last row (synthetic results of an earlier resume not counted);
	// a conversation without a readable timestamp counts as recent. An older
	// turn still gets its synthetic tool results, but no continue prompt.
	MaxAge time.Duration
	// ContinueText replaces the format's continue prompt
	// (transcript.DefaultContinueText) when not empty.
	ContinueText string
	// SessionID and CWD are stamped on the repairs; empty means the value
	// of the conversation's last row that has one. userType, entrypoint,
	// version, gitBranch and slug are copied the same way, and isSidechain
	// and agentId from the last row.
	SessionID, CWD string
	// Leaf is the uuid the first repair hangs from. Empty means the last
	// row of the conversation. Pass the rebuilt Leaf when the conversation comes
	// from a Rebuild: the split-assistant repair can place off-chain rows
	// after the leaf.
	Leaf string
	// NewUUID makes the repairs' uuids. Nil means a random (version 4) uuid.
	NewUUID func() string
}

// Repair is one row to append.
type Repair struct {
	// Kind is transcript.RepairToolResult or transcript.RepairContinue.
	Kind string
	// Entry is the complete transcript line, parsed.
	Entry Entry
	// ToolUseID is the tool call a synthetic tool result answers.
	ToolUseID string
}

// Recovery is the verdict of Format.Repair (transcript.ClassifyAndRepair).
type Recovery struct {
	// Class says how the transcript ended.
	Class Interruption
	// Repairs are the rows to append, in order: each one's parentUuid is the
	// previous one's uuid, the first one's the conversation's leaf.
	Repairs []Repair
	// Reason says why, for logs and for the user.
	Reason string
	// PromptUUID is the uuid of the prompt the next turn answers: the
	// unanswered prompt of an interrupted_prompt, or the continue prompt
	// among the repairs. Empty otherwise.
	PromptUUID string
	// Unrepaired lists tool calls of earlier turns that have no result.
	// Appending cannot fix them (the API wants a result in the very next
	// message), and a result appended at the end would make a finished
	// conversation look like an interrupted turn; Format.Validate
	// reports them.
	Unrepaired []string
}

// Violation is a place where a conversation breaks a rule of the model API
// (Format.Validate, transcript.ValidateConversation).
type Violation struct {
	// Index is the row's position in the conversation, UUID its uuid.
	Index int
	UUID  string
	// Rule is one of transcript's Rule constants.
	Rule string
	// Detail says what is wrong, naming the tool call.
	Detail string
}

// Interruption classifies how a transcript ended: the class a resume's
// Format.Repair finds (transcript.ClassifyAndRepair), recorded in the
// lifecycle's TurnInterrupted and SessionResumed.
type Interruption string

// The classes of an Interruption.
const (
	// InterruptionNone: the last turn finished (or the user stopped it).
	InterruptionNone Interruption = "none"
	// InterruptedPrompt: the last message is a user prompt nobody answered;
	// the host offers it again.
	InterruptedPrompt Interruption = "interrupted_prompt"
	// InterruptedTurn: the turn was cut off between tool calls; the host
	// continues it with a synthetic prompt.
	InterruptedTurn Interruption = "interrupted_turn"
)
