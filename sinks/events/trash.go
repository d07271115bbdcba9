package events

// The server's trash (server/trash.go):
//
//	GET  {base_url}/v1/trash                       Client.TrashItems
//	POST {base_url}/v1/trash          {session_id,reason}   Client.Trash
//	POST {base_url}/v1/trash/restore  {ref}                 Client.Restore
//	POST {base_url}/v1/trash/empty    {ref|older_than_seconds, dry_run}
//	                                                        Client.EmptyTrash

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/e0dc0000/scribe/server/wire"
)

// TrashItem is a session in the server's trash (wire.TrashItem).
type TrashItem = wire.TrashItem

// Trash moves session id to the server's trash, saying why (rm).
func (c *Client) Trash(ctx context.Context, id, reason string) (TrashItem, error) {
	var it TrashItem
	err := c.trashPost(ctx, "", wire.TrashRequest{SessionID: id, Reason: reason}, &it)
	if err != nil {
		return it, fmt.Errorf("move session %s to the trash of %s: %w", id, c.BaseURL, c.explain(err, id))
	}
	return it, nil
}

// TrashItems lists the server's trash, oldest first.
func (c *Client) TrashItems(ctx context.Context) ([]TrashItem, error) {
	body, err := c.do(ctx, http.MethodGet, c.BaseURL+"/v1/trash", nil)
	if err != nil {
		return nil, fmt.Errorf("list the trash of %s: %w", c.BaseURL, c.explain(err, ""))
	}
	var l wire.TrashList
	if err := json.Unmarshal(body, &l); err != nil {
		return nil, fmt.Errorf("list the trash of %s: the answer is not JSON: %w", c.BaseURL, err)
	}
	return l.Data, nil
}

// Restore puts the trash item ref (its id, its session id or a unique
// prefix of either) back.
func (c *Client) Restore(ctx context.Context, ref string) (TrashItem, error) {
	var it TrashItem
	if err := c.trashPost(ctx, "/restore", wire.TrashRequest{Ref: ref}, &it); err != nil {
		return it, fmt.Errorf("restore %q from the trash of %s: %w", ref, c.BaseURL, err)
	}
	return it, nil
}

// EmptyTrash deletes for good the item ref, or with ref "" those trashed
// more than olderThan ago (all with 0); with dryRun it only lists them.
func (c *Client) EmptyTrash(ctx context.Context, ref string, olderThan time.Duration, dryRun bool) ([]TrashItem, error) {
	var l wire.TrashList
	in := wire.TrashRequest{Ref: ref, OlderThanSeconds: int64(olderThan / time.Second), DryRun: dryRun}
	if err := c.trashPost(ctx, "/empty", in, &l); err != nil {
		return nil, fmt.Errorf("empty the trash of %s: %w", c.BaseURL, err)
	}
	return l.Data, nil
}

// trashPost posts in to /v1/trash<route> and decodes the answer into out.
func (c *Client) trashPost(ctx context.Context, route string, in wire.TrashRequest, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	body, err := c.do(ctx, http.MethodPost, c.BaseURL+"/v1/trash"+route, b)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("the answer is not JSON: %w", err)
	}
	return nil
}
