package s3

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/sinks/backend"
)

var _ backend.Compactor = (*Store)(nil)

// Compact merges a transcript's parts into one, keeping their bytes in
// order: it stores the merged part first, under a key that sorts after
// every part it replaces (the last part's time, rand "zzzzzz"), then
// deletes the parts it replaced. A reader between the two steps sees the
// lines twice, which Load serves once by uuid; a crash between them leaves
// the same, and the next Compact finishes the job. Parts stored while it
// runs are left alone. Compact the sessions no one is writing.
func (s *Store) Compact(ctx context.Context, ref core.SessionRef) (backend.CompactResult, error) {
	pk, err := s.findProject(ctx, ref, backend.Subpath(ref))
	if err != nil {
		return backend.CompactResult{}, err
	}
	if pk == "" {
		return backend.CompactResult{}, fmt.Errorf("s3: compact: %w: no parts for %s in bucket %s", core.ErrNotFound, ref.Key(), s.cfg.Bucket)
	}
	prefix := s.transcriptPrefix(pk, ref)
	keys, err := s.partKeys(ctx, prefix)
	if err != nil {
		return backend.CompactResult{}, err
	}
	if len(keys) < 2 {
		return backend.CompactResult{}, nil
	}
	var data []byte
	for _, k := range keys {
		b, err := s.get(ctx, k)
		if err != nil {
			return backend.CompactResult{}, err
		}
		if len(b) > 0 && b[len(b)-1] != '\n' {
			b = append(b, '\n')
		}
		data = append(data, b...)
	}
	last := strings.TrimPrefix(keys[len(keys)-1], prefix+"part-")
	ms, _, _ := strings.Cut(last, "-")
	merged := prefix + "part-" + ms + "-zzzzzz.jsonl"
	if _, err := s.client.PutObject(ctx, &s3.PutObjectInput{Bucket: &s.cfg.Bucket, Key: &merged,
		Body: strings.NewReader(string(data)), ContentLength: &[]int64{int64(len(data))}[0]}); err != nil {
		return backend.CompactResult{}, fmt.Errorf("s3: compact %s: store the merged part: %w", ref.Key(), err)
	}
	for _, k := range keys {
		if k == merged {
			continue
		}
		if _, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.cfg.Bucket, Key: &k}); err != nil {
			return backend.CompactResult{}, fmt.Errorf("s3: compact %s: the merged part %s is stored; delete the old part %s: %w", ref.Key(), merged, k, err)
		}
	}
	return backend.CompactResult{Parts: len(keys), Bytes: int64(len(data)), Merged: merged}, nil
}
