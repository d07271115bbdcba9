// Package server is `scribe serve`: the cloud side of scribe. It speaks the
// HTTP routes Claude Code's remote client uses (v1 session ingress, v2
// events, the paginated History API), keeps every entry once in a NATS
// JetStream stream, and keeps per-session metadata in a JetStream KV bucket.
// See store.go for the storage design and http.go for the API.
package server

import "github.com/e0dc0000/scribe/server/serveconf"

// Config is the server block of the configuration file (serveconf.Config).
type Config = serveconf.Config

// Token is one accepted bearer token.
type Token = serveconf.Token

// Scopes a token can carry, and the sync policy that fsyncs every write.
const (
	ScopeRead  = serveconf.ScopeRead
	ScopeWrite = serveconf.ScopeWrite
	SyncAlways = serveconf.SyncAlways
)

// DefaultConfig returns the defaults (DataDir stays "" and is resolved by
// New).
func DefaultConfig() *Config { return serveconf.DefaultConfig() }

// HashToken returns the lower-case hex SHA-256 of a bearer token: the form
// tokens take in the configuration.
func HashToken(tok string) string { return serveconf.HashToken(tok) }
