package usage

import "time"

// Status is what a status line shows: the cost of one session and of
// today, and the active 5-hour block, each as the reports count it.
type Status struct {
	// SessionCost is the session's totalCost in the session report.
	SessionCost float64
	// TodayCost is today's totalCost in the daily report (days in the
	// given time zone).
	TodayCost float64
	// Block is the active block of the blocks report, with its burn rate
	// and projection; nil when no block is active.
	Block *Block
}

// StatusOf works out the status at now from every row read (not yet
// deduplicated): each figure is the one its report gives for the same
// rows.
func StatusOf(rows []Row, p *Pricer, session string, now time.Time, loc *time.Location) Status {
	var st Status
	today := now.In(loc).Format("20060102")
	daily, _ := Dedupe(rows, true)
	_, tot := Build(Daily, daily, p, Options{Loc: loc, Since: today, Until: today})
	st.TodayCost = tot.TotalCost
	kept, _ := Dedupe(rows, false)
	for _, r := range kept {
		if r.Session == session && r.ModelName() != "" {
			cost, _ := p.Cost(r)
			st.SessionCost += cost
		}
	}
	for _, b := range BuildBlocks(kept, p, now) {
		if b.IsActive {
			st.Block = &b
		}
	}
	return st
}
