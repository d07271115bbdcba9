package sessions

import (
	"context"

	"github.com/e0dc0000/scribe/core"
)

// CheckpointsIn returns the checkpoints among a session's lifecycle
// records in the order they were taken (a checkpoint recorded twice
// counts once; lines that do not parse are skipped).
func CheckpointsIn(entries []core.Entry) []core.Checkpoint {
	var out []core.Checkpoint
	seen := map[string]bool{}
	for i := range entries {
		if entries[i].Type != core.TypeCheckpoint {
			continue
		}
		c, err := core.ParseCheckpoint(&entries[i])
		if err != nil || seen[c.ID] {
			continue
		}
		seen[c.ID] = true
		out = append(out, c)
	}
	return out
}

// Checkpoints returns the checkpoints of session id in st.
func Checkpoints(ctx context.Context, st Store, id string) ([]core.Checkpoint, error) {
	entries, err := st.Lifecycle(ctx, id)
	if err != nil {
		return nil, err
	}
	return CheckpointsIn(entries), nil
}
