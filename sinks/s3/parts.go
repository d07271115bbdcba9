package s3

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/sinks/backend"
)

// transcriptPrefix is the folder of a transcript's parts.
func (s *Store) transcriptPrefix(projectKey string, ref core.SessionRef) string {
	return s.subpathPrefix(projectKey, ref.SessionID, backend.Subpath(ref))
}

// subpathPrefix is the folder of the parts of a session's subpath.
func (s *Store) subpathPrefix(projectKey, sessionID, subpath string) string {
	p := s.cfg.Prefix + projectKey + "/" + sessionID + "/"
	if subpath != "" {
		p += subpath + "/"
	}
	return p
}

// Write implements core.Sink: it copies the lines into the buffers of
// their transcripts, and stores the buffers that reached part_bytes. A
// failed store keeps the lines buffered (counted, retried by the timer and
// by Flush), so Write loses nothing.
func (s *Store) Write(ctx context.Context, entries []core.Entry) error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return core.Permanent(errors.New("s3: write after shutdown"))
	}
	keys, err := s.projectKeys(ctx, entries)
	if err != nil {
		return err
	}
	full := false
	s.mu.Lock()
	for i := range entries {
		e := &entries[i]
		if e.SessionID == "" {
			s.mu.Unlock()
			return &core.PartialError{N: i, Err: s.CheckEntry(e)}
		}
		sub, skip := backend.EntrySubpath(e)
		if skip {
			s.eventsSkipped.Add(1)
			continue
		}
		tp := s.subpathPrefix(keys[e.SessionID], e.SessionID, sub)
		b := s.bufs[tp]
		if b == nil {
			b = &buffer{since: time.Now()}
			s.bufs[tp] = b
		}
		if len(b.data) == 0 {
			b.since = time.Now()
		}
		b.data = append(append(b.data, e.Raw...), '\n')
		full = full || int64(len(b.data)) >= s.cfg.PartBytes
	}
	s.mu.Unlock()
	if full {
		if err := s.putParts(ctx, false); err != nil {
			s.log.Warn("store parts; the lines stay buffered", "error", err, "put_errors", s.putErrors.Load())
		}
	}
	return nil
}

// projectKeys decides each session's project key: the one it was given
// before, else the sanitized cwd of its first entry that has one, else the
// project it is already stored under, else the host's working directory.
func (s *Store) projectKeys(ctx context.Context, entries []core.Entry) (map[string]string, error) {
	keys := map[string]string{}
	s.mu.Lock()
	for i := range entries {
		e := &entries[i]
		if k, ok := keys[e.SessionID]; ok && k != "" {
			continue
		}
		if k, ok := s.projects[e.SessionID]; ok {
			keys[e.SessionID] = k
		} else if e.CWD != "" {
			keys[e.SessionID] = claudedir.SanitizePath(e.CWD)
		} else {
			keys[e.SessionID] = ""
		}
	}
	s.mu.Unlock()
	for sid, k := range keys {
		if k != "" || sid == "" {
			continue
		}
		pk, err := s.findProject(ctx, core.SessionRef{SessionID: sid}, "")
		if err != nil {
			return nil, err
		}
		if pk == "" {
			pk = claudedir.SanitizePath(s.workDir)
		}
		keys[sid] = pk
	}
	s.mu.Lock()
	for sid, k := range keys {
		if _, ok := s.projects[sid]; !ok {
			s.projects[sid] = k
		}
	}
	s.mu.Unlock()
	return keys, nil
}

// putParts stores buffers as parts: every buffer when all, else those
// full or older than the part interval.
func (s *Store) putParts(ctx context.Context, all bool) error {
	s.putMu.Lock()
	defer s.putMu.Unlock()
	type job struct {
		prefix string
		data   []byte
	}
	var jobs []job
	now := time.Now()
	s.mu.Lock()
	for tp, b := range s.bufs {
		if len(b.data) == 0 {
			delete(s.bufs, tp)
			continue
		}
		if all || int64(len(b.data)) >= s.cfg.PartBytes || now.Sub(b.since) >= s.interval {
			jobs = append(jobs, job{tp, b.data})
			delete(s.bufs, tp)
		}
	}
	s.mu.Unlock()
	sort.Slice(jobs, func(i, j int) bool { return jobs[i].prefix < jobs[j].prefix })
	var errs []error
	for _, j := range jobs {
		err := ctx.Err()
		if err == nil {
			err = s.putPart(ctx, j.prefix, j.data)
		}
		if err == nil {
			continue
		}
		s.putErrors.Add(1)
		errs = append(errs, fmt.Errorf("s3: store a part under %s: %w", j.prefix, err))
		// The lines go back in front of what arrived since.
		s.mu.Lock()
		b := s.bufs[j.prefix]
		if b == nil {
			b = &buffer{}
			s.bufs[j.prefix] = b
		}
		b.data = append(append([]byte(nil), j.data...), b.data...)
		b.since = now
		s.mu.Unlock()
	}
	return errors.Join(errs...)
}

// putPart stores one part with the next key of its transcript: its time
// is after the transcript's last part (looked up once per transcript, so
// another writer's parts or a clock set back cannot put it before them).
func (s *Store) putPart(ctx context.Context, prefix string, data []byte) error {
	s.mu.Lock()
	last, known := s.lastMs[prefix]
	s.mu.Unlock()
	if !known {
		keys, err := s.partKeys(ctx, prefix)
		if err != nil {
			return err
		}
		if n := len(keys); n > 0 {
			last = partTime(keys[n-1])
		}
	}
	ms := max(time.Now().UnixMilli(), last+1)
	key := prefix + partName(ms, rand6())
	if _, err := s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: &s.cfg.Bucket, Key: &key, Body: bytes.NewReader(data),
		ContentType: aws.String("application/x-ndjson"), ContentLength: aws.Int64(int64(len(data))),
	}); err != nil {
		return err
	}
	s.mu.Lock()
	s.lastMs[prefix] = ms
	s.mu.Unlock()
	s.parts.Add(1)
	s.bytes.Add(int64(len(data)))
	return nil
}

// partTime is the epoch milliseconds in a part's key (0 when it has none).
func partTime(key string) int64 {
	name := key[strings.LastIndexByte(key, '/')+1:]
	digits, _, _ := strings.Cut(strings.TrimPrefix(name, "part-"), "-")
	ms, _ := strconv.ParseInt(digits, 10, 64)
	return ms
}

// partName is part-{epochMs13}-{rand6}.jsonl.
func partName(ms int64, r string) string { return fmt.Sprintf("part-%013d-%s.jsonl", ms, r) }

const rand36 = "0123456789abcdefghijklmnopqrstuvwxyz"

func rand6() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	for i := range b {
		b[i] = rand36[int(b[i])%len(rand36)]
	}
	return string(b[:])
}

// listKeys returns every key under prefix in key order (with a delimiter,
// the common prefixes instead).
func (s *Store) listKeys(ctx context.Context, prefix, delimiter string, each func(key string, mtime time.Time)) error {
	in := &s3.ListObjectsV2Input{Bucket: &s.cfg.Bucket, Prefix: &prefix}
	if delimiter != "" {
		in.Delimiter = &delimiter
	}
	p := s3.NewListObjectsV2Paginator(s.client, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("s3: list %s in bucket %s: %w", prefix, s.cfg.Bucket, err)
		}
		for _, cp := range page.CommonPrefixes {
			each(aws.ToString(cp.Prefix), time.Time{})
		}
		for _, o := range page.Contents {
			each(aws.ToString(o.Key), aws.ToTime(o.LastModified))
		}
	}
	return nil
}

// parts returns the keys of a transcript's parts in key order.
func (s *Store) partKeys(ctx context.Context, prefix string) ([]string, error) {
	var keys []string
	err := s.listKeys(ctx, prefix+"part-", "/", func(k string, mt time.Time) {
		if !mt.IsZero() && strings.HasSuffix(k, ".jsonl") {
			keys = append(keys, k)
		}
	})
	sort.Strings(keys)
	return keys, err
}

// findProject returns the project key under which ref is stored,
// preferring ref.CWD's; "" when none holds it.
func (s *Store) findProject(ctx context.Context, ref core.SessionRef, sub string) (string, error) {
	var first []string
	if ref.CWD != "" {
		first = append(first, claudedir.SanitizePath(ref.CWD))
	}
	s.mu.Lock()
	if pk, ok := s.projects[ref.SessionID]; ok {
		first = append(first, pk)
	}
	s.mu.Unlock()
	for _, pk := range first {
		keys, err := s.partKeys(ctx, s.subpathPrefix(pk, ref.SessionID, sub))
		if err != nil || len(keys) > 0 {
			return pk, err
		}
	}
	var projects []string
	if err := s.listKeys(ctx, s.cfg.Prefix, "/", func(k string, mt time.Time) {
		if mt.IsZero() {
			projects = append(projects, strings.TrimSuffix(k[len(s.cfg.Prefix):], "/"))
		}
	}); err != nil {
		return "", err
	}
	for _, pk := range projects {
		keys, err := s.partKeys(ctx, s.subpathPrefix(pk, ref.SessionID, sub))
		if err != nil {
			return "", err
		}
		if len(keys) > 0 {
			return pk, nil
		}
	}
	return "", nil
}

func (s *Store) get(ctx context.Context, key string) ([]byte, error) {
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.cfg.Bucket, Key: &key})
	if err != nil {
		return nil, fmt.Errorf("s3: get %s: %w", key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, fmt.Errorf("s3: read %s: %w", key, err)
	}
	return b, nil
}

// Load implements core.Loader: the transcript's parts in key order, lines
// as stored, each uuid served once (a part stored twice, by a retry, is
// said in the notes).
func (s *Store) Load(ctx context.Context, ref core.SessionRef) (*core.Transcript, error) {
	return s.load(ctx, ref, backend.Subpath(ref))
}

// LoadSubpath implements backend.SubpathLoader.
func (s *Store) LoadSubpath(ctx context.Context, sessionID, subpath string) (*core.Transcript, error) {
	return s.load(ctx, core.SessionRef{SessionID: sessionID}, subpath)
}

func (s *Store) load(ctx context.Context, ref core.SessionRef, sub string) (*core.Transcript, error) {
	what := ref.SessionID
	if sub != "" {
		what += "/" + sub
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("s3: load %s: %w", what, err)
	}
	pk, err := s.findProject(ctx, ref, sub)
	if err != nil {
		return nil, err
	}
	if pk == "" {
		return nil, fmt.Errorf("s3: %w: no parts for %s in bucket %s", core.ErrNotFound, what, s.cfg.Bucket)
	}
	keys, err := s.partKeys(ctx, s.subpathPrefix(pk, ref.SessionID, sub))
	if err != nil {
		return nil, err
	}
	t := &core.Transcript{Ref: ref}
	var once backend.UUIDOnce
	for _, k := range keys {
		data, err := s.get(ctx, k)
		if err != nil {
			return nil, err
		}
		for line := range bytes.SplitSeq(data, []byte("\n")) {
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			e, err := core.ParseEntryOwned(line)
			if err != nil {
				return nil, fmt.Errorf("s3: load %s: part %s: %w", what, k, err)
			}
			if once.Keep(&e) {
				t.Entries = append(t.Entries, e)
			}
		}
	}
	if once.Repeats > 0 {
		s.duplicates.Add(int64(once.Repeats))
		t.Notes = append(t.Notes, fmt.Sprintf("%d lines repeat a uuid already read; served once", once.Repeats))
	}
	if len(t.Entries) == 0 {
		return nil, fmt.Errorf("s3: %w: no lines for %s in bucket %s", core.ErrNotFound, what, s.cfg.Bucket)
	}
	return t, nil
}

// Seed implements core.Seeder.
func (s *Store) Seed(ctx context.Context, ref core.SessionRef) (core.Seed, error) {
	return backend.Seed(ctx, s, ref)
}

// ListSessions implements backend.Lister: each main transcript with the
// time of its newest part.
func (s *Store) ListSessions(ctx context.Context, projectKey string) ([]backend.Listed, error) {
	prefix := s.cfg.Prefix
	if projectKey != "" {
		prefix += projectKey + "/"
	}
	byKey := map[[2]string]int64{}
	err := s.listKeys(ctx, prefix, "", func(k string, mt time.Time) {
		seg := strings.Split(k[len(s.cfg.Prefix):], "/")
		if len(seg) != 3 || !strings.HasPrefix(seg[2], "part-") {
			return
		}
		id := [2]string{seg[0], seg[1]}
		byKey[id] = max(byKey[id], mt.UnixMilli())
	})
	if err != nil {
		return nil, err
	}
	out := make([]backend.Listed, 0, len(byKey))
	s.mu.Lock()
	for id, ms := range byKey {
		out = append(out, backend.Listed{ProjectKey: id[0], SessionID: id[1], MTime: ms})
		// Loads of listed sessions then look in one place, not in
		// every project.
		if _, ok := s.projects[id[1]]; !ok {
			s.projects[id[1]] = id[0]
		}
	}
	s.mu.Unlock()
	return out, nil
}

// ListSubagents implements backend.Lister.
func (s *Store) ListSubagents(ctx context.Context, projectKey, sessionID string) ([]string, error) {
	prefix := s.cfg.Prefix + projectKey + "/" + sessionID + "/subagents/"
	var out []string
	err := s.listKeys(ctx, prefix, "/", func(k string, mt time.Time) {
		if mt.IsZero() {
			if id, ok := backend.AgentOfSubpath("subagents/" + strings.TrimSuffix(k[len(prefix):], "/")); ok {
				out = append(out, id)
			}
		}
	})
	sort.Strings(out)
	return out, err
}

// DeleteSession implements backend.Deleter: every object under the
// session's folder of projectKey (its parts and its subpaths' parts), as
// the reference adapter's delete removes the prefix. Lines still buffered
// for the session are stored first, so that none is put after the delete
// or lost without a word.
func (s *Store) DeleteSession(ctx context.Context, projectKey, sessionID string) (int, error) {
	if err := s.putParts(ctx, true); err != nil {
		return 0, err
	}
	prefix := s.subpathPrefix(projectKey, sessionID, "")
	var keys []string
	if err := s.listKeys(ctx, prefix, "", func(k string, mt time.Time) {
		if !mt.IsZero() {
			keys = append(keys, k)
		}
	}); err != nil {
		return 0, err
	}
	for i, k := range keys {
		if _, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.cfg.Bucket, Key: &k}); err != nil {
			return i, fmt.Errorf("s3: delete %s: %w", k, err)
		}
	}
	s.mu.Lock()
	if s.projects[sessionID] == projectKey {
		delete(s.projects, sessionID)
	}
	s.mu.Unlock()
	return len(keys), nil
}
