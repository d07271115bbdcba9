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
func StatusOf(rows []*Row, p *Pricer, session string, now time.Time, loc *time.Location) Status {
	var st Status
	y, m, d := now.In(loc).Date()
	today := time.Date(y, m, d, 0, 0, 0, 0, loc)
	tomorrow := today.AddDate(0, 0, 1)
	kept, costFirst, _ := dedupeBoth(rows)
	for j, r := range kept {
		if r.Session == session && r.ModelName() != "" {
			cost, _ := p.Cost(r)
			st.SessionCost += cost
		}
		daily := r // the daily report's row of the message
		if cf, ok := costFirst[j]; ok {
			daily = cf
		}
		if !daily.Time.Before(today) && daily.Time.Before(tomorrow) && daily.ModelName() != "" {
			cost, _ := p.Cost(daily)
			st.TodayCost += cost
		}
	}
	for _, b := range BuildBlocks(kept, p, now) {
		if b.IsActive {
			st.Block = &b
		}
	}
	return st
}
