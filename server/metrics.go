package server

import "github.com/e0dc0000/scribe/server/servemetrics"

// metrics are the server's counters (GET /metrics).
type metrics = servemetrics.Metrics
