package transcript

// The conversation rebuild: from the rows of one transcript file, in file
// order, the chain of messages that Claude Code's SDK returns from
// getSessionMessages (main files) and getSubagentMessages (subagent files).
//
// The rules follow the SDK's shipped code (@anthropic-ai/claude-agent-sdk
// 0.3.337), written anew here:
//
//   - Only user, assistant, progress, system and attachment rows with a
//     string uuid take part (user, assistant and attachment in a subagent
//     file). A later row with the same uuid replaces the earlier one but keeps
//     its place in the map's order; the file position used to rank leaves is
//     the last one.
//   - Compact boundaries with compactMetadata.preservedMessages or
//     preservedSegment relink the kept rows to the pre-compact anchor.
//   - The leaf is the latest "terminal" row (no non-progress, non-sidechain
//     row names it as parent) that climbs to a user or assistant row; a
//     fallback takes the newest user/assistant row above any terminal.
//   - The walk from the leaf to the root stops at a missing parent or at a
//     uuid seen twice.
//   - Rows of a split assistant message (same message.id) that are off the
//     chain, and their tool_result rows, are put back after the chain row
//     holding that message id (in subagent files too since 0.3.337, after
//     leaving out cancelled or shutdown-interrupted rows whose results
//     another row gives).
//   - Queued-command attachments hanging below the leaf are appended.
//
// JSON values keep JavaScript's meaning: a flag is "set" when the SDK's
// test would be truthy, equality is strict equality, and so on.

import (
	"bytes"
	"runtime"
	"sync"

	"github.com/e0dc0000/scribe/core"
)

// ChainOptions selects the rebuild rule.
type ChainOptions struct {
	// Sidechain selects the subagent rule (getSubagentMessages): only user,
	// assistant and attachment rows count, the chain ends at the last user or
	// assistant row in the file, and there is no compact relinking; the
	// split-assistant repair runs without the rows a retry made redundant
	// (see sideOrder).
	Sidechain bool
}

// ChainBreak names a row and the parent it points at.
type ChainBreak struct{ UUID, Parent string }

// Chain is a rebuilt conversation.
type Chain struct {
	// Entries is the conversation from root to leaf after compact
	// relinking and split-assistant repair, in the SDK's order. Progress rows
	// on the path are walked through but left out.
	Entries []core.Entry
	// Trailing holds queued-command attachments below the leaf that the SDK
	// appends after the chain (main files only).
	Trailing []core.Entry
	// Leaf is the uuid of the chain's last row ("" for an empty chain).
	Leaf string
	// Cycle is set when the walk from the leaf met a uuid twice: UUID is the
	// row whose parent closed the loop, Parent that parent. The chain ends
	// there, as in the SDK.
	Cycle *ChainBreak
	// Gaps lists rows whose parentUuid names a row that is not in the file,
	// in file order. A gap on the path ends the chain.
	Gaps []ChainBreak

	side      bool
	path      []*row // the chain with progress rows
	trailing  []*row
	all       []*row
	hostRows  []*row
	delivered map[string]int
}

// BuildChain rebuilds the conversation of one file's entries, in file order.
// It never fails: damaged input gives a shorter chain and a report in Cycle
// and Gaps.
func BuildChain(entries []core.Entry, opt ChainOptions) Chain {
	c := buildChain(extractRows(entries), opt)
	for _, r := range c.path {
		if r.typ != core.TypeProgress {
			c.Entries = append(c.Entries, *r.e)
		}
	}
	for _, r := range c.trailing {
		c.Trailing = append(c.Trailing, *r.e)
	}
	return c
}

// RowsMessages is BuildChain followed by Messages, for a reader that made
// Rows as it read (RowBuilder) instead of keeping entries: the SDK's
// getSessionMessages (getSubagentMessages with opt.Sidechain) over the rows
// of one file, in file order, with the walk's cycle and gaps.
func RowsMessages(rows []Row, opt ChainOptions, mopt MessageOptions) ([]SessionMessage, *ChainBreak, []ChainBreak) {
	rs := make([]*row, len(rows))
	for i, r := range rows {
		rs[i] = r.r
	}
	c := buildChain(rs, opt)
	return c.Messages(mopt), c.Cycle, c.Gaps
}

// buildChain rebuilds the conversation of rows (nil for lines that are not
// objects), leaving Entries and Trailing to the caller.
func buildChain(rows []*row, opt ChainOptions) Chain {
	c := Chain{side: opt.Sidechain, all: make([]*row, 0, len(rows))}
	var delivery *deliveryState
	if !opt.Sidechain {
		delivery = newDeliveryState()
	}
	for _, r := range rows {
		if r == nil {
			continue
		}
		r.pos = len(c.all)
		switch {
		case r.hasUUID && (r.typ == core.TypeUser || r.typ == core.TypeAssistant || r.typ == core.TypeAttachment ||
			(!opt.Sidechain && (r.typ == core.TypeProgress || r.typ == core.TypeSystem))):
			c.all = append(c.all, r)
		case r.typ == "host-row" && r.f.get(fRanBy).isStr():
			c.hostRows = append(c.hostRows, r)
		}
		if delivery != nil {
			delivery.add(r)
		}
	}
	if delivery != nil {
		c.delivered = delivery.counts()
	}
	if opt.Sidechain {
		c.buildSidechain()
	} else {
		c.buildMain()
	}
	if n := len(c.path); n > 0 {
		c.Leaf = c.path[n-1].uuid
	}
	return c
}

// extractRows reads the row of each entry (nil for a line that is not an
// object), on every core for a long transcript: rows are independent of
// each other.
func extractRows(entries []core.Entry) []*row {
	n := len(entries)
	rows := make([]*row, n)
	const perWorker = 4096
	workers := min(runtime.GOMAXPROCS(0), (n+perWorker-1)/perWorker)
	if workers <= 1 {
		for i := range rows {
			rows[i], _ = extractRow(&entries[i])
		}
		return rows
	}
	var wg sync.WaitGroup
	step := (n + workers - 1) / workers
	for lo := 0; lo < n; lo += step {
		hi := min(lo+step, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := lo; i < hi; i++ {
				rows[i], _ = extractRow(&entries[i])
			}
		}()
	}
	wg.Wait()
	return rows
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// IsPlainCompactBoundary reports whether e is a system compact_boundary row
// whose compactMetadata has neither preservedSegment nor preservedMessages:
// a boundary after which nothing older is needed. The SDK drops everything
// before the last such line when it loads a large file.
func IsPlainCompactBoundary(e *core.Entry) bool {
	var f [nFields]jv
	if !extractFields(jv(bytes.TrimLeft(e.Raw, " \t\r\n")), &f) {
		return false
	}
	if !f[fType].strEq(core.TypeSystem) || !f[fSubtype].strEq(core.SubtypeCompactBoundary) {
		return false
	}
	cm := f[fCompactMeta]
	if !cm.isObj() {
		return true
	}
	return !cm.field("preservedSegment").truthy() && !cm.field("preservedMessages").truthy()
}

// Format is Claude Code's transcript format as core.Resume needs it: the
// conversation rebuild, the recovery's classification and repairs, and the
// model API's rules. A host passes Format{} as core.ResumeOptions.Format.
type Format struct{}

var _ core.Format = Format{}

// Rebuild is BuildChain as core.Resume needs it.
func (Format) Rebuild(entries []core.Entry, sidechain bool) core.Rebuilt {
	c := BuildChain(entries, ChainOptions{Sidechain: sidechain})
	return core.Rebuilt{Entries: c.Entries, Trailing: c.Trailing, Leaf: c.Leaf}
}

// Repair is ClassifyAndRepair.
func (Format) Repair(conv []core.Entry, opt core.RecoveryOptions) core.Recovery {
	return ClassifyAndRepair(conv, opt)
}

// Validate is ValidateConversation.
func (Format) Validate(conv []core.Entry) []core.Violation { return ValidateConversation(conv) }
