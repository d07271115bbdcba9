//go:build soak

package server

import (
	"testing"
	"time"
)

// TestClusterSoak is TestCluster with forty times the entries and a
// rolling failure: the first server's node dies, comes back on its store,
// then the second server's node dies.
//
//	go test -tags soak -run TestClusterSoak -timeout 30m ./server/
func TestClusterSoak(t *testing.T) {
	clusterPush(t, 4800, 20*time.Minute,
		chaos{at: 0.2, what: "kill n2 (the first server's node)", do: func(c *cluster) { c.kill(1) }},
		chaos{at: 0.4, what: "restart n2", do: func(c *cluster) { c.start(1) }},
		chaos{at: 0.6, what: "kill n3 (the second server's node)", do: func(c *cluster) { c.kill(2) }},
	)
}
