package events

import (
	"context"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/core/coretest"
)

// The cloud loader, against a real scribe serve (embedded JetStream) that
// holds exactly the harness's sessions, holds to the loader contract.
func TestCloudLoaderContract(t *testing.T) {
	coretest.RunLoaderContract(t, coretest.LoaderHarness{
		Sidechains: true,
		New: func(t *testing.T, sessions []coretest.Session) core.Loader {
			c := testClient(t, startScribeServe(t), loaderToken)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			for _, s := range sessions {
				var evs []Event
				for _, l := range s.Lines {
					e := coretest.MustEntry(t, l)
					evs = append(evs, Event{Type: e.Type, Payload: []byte(l), AgentID: s.Ref.AgentID})
				}
				for len(evs) > 0 {
					n := min(len(evs), 500)
					res, err := c.PostEvents(ctx, s.Ref.SessionID, evs[:n])
					if err != nil || res.Stored != n {
						t.Fatalf("post %d events of %s: stored %d, %v", n, s.Ref.Key(), res.Stored, err)
					}
					evs = evs[n:]
				}
			}
			return NewLoader(c)
		},
	})
}
