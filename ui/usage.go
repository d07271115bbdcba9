package ui

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/e0dc0000/scribe/sessions"
)

// The usage page (/usage): tokens and cost of a store's sessions as
// `scribe usage` counts them, which the handler does not compute itself:
// Options.Usage gives them (scribe ui passes the usage package's reports),
// and the page draws them as inline SVG charts, each with a table of the
// same figures.

// UsageFunc gives a store's usage report (see Options.Usage).
type UsageFunc func(ctx context.Context, st sessions.Store, q UsageQuery) (*UsageReport, error)

// UsageQuery chooses a usage report's rows.
type UsageQuery struct {
	// Since and Until are the first and last days counted, YYYYMMDD, in
	// the local time zone ("": no bound).
	Since, Until string
	// Session, when set, asks for that session's usage only (the report's
	// Sessions hold it, Since and Until are not looked at).
	Session string
}

// UsageTokens are a figure's tokens of each kind.
type UsageTokens struct {
	Input, Output, CacheCreate, CacheRead, Total int64
}

// UsageModel is one model's part of a figure.
type UsageModel struct {
	Model string
	UsageTokens
	Cost float64
	// Unpriced: the model has no known price (its tokens cost nothing).
	Unpriced bool
}

// UsageDay is one day's usage (Day is YYYY-MM-DD).
type UsageDay struct {
	Day string
	UsageTokens
	Cost   float64
	Models []UsageModel
}

// UsageSession is one session's usage (subagents included).
type UsageSession struct {
	ID string
	// Project is the name of the project folder holding the session, when
	// known: the usage page counts a session the listing leaves out (no
	// prompt of its own, say) under that folder's project.
	Project string
	UsageTokens
	Cost   float64
	Models []UsageModel
}

// UsageBlock is one 5-hour billing window, or the gap between two.
type UsageBlock struct {
	Start, End  time.Time
	Active, Gap bool
	UsageTokens
	Cost   float64
	Models []string
}

// UsageReport is a store's usage over the days asked for: its totals, by
// day, by session (whose sums are the totals) and the 5-hour blocks that
// start in those days.
type UsageReport struct {
	UsageTokens
	Cost     float64
	Unpriced []string
	Days     []UsageDay
	Sessions []UsageSession
	Blocks   []UsageBlock
}

// usageDays is how many days the page shows when not told.
const usageDays = 30

// usagePage is the usage page's body.
type usagePage struct {
	Store        string
	Since, Until string // YYYY-MM-DD
	Report       *UsageReport
	Daily        dailyChart
	Projects     projectChart
	Blocks       blockChart
}

// usage serves /usage: ?since=&until= (YYYY-MM-DD; the last 30 days when
// not given), ?store=.
func (h *Handler) usage(w http.ResponseWriter, r *http.Request) {
	st, name, err := h.store(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	since, until, err := usageRange(r.FormValue("since"), r.FormValue("until"), time.Now())
	if err != nil {
		h.fail(w, r, &httpError{http.StatusBadRequest, err.Error()})
		return
	}
	rep, err := h.opt.Usage(r.Context(), st, UsageQuery{Since: since.Format("20060102"), Until: until.Format("20060102")})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	projects := h.projectsOf(r.Context(), name, st, rep.Sessions)
	colors := modelColors(rep)
	p := usagePage{Store: name, Since: since.Format(time.DateOnly), Until: until.Format(time.DateOnly), Report: rep,
		Daily: newDailyChart(rep.Days, since, until, colors), Projects: newProjectChart(projects), Blocks: newBlockChart(rep.Blocks)}
	h.render(w, "usage", h.frame("Usage", name, p))
}

// usageRange reads ?since and ?until (YYYY-MM-DD or YYYYMMDD): until
// defaults to today, since to 29 days before until.
func usageRange(sinceArg, untilArg string, now time.Time) (since, until time.Time, err error) {
	day := func(what, v string) (time.Time, error) {
		t, err := time.ParseInLocation("20060102", strings.ReplaceAll(v, "-", ""), time.Local)
		if err != nil || len(strings.ReplaceAll(v, "-", "")) != 8 {
			return t, fmt.Errorf("%s %q: want YYYY-MM-DD", what, v)
		}
		return t, nil
	}
	until = time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.Local)
	if untilArg != "" {
		if until, err = day("until", untilArg); err != nil {
			return
		}
	}
	since = until.AddDate(0, 0, -(usageDays - 1))
	if sinceArg != "" {
		if since, err = day("since", sinceArg); err != nil {
			return
		}
	}
	if since.After(until) {
		err = fmt.Errorf("since %s is after until %s", since.Format(time.DateOnly), until.Format(time.DateOnly))
	}
	return
}

// projectUsage is one project's cost: the sessions that ran in its
// folder.
type projectUsage struct {
	Name, Path string // the folder's last element and its path
	UsageTokens
	Cost     float64
	Sessions int
}

// projectsOf sums sessions by the project the store's listing gives each;
// a session it does not list counts under the project of its folder (the
// path the listing gives the folder's other sessions, else the folder's
// name), and only one whose folder is not known under "(unknown)". The
// costliest first.
func (h *Handler) projectsOf(ctx context.Context, name string, st sessions.Store, ss []UsageSession) []projectUsage {
	where, folders := map[string]string{}, map[string]string{}
	if rows, err := h.rows(ctx, name, st, sorts[0].Key); err == nil {
		for _, r := range rows {
			where[r.ID] = r.ProjectPath
			if r.folder != "" && folders[r.folder] == "" {
				folders[r.folder] = r.ProjectPath
			}
		}
	}
	byPath := map[string]*projectUsage{}
	var out []*projectUsage
	for _, s := range ss {
		path, ok := where[s.ID]
		switch {
		case ok:
		case folders[s.Project] != "":
			path = folders[s.Project]
		case s.Project != "":
			path = s.Project
		default:
			path = "(unknown)"
		}
		p := byPath[path]
		if p == nil {
			p = &projectUsage{Name: filepath.Base(path), Path: path}
			byPath[path] = p
			out = append(out, p)
		}
		p.UsageTokens.add(s.UsageTokens)
		p.Cost += s.Cost
		p.Sessions++
	}
	slices.SortStableFunc(out, func(a, b *projectUsage) int {
		if a.Cost != b.Cost {
			return cmpFloat(b.Cost, a.Cost)
		}
		return strings.Compare(a.Path, b.Path)
	})
	res := make([]projectUsage, len(out))
	for i, p := range out {
		res[i] = *p
	}
	return res
}

func (t *UsageTokens) add(o UsageTokens) {
	t.Input += o.Input
	t.Output += o.Output
	t.CacheCreate += o.CacheCreate
	t.CacheRead += o.CacheRead
	t.Total += o.Total
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// modelColors numbers the report's models (by name) for their colour in
// the charts (the style sheet has usageColors of them, used in turn).
func modelColors(rep *UsageReport) map[string]int {
	seen := map[string]bool{}
	var names []string
	for _, d := range rep.Days {
		for _, m := range d.Models {
			if !seen[m.Model] {
				seen[m.Model] = true
				names = append(names, m.Model)
			}
		}
	}
	slices.Sort(names)
	out := make(map[string]int, len(names))
	for i, n := range names {
		out[n] = i % usageColors
	}
	return out
}

// sessionUsagePart serves /sessions/{id}/usage: the session's usage as a
// fragment of its page's facts.
func (h *Handler) sessionUsagePart(w http.ResponseWriter, r *http.Request) {
	st, _, id, err := h.sessionOf(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.render(w, "session-usage", h.sessionUsage(r.Context(), st, id))
}

// sessionUsage is a session's usage for its page (nil when the handler
// has no Usage function, or the session has none).
func (h *Handler) sessionUsage(ctx context.Context, st sessions.Store, id string) *UsageSession {
	if h.opt.Usage == nil {
		return nil
	}
	rep, err := h.opt.Usage(ctx, st, UsageQuery{Session: id})
	if err != nil || rep == nil {
		return nil
	}
	for i := range rep.Sessions {
		if rep.Sessions[i].ID == id {
			return &rep.Sessions[i]
		}
	}
	return nil
}
