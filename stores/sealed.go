package stores

import (
	"context"
	"fmt"
	"strings"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/seal"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/jsonl"
	"github.com/e0dc0000/scribe/transcript/fork"
)

// Sealed is a sealed archive (a jsonl sink with an encryption block), read
// decrypted in memory: its transcripts are decrypted once, when it is
// opened, into a tree of files that never reaches a disk, and read there
// as a plain archive's files are read. It can fork (the fork is written,
// sealed, through the archive's sink); renaming, tagging, archiving and
// the trash are not done on ciphertext.
type Sealed struct {
	reader
	// Report says what decrypting found: torn last frames skipped, damaged
	// transcripts left out.
	Report jsonl.ViewReport
	// sink opens the archive's sink, for a fork.
	sink func(ctx context.Context) (core.Sink, error)
}

var _ sessions.Forker = (*Sealed)(nil)

// OpenSealed decrypts the sealed archive in dir (named name) with o. sink,
// when not nil, opens the archive's sink for a fork.
func OpenSealed(ctx context.Context, name, dir string, o seal.Options, environ []string, sink func(context.Context) (core.Sink, error)) (*Sealed, error) {
	fsys, rep, err := jsonl.DecryptArchiveFS(ctx, dir, o, environ)
	if err != nil {
		if !strings.Contains(err.Error(), dir) {
			err = fmt.Errorf("sealed archive %s: %w", dir, err)
		}
		return nil, err
	}
	l := jsonl.Layout{ConfigDir: dir, FS: fsys}
	return &Sealed{reader: reader{l: l, name: name, where: l.ProjectsDir()}, Report: rep, sink: sink}, nil
}

// Damage is an error naming the transcripts decrypting left out as
// damaged (nil when none was): a command reads the rest, then fails.
func (s *Sealed) Damage() error {
	if n := len(s.Report.Damaged); n > 0 {
		return fmt.Errorf("%d sealed transcript(s) of %s are damaged and were left out: %w", n, s.l.ConfigDir, s.Report.Damaged[0])
	}
	return nil
}

// Fork writes the fork through the archive's sink, sealed.
func (s *Sealed) Fork(ctx context.Context, id string, opt fork.Options) (string, string, error) {
	if s.sink == nil {
		return "", "", sessions.Unsupported(s, "fork", "no sink to write the fork through")
	}
	res, _, err := s.l.Fork(ctx, id, "", opt)
	if err != nil {
		return "", "", err
	}
	if err := writeThrough(ctx, s.sink, res.Entries); err != nil {
		return "", "", fmt.Errorf("write the fork into %s: %w", s.name, err)
	}
	return res.SessionID, s.name, nil
}

// writeThrough writes entries through the sink open opens, flushes it and
// shuts it down.
func writeThrough(ctx context.Context, open func(context.Context) (core.Sink, error), entries []core.Entry) (err error) {
	sk, err := open(ctx)
	if err != nil {
		return err
	}
	if err := sk.Start(ctx); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	defer func() {
		if serr := sk.Shutdown(context.WithoutCancel(ctx)); err == nil {
			err = serr
		}
	}()
	if err := sk.Write(ctx, entries); err != nil {
		return err
	}
	return sk.Flush(ctx)
}
