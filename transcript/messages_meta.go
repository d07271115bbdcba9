package transcript

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/e0dc0000/scribe/transcript/internal/jsjson"
)

// A message's tool_result_meta, as the SDK's getSessionMessages reads it
// (0.3.337): one entry per string tool_use_id of the message's tool_result
// blocks, when the row says something about them. Everything but
// rewritten_by_plugin needs exactly one tool_result block; remedy,
// file_refusal and input_invalid are left out when a plugin rewrote the
// result (toolResultRewritten).

var denialKinds = []string{"user-rejected", "permission-rule", "automode-blocked", "automode-unavailable",
	"automode-parsing-error", "interrupted", "cancelled"}

func toolResultMeta(r *row, f *[nFields]jv) []ToolResultMeta {
	var ids []jv
	if f[fMessage].isObj() {
		for _, b := range r.m().blocks {
			if b.obj && b.typ == "tool_result" {
				ids = append(ids, b.f.get("tool_use_id"))
			}
		}
	}
	var m ToolResultMeta
	rewritten := f[fResultRewritten].truthy()
	if len(ids) == 1 {
		m.NonExecutionKind = oneOfStrings(f[fDenialKind], denialKinds)
		if f[fCallEnded].strEq("not_started") {
			m.CallEnded = "not_started"
		}
		m.RefusedBy = refusedBy(f)
		if !rewritten {
			if v := toolRemedy(f[fResultRemedy]); v != nil {
				m.Remedy = json.RawMessage(v)
			}
			if v := fileRefusal(f[fFileRefusal]); v != nil {
				m.FileRefusal = json.RawMessage(v)
			}
			m.InputInvalid = f[fInputInvalid].isTrue()
		}
		m.InputChanged = inputChanged(f[fExecutedInput])
	}
	m.RewrittenByPlugin = rewritten
	if m.NonExecutionKind == "" && m.CallEnded == "" && m.RefusedBy == "" && m.Remedy == nil && m.FileRefusal == nil &&
		!m.InputInvalid && !m.RewrittenByPlugin && !m.InputChanged {
		return nil
	}
	var out []ToolResultMeta
	for _, id := range ids {
		if s, ok := id.str(); ok {
			e := m
			e.ID = s
			out = append(out, e)
		}
	}
	return out
}

// oneOfStrings is v when it is one of the strings in list, else "".
func oneOfStrings(v jv, list []string) string {
	for _, s := range list {
		if v.strEq(s) {
			return s
		}
	}
	return ""
}

// refusedBy is who refused the tool call: "auto_mode" (an auto-mode denial
// kind), "hook", "dont_ask" (the dontAsk mode) or "rule" (a deny rule),
// read from permissionDecision; "" for a denial the host made, or none.
func refusedBy(f *[nFields]jv) string {
	pd := f[fPermissionDecision]
	if f[fDenialFromHost].truthy() {
		return ""
	}
	switch oneOfStrings(f[fDenialKind], denialKinds) {
	case "automode-blocked", "automode-unavailable", "automode-parsing-error":
		return "auto_mode"
	}
	if !pd.field("decision").strEq("reject") {
		return ""
	}
	reasonType := pd.field("reasonType")
	if reasonType.strEq("hook") || pd.field("source").strEq("hook") {
		return "hook"
	}
	if f[fDenialAfterRun].truthy() {
		return ""
	}
	if reasonType.strEq("mode") && pd.field("reasonCode").strEq("mode:dontAsk") {
		return "dont_ask"
	}
	if (reasonType.strEq("rule") || reasonType.strEq("subcommandResults") && pd.field("ruleSource").isStr()) &&
		!pd.field("notByDenyRule").truthy() {
		return "rule"
	}
	return ""
}

var (
	remedyCheckFailures = []string{"timed_out", "rate_limited", "overloaded", "server_error", "connection_failed",
		"response_ended", "other"}
	remedyRemovalRisks = []string{"top_folder", "working_folder", "variable_target", "command_output",
		"unknown_target", "unread_command"}
	// remedyEnums are the remedies of one enumerated member: its key and
	// values.
	remedyEnums = map[string]struct {
		key    string
		values []string
	}{
		"check_failed":    {"check_failure", remedyCheckFailures},
		"removal_refused": {"removal_risk", remedyRemovalRisks},
	}
	fileRefusalReasons = []string{"changed_since_read", "not_read", "text_not_found", "text_repeated", "no_change",
		"file_not_found", "folder_not_found", "path_not_found", "too_large", "part_too_large", "is_folder"}
)

// toolRemedy is a toolResultRemedy the SDK recognises, rebuilt with only
// its known keys: {kind:"allow_rule",tool}, {kind:"check_failed",
// check_failure}, {kind:"advice_to_claude"[,long_sleep:true]} or
// {kind:"removal_refused",removal_risk}; nil otherwise.
func toolRemedy(v jv) jv {
	kind, _ := v.field("kind").str()
	var b objBuilder
	switch kind {
	case "allow_rule":
		tool, ok := v.field("tool").str()
		if !ok || !remedyToolName(tool) {
			return nil
		}
		b.add("kind", jstr(kind))
		b.add("tool", jstr(tool))
	case "check_failed", "removal_refused":
		e := remedyEnums[kind]
		c := oneOfStrings(v.field(e.key), e.values)
		if c == "" {
			return nil
		}
		b.add("kind", jstr(kind))
		b.add(e.key, jstr(c))
	case "advice_to_claude":
		b.add("kind", jstr(kind))
		if v.field("long_sleep").isTrue() {
			b.add("long_sleep", jv("true"))
		}
	default:
		return nil
	}
	return b.done()
}

// remedyToolName is /^[\w-]{1,128}$/.
func remedyToolName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// fileRefusal is a toolResultFileRefusal the SDK recognises: its reason,
// with matches (text_repeated: a safe integer above 1, else none at all),
// bytes (too_large: a safe integer from 0, else none at all) or a string
// suggestion (the not-found reasons); nil otherwise.
func fileRefusal(v jv) jv {
	reason := oneOfStrings(v.field("reason"), fileRefusalReasons)
	if reason == "" {
		return nil
	}
	var b objBuilder
	b.add("reason", jstr(reason))
	switch reason {
	case "text_repeated":
		n, ok := jsSafeInt(v.field("matches"))
		if !ok || n <= 1 {
			return nil
		}
		b.add("matches", jv(jsNumString(n)))
	case "too_large":
		n, ok := jsSafeInt(v.field("bytes"))
		if !ok || n < 0 {
			return nil
		}
		b.add("bytes", jv(jsNumString(n)))
	case "file_not_found", "folder_not_found", "path_not_found":
		if s, ok := v.field("suggestion").str(); ok {
			b.add("suggestion", jstr(s))
		}
	}
	return b.done()
}

// inputChanged: executedInput.sources is a non-empty array of "mod",
// "settings-hook" and "permission-answer" only.
func inputChanged(v jv) bool {
	els := v.field("sources").elems()
	if !v.field("sources").isArr() || len(els) == 0 {
		return false
	}
	for _, el := range els {
		if oneOfStrings(el, []string{"mod", "settings-hook", "permission-answer"}) == "" {
			return false
		}
	}
	return true
}

// jsSafeInt is v when it is a number for which Number.isSafeInteger holds.
func jsSafeInt(v jv) (float64, bool) {
	x, ok := jsjson.Num(v)
	return x, ok && x == math.Trunc(x) && math.Abs(x) <= 1<<53-1
}

// jsNumString is an integer-valued number as JSON.stringify writes it.
func jsNumString(x float64) string {
	if x == 0 {
		return "0" // -0 too
	}
	if math.Abs(x) < 1e21 {
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return strconv.FormatFloat(x, 'e', -1, 64)
}

// pluginPrompt is the SDK's (0.3.337) reading of a queued command's
// string prompt from a plugin (origin kind "plugin", asUser not true): the
// prompt wrapped in a note naming the plugin ("unnamed" unless its name is
// 1 to 40 of [A-Za-z0-9_.@:-]).
func pluginPrompt(prompt, origin jv) jv {
	s, ok := prompt.str()
	if !ok || !origin.field("kind").strEq("plugin") || origin.field("asUser").isTrue() {
		return prompt
	}
	name, ok := origin.field("name").str()
	if !ok || !pluginName(name) {
		name = "unnamed"
	}
	return jstr("The " + name + " plugin sent a message while you were working:\n" + s + "\n\n" +
		"This is how Claude Code surfaces prompts a plugin submits mid-turn — within the running turn, " +
		"often alongside the next tool result. Address the message above as you continue this turn.")
}

// pluginName is /^[\w.@:-]{1,40}$/.
func pluginName(s string) bool {
	if s == "" || len(s) > 40 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' ||
			c == '@' || c == ':' || c == '-') {
			return false
		}
	}
	return true
}
