package manage

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/cli/cmdutil"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/transcript/fork"
)

func NewCmdFork(f *cmdutil.Factory) *cobra.Command {
	var (
		upTo, title, at   string
		from              string
		keepUUIDs, asJSON bool
	)
	c := &cobra.Command{
		Use:   "fork ID",
		Short: "Copy a session into a new one, as the SDK's forkSession does (or as /branch does, with --keep-uuids)",
		Long: `fork writes a new session in the same project folder: the source's conversation
(up to --up-to, inclusive), fresh uuids, forkedFrom pointing at the source, and
the title "<source title> (fork)" unless --title is given. --keep-uuids keeps the
original uuids instead, as Claude Code's /branch does. Claude Code and the SDK
list and read the fork as one of their own.

--at CHECKPOINT (an id, a unique prefix of one, or a label; see scribe
checkpoints) copies the conversation up to the checkpoint's message, as --up-to
that message would, and prints the commit to check out.

--from STORE forks a session of another store (a postgres or s3 block) and
writes the fork into that store; "path" is then the store's type/name.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			st, _, done, err := f.OpenStoreOf(cmd)
			if err != nil {
				return err
			}
			defer done(&err)
			id, err := st.Resolve(cmd.Context(), args[0])
			if err != nil {
				return cmdutil.ResolveErr(err)
			}
			var cp *core.Checkpoint
			if at != "" {
				if upTo != "" {
					return &cmdutil.ExitError{Code: 2, Err: errors.New("--at and --up-to exclude each other")}
				}
				c, err := checkpointOf(cmd.Context(), st, id, at)
				if err != nil {
					return err
				}
				cp, upTo = &c, c.MessageUUID
			}
			fk, err := cmdutil.Capability[sessions.Forker](st, "fork")
			if err != nil {
				return err
			}
			// The fork goes where its source is, as the SDK's forkSession
			// with a sessionStore does.
			newID, path, err := fk.Fork(cmd.Context(), id, fork.Options{UpTo: upTo, Title: title, KeepUUIDs: keepUUIDs})
			if err != nil {
				return err
			}
			if asJSON {
				doc := map[string]any{"sessionId": newID, "forkedFrom": id, "path": path}
				if cp != nil {
					doc["checkpoint"] = cp
				}
				return cmdutil.WriteJSON(cmd.OutOrStdout(), doc)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "forked %s into %s\n  %s\n", id, newID, path)
			if cp != nil {
				fmt.Fprintf(cmd.OutOrStdout(), "at checkpoint %s %q\n", cp.ID, cp.Label)
				printCheckout(cmd.OutOrStdout(), *cp)
			}
			return nil
		},
	}
	fl := c.Flags()
	fl.StringVar(&upTo, "up-to", "", "copy the conversation up to this message uuid, inclusive")
	fl.StringVar(&title, "title", "", `the fork's title (default "<source title> (fork)")`)
	fl.BoolVar(&keepUUIDs, "keep-uuids", false, "keep the original uuids (Claude Code's /branch)")
	fl.StringVar(&at, "at", "", "fork up to this checkpoint's message (id, unique id prefix or label) and print its commit")
	fl.BoolVar(&asJSON, "json", false, `print {"sessionId","forkedFrom","path"} (and "checkpoint" with --at)`)
	fl.StringVar(&from, "from", "", "fork a session of this store (a postgres or s3 block, type/name) into the same store")
	return c
}
