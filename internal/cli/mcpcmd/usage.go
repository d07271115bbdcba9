package mcpcmd

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/e0dc0000/scribe/internal/cli/usagecmd"
	"github.com/e0dc0000/scribe/usage"
)

type usageIn struct {
	Session string `json:"session,omitempty" jsonschema:"a session id or unique prefix: that session's usage (its subagents' included); empty for every session of the store"`
	Report  string `json:"report,omitempty" jsonschema:"daily (the default), weekly, monthly or session"`
	Since   string `json:"since,omitempty" jsonschema:"the first day counted, YYYY-MM-DD"`
	Until   string `json:"until,omitempty" jsonschema:"the last day counted, YYYY-MM-DD"`
}

type usageOut struct {
	Report string          `json:"report"`
	Rows   []*usage.Period `json:"rows"`
	Totals usage.Totals    `json:"totals"`
	// Note names what the figures are: tokens as ccusage counts them,
	// cost in USD from the price table.
	Note string `json:"note"`
}

// getUsage is get_usage: tokens and cost as scribe usage (and ccusage)
// count them, by day, week, month or session, for the store or one
// session.
func (m *mcpServer) getUsage(ctx context.Context, in usageIn) ([]byte, error) {
	if in.Report == "" {
		in.Report = usage.Daily
	}
	switch in.Report {
	case usage.Daily, usage.Weekly, usage.Monthly, usage.Session:
	default:
		return nil, fmt.Errorf("report %q: want daily, weekly, monthly or session", in.Report)
	}
	opt := usage.Options{Loc: time.Local}
	for _, d := range []struct {
		v   string
		dst *string
	}{{in.Since, &opt.Since}, {in.Until, &opt.Until}} {
		if d.v == "" {
			continue
		}
		day := strings.ReplaceAll(d.v, "-", "")
		if _, err := time.Parse("20060102", day); err != nil || len(day) != 8 {
			return nil, fmt.Errorf("%q is not a day: want YYYY-MM-DD", d.v)
		}
		*d.dst = day
	}
	var (
		sc  *usage.Scan
		err error
	)
	if in.Session != "" {
		id, rerr := m.st.Resolve(ctx, in.Session)
		if rerr != nil {
			return nil, rerr
		}
		sc, err = usagecmd.SessionScan(ctx, m.st, id)
	} else {
		sc, err = usagecmd.Scan(ctx, m.st, false)
	}
	if err != nil {
		return nil, err
	}
	kept, _ := usage.Dedupe(sc.Rows(), in.Report != usage.Session)
	pricer := m.pricer
	if pricer == nil {
		pricer = usage.NewPricer(nil)
	}
	rows, tot := usage.Build(in.Report, kept, pricer, opt)
	if rows == nil {
		rows = []*usage.Period{}
	}
	return m.finish(usageOut{Report: in.Report, Rows: rows, Totals: tot,
		Note: "tokens as ccusage counts them (a streamed message once); cost in USD from the built-in price table and the configuration's overrides"})
}
