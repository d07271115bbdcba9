package uicmd

import (
	"context"
	"time"

	"github.com/e0dc0000/scribe/internal/cli/usagecmd"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/stores"
	"github.com/e0dc0000/scribe/ui"
	"github.com/e0dc0000/scribe/usage"
)

// The usage page's figures come from the code of scribe usage: the same
// scan (through the usage cache for a local folder), deduplication,
// reports and prices, turned into the viewer's plain data.

// UsageFunc is the viewer's usage figures (ui.Options.Usage,
// ui.PortalOptions.Usage) as scribe usage counts them with pricer: the
// page's for the store, or one session's.
func UsageFunc(pricer *usage.Pricer) ui.UsageFunc {
	return func(ctx context.Context, st sessions.Store, q ui.UsageQuery) (*ui.UsageReport, error) {
		if q.Session != "" {
			return sessionUsage(ctx, st, pricer, q.Session)
		}
		sc, err := usagecmd.Scan(ctx, st, false)
		if err != nil {
			return nil, err
		}
		rep := storeUsage(sc.Rows(), pricer, q, time.Now())
		if of, err := usagecmd.SessionProjects(ctx, st); err == nil {
			for i := range rep.Sessions {
				rep.Sessions[i].Project = of[rep.Sessions[i].ID]
			}
		}
		return rep, nil
	}
}

// storeUsage is the report of the days q asks for: what `scribe usage
// daily --since --until --json` prints (its totals and days), the same
// rows by session, and the 5-hour blocks of `usage blocks` that start in
// those days.
func storeUsage(rows []*usage.Row, pricer *usage.Pricer, q ui.UsageQuery, now time.Time) *ui.UsageReport {
	opt := usage.Options{Loc: time.Local, Since: q.Since, Until: q.Until}
	daily, _ := usage.Dedupe(rows, true)
	days, tot := usage.Build(usage.Daily, daily, pricer, opt)
	rep := &ui.UsageReport{UsageTokens: tokensOf(tot.Tokens, tot.TotalTokens), Cost: tot.TotalCost, Unpriced: tot.UnpricedModels}
	for _, d := range days {
		rep.Days = append(rep.Days, ui.UsageDay{Day: d.Period, UsageTokens: tokensOf(d.Tokens, d.TotalTokens), Cost: d.TotalCost, Models: modelsOf(d)})
	}
	var within []*usage.Row
	for _, r := range daily {
		if inDays(r.Time, opt) {
			within = append(within, r)
		}
	}
	bySession, _ := usage.Build(usage.Session, within, pricer, usage.Options{Loc: time.Local})
	for _, s := range bySession {
		rep.Sessions = append(rep.Sessions, sessionOf(s))
	}
	blockRows, _ := usage.Dedupe(rows, false)
	for _, b := range usage.BuildBlocks(blockRows, pricer, now) {
		if !inDays(b.Start(), opt) {
			continue
		}
		rep.Blocks = append(rep.Blocks, ui.UsageBlock{Start: b.Start(), End: b.End(), Active: b.IsActive, Gap: b.IsGap,
			UsageTokens: ui.UsageTokens{Input: b.TokenCounts.InputTokens, Output: b.TokenCounts.OutputTokens,
				CacheCreate: b.TokenCounts.CacheCreationInputTokens, CacheRead: b.TokenCounts.CacheReadInputTokens, Total: b.TotalTokens},
			Cost: b.CostUSD, Models: b.Models})
	}
	return rep
}

// inDays reports whether t falls on a day opt keeps (as usage.Build
// keeps a daily report's rows).
func inDays(t time.Time, opt usage.Options) bool {
	day := t.In(opt.Loc).Format("20060102")
	return (opt.Since == "" || day >= opt.Since) && (opt.Until == "" || day <= opt.Until)
}

// sessionUsage is session id's row of `scribe usage session --json`: for
// a local folder every session is read (through the usage cache), as the
// report does, so that a message copied into several sessions counts
// where the report counts it; any other store reads the session alone.
func sessionUsage(ctx context.Context, st sessions.Store, pricer *usage.Pricer, id string) (*ui.UsageReport, error) {
	var (
		sc  *usage.Scan
		err error
	)
	if _, local := st.(*stores.Local); local {
		sc, err = usagecmd.Scan(ctx, st, false)
	} else {
		sc, err = usagecmd.SessionScan(ctx, st, id)
	}
	if err != nil {
		return nil, err
	}
	kept, _ := usage.Dedupe(sc.Rows(), false)
	periods, _ := usage.Build(usage.Session, kept, pricer, usage.Options{Loc: time.Local})
	rep := &ui.UsageReport{}
	for _, p := range periods {
		if p.Period == id {
			s := sessionOf(p)
			rep.Sessions = []ui.UsageSession{s}
			rep.UsageTokens, rep.Cost = s.UsageTokens, s.Cost
		}
	}
	return rep, nil
}

func sessionOf(p *usage.Period) ui.UsageSession {
	return ui.UsageSession{ID: p.Period, UsageTokens: tokensOf(p.Tokens, p.TotalTokens), Cost: p.TotalCost, Models: modelsOf(p)}
}

func tokensOf(t usage.Tokens, total int64) ui.UsageTokens {
	return ui.UsageTokens{Input: t.InputTokens, Output: t.OutputTokens, CacheCreate: t.CacheCreationTokens, CacheRead: t.CacheReadTokens, Total: total}
}

// modelsOf is a period's models, the costliest first.
func modelsOf(p *usage.Period) []ui.UsageModel {
	out := make([]ui.UsageModel, 0, len(p.ModelBreakdowns))
	for _, m := range p.ModelBreakdowns {
		t := m.Tokens
		out = append(out, ui.UsageModel{Model: m.ModelName, UsageTokens: tokensOf(t, t.InputTokens+t.OutputTokens+t.CacheCreationTokens+t.CacheReadTokens),
			Cost: m.Cost, Unpriced: m.MissingPricing})
	}
	return out
}
