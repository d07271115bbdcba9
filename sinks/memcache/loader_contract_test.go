package memcache

import (
	"context"
	"testing"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/core/coretest"
)

// The cache, filled as the pipeline fills it, holds to the loader
// contract.
func TestLoaderContract(t *testing.T) {
	coretest.RunLoaderContract(t, coretest.LoaderHarness{
		Sidechains: true,
		New: func(t *testing.T, sessions []coretest.Session) core.Loader {
			c := New(1 << 30)
			for _, s := range sessions {
				var es []core.Entry
				for _, l := range s.Lines {
					es = append(es, coretest.MustEntry(t, l))
				}
				if err := c.Write(context.Background(), es); err != nil {
					t.Fatal(err)
				}
			}
			return c
		},
	})
}
