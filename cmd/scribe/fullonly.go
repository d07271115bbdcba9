package main

// cmdText is a command's Use and Short.
type cmdText struct{ use, short string }

// fullOnly are the commands only the full build runs (full.go registers
// them; their packages are linked into no light build): the one source of
// their Use and Short, for the full build's commands and the light build's
// stubs (lite.go), so both builds list them alike.
var fullOnly = map[string]cmdText{
	"config":  {"config", "Work with the configuration file"},
	"copy":    {"copy --from STORE --to STORE [--all | ID...]", "Copy sessions (with their subagents) from one store to another: jsonl, postgres, s3"},
	"demo":    {"demo", "Record a bundled sample session into a throwaway config folder, list it and show it"},
	"mcp":     {"mcp", "Serve the sessions to an agent as read-only MCP tools over stdio (list, search, get), redacted"},
	"plugin":  {"plugin", "Work with a plugin binary"},
	"plugins": {"plugins", "Work with the plugins of the configuration"},
	"s3":      {"s3", "Work on an s3 store"},
	"search":  {"search QUERY [--project P] [--since D] [--role user|assistant|tool] [--json] [--limit N]", "Full-text search over every session: prompts, answers, thinking, tool inputs and outputs, subagents"},
	"serve":   {"serve", "Run the scribe server: session ingress, events and the History API on NATS JetStream"},
	"token":   {"token", "Make and hash bearer tokens for scribe serve"},
}
