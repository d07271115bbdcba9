// Package fork forks a session: the rules of the Claude Agent SDK's
// forkSession (@anthropic-ai/claude-agent-sdk 0.3.337), written anew from
// its shipped code and checked against it by sinks/jsonl's compatibility
// tests.
//
// The source is read as the SDK's loader reads it: every line that parses
// as an object, in file order. Rows of type user, assistant, attachment,
// system and progress with a string uuid form the transcript; the other
// lines are per-session metadata, of which only a few kinds are carried.
//
// The new file, in order:
//
//	history-suppression        if the source has one
//	hybrid-organization ...    one per organization named in the source
//	session-owner              the first restricted owner of the source
//	isolation-latch            side "connectors", when the source has one
//	                           with a truthy side other than "web"
//	api-request-route ...      one per distinct route the source records
//	                           (providers and credentials normalised), else
//	                           the "unrecorded" one: every fork has one
//	the transcript rows        sidechain and progress rows left out
//	content-replacement        all of the source's replacements, in one row
//	atis-latch, tools-used     the source's last one
//	data-flow-incomplete, data-flow-records, derived-from
//	relocated                  the source's last one
//	custom-title               the fork's title, with uuid and timestamp
//
// Each transcript row keeps its keys, their order and their bytes; the
// fork edits it the way a JavaScript object spread does: a key that is set
// keeps its place, a new key goes at the end, and a key set to undefined
// disappears. Lines are written back compactly, with keys quoted the way
// JSON.stringify quotes them; nested values that are not edited keep their
// bytes.
package fork

import (
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/transcript/internal/jsjson"
	"github.com/google/uuid"
)

// Fork errors.
var (
	// ErrNoMessages is returned when the source has no main-chain
	// message to copy (the SDK's "has no messages to fork").
	ErrNoMessages = errors.New("no messages to fork")
	// ErrUnsupported is returned for sources scribe cannot fork the way
	// the SDK does: data-flow records (whose merge rules scribe does not
	// implement; dropping them would lose provenance), and compact
	// boundaries the SDK itself fails on.
	ErrUnsupported = errors.New("cannot fork")
)

// Options tune Fork.
type Options struct {
	// NewSessionID is the fork's session id; "" draws one with NewUUID.
	NewSessionID string
	// UpTo cuts the fork at this message uuid, inclusive ("" copies the
	// whole conversation). A uuid that names no row is core.ErrMessageNotFound.
	// As in the SDK, a queued command's source_uuid also names its row.
	UpTo string
	// Title is the fork's custom title, trimmed. "" gives
	// "<source title> (fork)", where the source title is the SDK's:
	// custom-title ‖ ai-title ‖ first prompt ‖ "Forked session" (see
	// SourceTitle).
	Title string
	// KeepUUIDs forks the way Claude Code's /branch does: rows keep their
	// uuids (and timestamps); each row's parentUuid is re-linked to the
	// nearest kept row above it (through progress rows, as in the SDK
	// fork); sessionId is replaced, isSidechain set to false, sessionKind,
	// entrypointInherited and nestedSession removed (Claude Code 2.1.337's
	// /branch clears the last two), requestSessionId and forkedFrom added. Everything else on the
	// row is left as it is. The rows chosen and the metadata carried are
	// those of the SDK fork.
	KeepUUIDs bool
	// Now is the fork time: the SDK stamps the last copied row and the
	// added metadata rows with it. Zero means time.Now().
	Now time.Time
	// NewUUID draws fresh uuids (rows, session id, metadata rows), in the
	// SDK's order. nil means uuid.NewString.
	NewUUID func() string
	// SourceTitle, when set and Title is empty, gives the source's title.
	// A store sets it to the function SourceTitle over the source file's
	// bytes and its custom-title.json sidecar. nil means SourceTitle over
	// the source entries' lines, as if they were the whole file, with no
	// sidecar.
	SourceTitle func() string
}

// Result is a fork's new session.
type Result struct {
	// SessionID is the fork's session id.
	SessionID string
	// Entries are the new file's lines in order, each Raw in Claude Code's
	// key order.
	Entries []core.Entry
}

// Fork copies a session the way the SDK's forkSession does. source is the
// source file's entries in file order; sourceSessionID is the source's
// session id (the file name's). Fork writes nothing.
//
// The rows copied are the transcript's non-sidechain rows, cut at UpTo
// (see below), without progress rows. Every copied row gets:
//   - a fresh uuid; parentUuid and logicalParentUuid mapped to the fresh
//     uuids (a parent that is a progress row is followed to its own parent;
//     a parent outside the copy becomes null);
//   - sessionId set to the fork's; isSidechain false; teamName,
//     agentName, sessionKind, entrypointInherited, nestedSession, slug,
//     sourceToolAssistantUUID, summarizedTurnPromptUuids,
//     droppedPromptUuids, sentAsUuid, turnAttributionKey and askedToGoOn
//     removed (rowsAheadOfPutBack is kept since 0.3.337);
//   - requestSessionId (assistant rows only: the row's requestSessionId,
//     else its forkedFrom.sessionId, else its sessionId; removed elsewhere)
//     and forkedFrom {sessionId, messageUuid} naming the source row;
//   - its timestamp, except the last row, which gets the fork time;
//   - uuids inside compactMetadata.preservedMessages/preservedSegment,
//     deferred_tools_record announcements, attachment_answer.rowUuid,
//     blocked_prompts_withdrawn.prompts/rest and queued-command source_uuid
//     mapped too; model_refusal_fallback rows get neutralizedByFork:true.
//
// With UpTo, the rows are those up to the named one in file order, less:
// compact boundaries (and what follows them) after the last user or
// assistant row of the cut; and the rows of branches that a compact
// boundary cut off from the conversation ending at the cut. Plugin state
// rows after the cut (system, content "", pluginRow.name "state:kept")
// that hang off the kept chain are added, parented on the last row.
func Fork(source []core.Entry, sourceSessionID string, opt Options) (Result, error) {
	f := &forker{src: sourceSessionID, opt: opt, flows: map[string]*dataFlow{}, uncovered: map[string]bool{}}
	f.newUUID = opt.NewUUID
	if f.newUUID == nil {
		f.newUUID = uuid.NewString
	}
	now := opt.Now
	if now.IsZero() {
		now = time.Now()
	}
	f.now = isoTime(now)
	for i := range source {
		raw := source[i].Raw
		if !utf8.Valid(raw) {
			// The SDK decodes the file as UTF-8 with replacement characters.
			raw = lossyUTF8(raw)
		}
		obj, ok := jsjson.Parse(raw)
		if !ok {
			continue
		}
		if err := f.take(obj); err != nil {
			return Result{}, err
		}
	}
	lines, err := f.fork(source)
	if err != nil {
		return Result{}, err
	}
	res := Result{SessionID: f.sid, Entries: make([]core.Entry, 0, len(lines))}
	for _, l := range lines {
		e, err := core.ParseEntryOwned(l)
		if err != nil {
			return Result{}, fmt.Errorf("fork: built a bad line: %w", err)
		}
		res.Entries = append(res.Entries, e)
	}
	return res, nil
}

// SourceTitle is the SDK's title of a session being forked, from the
// bytes of its file and its custom-title.json sidecar title (already
// cleaned; "" when there is none): the last custom-title of the file's
// last 64 KiB (even an empty one), else the sidecar's, else the last
// custom-title of the first 64 KiB; then the last ai-title of the tail, then
// of the head; then the first prompt of the head. "" when none is found.
func SourceTitle(file []byte, sidecar string) string {
	n := len(file)
	head := lossyUTF8(file[:min(n, titleWindow)])
	tail := lossyUTF8(file[max(0, n-titleWindow):])
	var t string
	if c, ok := lastTyped(tail, "customTitle", "custom-title"); ok {
		t = c
	} else if sidecar != "" {
		t = sidecar
	} else {
		t, _ = lastTyped(head, "customTitle", "custom-title")
	}
	if t != "" {
		return t
	}
	if v, _ := lastTyped(tail, "aiTitle", "ai-title"); v != "" {
		return v
	}
	if v, _ := lastTyped(head, "aiTitle", "ai-title"); v != "" {
		return v
	}
	return firstPrompt(head)
}

// titleWindow is the size of the head and tail the SDK reads for titles.
const titleWindow = 64 << 10
