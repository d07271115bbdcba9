package listing

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"time"

	"github.com/e0dc0000/scribe/internal/cli/cmdutil"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/jsonl"
)

// Sessions is ls's listing: through the index unless noIndex, with
// the lifecycle records when the table or the status filter needs them
// (the filters, status and keep, apply before --limit and --offset).
func Sessions(ctx context.Context, st sessions.Store, opt jsonl.ListOptions, status jsonl.SessionStatus,
	keep func(*jsonl.SessionInfo) bool, asJSON bool) ([]jsonl.SessionInfo, []jsonl.SessionRecord, error) {
	needRecs := !asJSON || status != ""
	page := opt
	filtered := status != "" || keep != nil
	if filtered {
		opt.Limit, opt.Offset = 0, 0
	}
	var (
		infos []jsonl.SessionInfo
		recs  []jsonl.SessionRecord
		err   error
	)
	if needRecs {
		recs, err = st.Records(ctx, opt)
	} else {
		opt.SkipLastEntryTail = true
		infos, err = st.List(ctx, opt)
	}
	if err != nil {
		return nil, nil, err
	}
	if recs == nil {
		if keep == nil {
			return infos, nil, nil
		}
		kept := infos[:0]
		for i := range infos {
			if keep(&infos[i]) {
				kept = append(kept, infos[i])
			}
		}
		return pageOf(kept, page), nil, nil
	}
	kept := recs[:0]
	for _, r := range recs {
		if (status == "" || r.Status == status) && (keep == nil || keep(&r.Info)) {
			kept = append(kept, r)
		}
	}
	if filtered {
		kept = pageOf(kept, page)
	}
	infos = make([]jsonl.SessionInfo, len(kept))
	for i := range kept {
		infos[i] = kept[i].Info
	}
	return infos, kept, nil
}

// pageOf is the --offset and --limit page of a filtered listing.
func pageOf[T any](all []T, page jsonl.ListOptions) []T {
	all = all[min(max(page.Offset, 0), len(all)):]
	if page.Limit > 0 && page.Limit < len(all) {
		all = all[:page.Limit]
	}
	return all
}

// ModifiedWithin is --since and --until as a filter on the listing's
// modification time (nil when neither is given).
func ModifiedWithin(since, until string, now time.Time) (func(*jsonl.SessionInfo) bool, error) {
	if since == "" && until == "" {
		return nil, nil
	}
	from, err := cmdutil.ParseWhen("--since", since, false, now)
	if err != nil {
		return nil, err
	}
	to, err := cmdutil.ParseWhen("--until", until, true, now)
	if err != nil {
		return nil, err
	}
	return func(s *jsonl.SessionInfo) bool {
		t := time.UnixMilli(s.LastModified)
		return (since == "" || !t.Before(from)) && (until == "" || t.Before(to))
	}, nil
}

// WriteInfosJSON prints the listing as cmdutil.WriteJSON would, one session at a
// time, so the whole document is never held in memory.
func WriteInfosJSON(out io.Writer, infos []jsonl.SessionInfo) error {
	if len(infos) == 0 {
		_, err := io.WriteString(out, "[]\n")
		return err
	}
	w := bufio.NewWriterSize(out, 64<<10)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("  ", "  ")
	w.WriteString("[\n")
	for i := range infos {
		buf.Reset()
		if err := enc.Encode(&infos[i]); err != nil {
			return err
		}
		w.WriteString("  ")
		w.Write(bytes.TrimRight(buf.Bytes(), "\n"))
		if i < len(infos)-1 {
			w.WriteString(",")
		}
		w.WriteString("\n")
	}
	w.WriteString("]\n")
	return w.Flush()
}
