package transcript

import (
	"strings"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/ident"
)

// Local commands and queued commands

var interruptPrefixes = []string{
	"[Request interrupted by user]",
	"[Request interrupted: the session ended before this agent finished. Nobody asked it to stop.]",
	"[This turn ended before it finished.]",
	"[Agent call interrupted: the process running this conversation stopped before this agent finished, so it returned no result. Nobody asked it to stop.]",
	"[Request interrupted by user for tool use]",
	"[Tool call did not complete: the turn was ended to deliver the message that follows. Nothing refused it; re-run it if still needed.]",
	"[Tool call interrupted: the session ended before this call's result was recorded, so its outcome is unknown. Check whether it took effect before relying on it or running it again.]",
	"[Tool call result not in this copy: this session was copied from another session before that session recorded this call's result. The call may have finished there, may still be running there, or may never have run. Check whether it took effect before relying on it or running it again.]",
	"The user doesn't want to take this action right now. STOP what you are doing and wait for the user to tell you how to proceed.",
	"[Tool call skipped: the turn was stopped before this call ran, by the check whose denial is on another call in this batch. Nothing refused this call and it had no effects; re-run it if still needed.]",
	"[Tool call skipped: the turn ended to deliver the message that follows before this call ran. Nothing refused it; re-run it if still needed.]",
}

func hasInterruptPrefix(s string) bool {
	for _, p := range interruptPrefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// isInterruption: a user row whose content is only interruption notices.
func isInterruption(r *row) bool {
	if r.typ != core.TypeUser {
		return false
	}
	if !r.f.get(fMessage).isObj() {
		return false // message?.content of a non-object is undefined
	}
	mi := r.m()
	if s, ok := mi.content.str(); ok {
		return hasInterruptPrefix(s)
	}
	if !mi.content.isArr() || len(mi.blocks) == 0 {
		return false
	}
	for _, b := range mi.blocks {
		if !b.obj {
			return false
		}
		var text jv
		switch {
		case b.typ == "text":
			text = b.text
		case b.typ == "tool_result" && b.f.get("is_error").isTrue():
			text = b.f.get("content")
		}
		s, ok := text.str()
		if !ok || !hasInterruptPrefix(s) {
			return false
		}
	}
	return true
}

// commandKind classifies a user row's text: "record" (<command-name>),
// "output" (local command stdout/stderr) or "caveat".
func commandKind(r *row) string {
	if r.f.get(fPromptSource) != nil {
		return ""
	}
	if !r.f.get(fMessage).isObj() {
		return ""
	}
	mi := r.m()
	var text jv
	switch {
	case mi.content.isArr():
		for i := len(mi.blocks) - 1; i >= 0; i-- {
			if b := mi.blocks[i]; b.obj && b.typ == "text" {
				text = b.text
				break
			}
		}
	case mi.content.isStr():
		text = mi.content
	}
	s, ok := text.str()
	if !ok {
		return ""
	}
	switch {
	case strings.HasPrefix(s, "<command-name>"):
		return "record"
	case strings.HasPrefix(s, "<local-command-stdout>"), strings.HasPrefix(s, "<local-command-stderr>"):
		return "output"
	case strings.HasPrefix(s, "<local-command-caveat>"):
		return "caveat"
	}
	return ""
}

// markCommands flags finished local commands and turns queued-command
// attachments that were delivered into the user messages they became.
func markCommands(items []*row, mainFile bool, trailingIDs map[string]bool, delivered map[string]int) []*row {
	// Local commands: after a meta caveat row, its <command-name> row and
	// the output rows that follow it.
	local := map[int]bool{}
	for o, r := range items {
		if r.typ != core.TypeUser || !r.f.get(fMeta).truthy() || commandKind(r) != "caveat" {
			continue
		}
		rec := false
		for i := o + 1; i < len(items); i++ {
			a := items[i]
			if a.typ == core.TypeAssistant {
				break
			}
			if a.typ != core.TypeUser || a.f.get(fMeta).truthy() {
				continue
			}
			k := commandKind(a)
			if k == "record" && !rec {
				rec = true
			} else if k != "output" || !rec {
				break
			}
			local[i] = true
		}
	}
	// Whether a reply follows each row.
	replied := make([]bool, len(items))
	state := ""
	for o := len(items) - 1; o >= 0; o-- {
		s := items[o]
		replied[o] = state == "reply"
		if s.typ == core.TypeAssistant || s.isToolResultRow() || isInterruption(s) {
			state = "reply"
		} else if s.typ == core.TypeUser && !s.f.get(fMeta).truthy() && !s.f.get(fCompactSummary).truthy() && !local[o] {
			state = "prompt"
		}
	}
	// Delivered queued commands.
	deliveredAt := map[int]bool{}
	if len(delivered) > 0 {
		groups := map[string][]int{}
		var keys []string
		for i, r := range items {
			cmd := queuedCommand(r.typ, &r.f)
			key := ""
			if id, ok := commandField(cmd, "delivery_id"); ok {
				key = "delivery:" + id
			} else if src, ok := commandField(cmd, "source_uuid"); ok {
				key = "uuid:" + src
			}
			if _, ok := delivered[key]; key == "" || !ok {
				continue
			}
			if _, ok := groups[key]; !ok {
				keys = append(keys, key)
			}
			groups[key] = append(groups[key], i)
		}
		for _, key := range keys {
			idx := groups[key]
			if strings.HasPrefix(key, "delivery:") {
				for _, i := range idx {
					_, ok := delivered["entry:"+items[i].uuid]
					deliveredAt[i] = ok
				}
				continue
			}
			n := delivered[key]
			for j, i := range idx {
				deliveredAt[i] = j >= len(idx)-n
			}
		}
	}
	var uuids map[string]bool // made when an attachment may need it
	for _, r := range items {
		if r.typ == core.TypeAttachment {
			uuids = make(map[string]bool, len(items))
			for _, r := range items {
				uuids[r.uuid] = true
			}
			break
		}
	}
	out := make([]*row, len(items))
	for i, r := range items {
		if local[i] {
			n := r.clone()
			n.f.set(fCompletedLocal, jv("true"))
			out[i] = n
			continue
		}
		use, ok := deliveredAt[i]
		if !ok {
			use = replied[i] || trailingIDs[r.uuid]
		}
		out[i] = queuedToUser(r, use, uuids, !mainFile)
	}
	return out
}

// queuedToUser turns a delivered queued-command attachment into its user
// message.
func queuedToUser(r *row, use bool, uuids map[string]bool, keepMeta bool) *row {
	if !use || r.typ != core.TypeAttachment || !r.f.get(fAttachment).objLike() {
		return r
	}
	a := r.f.get(fAttachment)
	var at [nFields]jv
	var prompt, srcUUID, forwarded, mode, runID, waiting jv
	eachField(a, func(k []byte, v jv) {
		switch string(k) {
		case "type":
			at[fType] = v
		case "prompt":
			prompt = v
		case "origin":
			at[fOrigin] = v
		case "isMeta":
			at[fMeta] = v
		case "source_uuid":
			srcUUID = v
		case "forwardedIntent":
			forwarded = v
		case "commandMode":
			mode = v
		case "runId":
			runID = v
		case "resultEndsInWaitingNote":
			waiting = v
		}
	})
	origin := at[fOrigin]
	if !(origin.isObj() && origin.field("kind").isStr()) {
		origin = nil
	}
	if !at[fType].strEq("queued_command") || (at[fMeta].truthy() && !keepMeta && !channelOrigin(origin)) ||
		(!prompt.isStr() && !prompt.isArr()) {
		return r
	}
	if forwarded.isObj() {
		if l, ok := forwarded.field("lineage").str(); ok && l != "" {
			return r
		}
	}
	id := r.uuid
	if s, ok := srcUUID.str(); ok && s != "" {
		id = s
	}
	if id != r.uuid && uuids[id] {
		return r
	}
	uuids[id] = true
	// The origin: task-notification origins are rebuilt and may take the
	// run id.
	var o jv
	if origin != nil {
		o = normalizeOrigin(origin)
	} else if mode.strEq("task-notification") {
		o = jv(`{"kind":"task-notification"}`)
	}
	if s, ok := runID.str(); ok && ident.RunID(s) && o.isObj() && o.field("kind").strEq("task-notification") &&
		o.field("runId") == nil {
		o = spread(o, nil, "runId", runID)
	}
	n := &row{e: r.e, pos: r.pos, typ: core.TypeUser, uuid: id, hasUUID: true}
	n.f.set(fType, jstr(core.TypeUser))
	n.f.set(fUUID, jstr(id))
	n.f.set(fParent, r.f.get(fParent))
	n.syncParent()
	n.f.set(fSession, r.f.get(fSession))
	n.f.set(fTimestamp, r.f.get(fTimestamp))
	var msg objBuilder
	msg.add("role", jstr(core.TypeUser))
	msg.add("content", pluginPrompt(prompt, origin))
	n.f.set(fMessage, msg.done())
	if at[fMeta].truthy() {
		n.f.set(fMeta, jv("true"))
	} else {
		n.f.set(fMeta, jv("false"))
	}
	n.f.set(fOrigin, o)
	if waiting.isTrue() {
		n.f.set(fWaitingNote, jv("true"))
	}
	n.f.set(fQueuedCommand, jv("true"))
	n.f.set(fSidechain, r.f.get(fSidechain))
	n.f.set(fTeam, r.f.get(fTeam))
	return n
}
