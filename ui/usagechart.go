package ui

import (
	"slices"
	"strconv"
	"strings"
	"time"
)

// The usage page's charts: their geometry is computed here, in SVG user
// units, and the template only writes numbers and escaped text into
// fixed markup (no attribute is made of a string from the report).

// usageColors is how many model colours the style sheet has (.m0 …).
const usageColors = 8

// Chart geometry, in user units (the SVG scales to the page's width).
const (
	chartW      = 720.0 // the whole chart
	plotTop     = 8.0   // above the highest bar
	plotH       = 180.0 // the tallest bar
	axisH       = 22.0  // the labels under the bars
	projectRowH = 22.0  // one project's row
	projectLabW = 210.0 // the projects' names
	projectBarW = 400.0 // the costliest project's bar
)

// barPart is one model's part of a day's bar.
type barPart struct {
	Y, H  float64
	Color int
	Model string
	Cost  float64
}

// dayBar is a day's bar, its models stacked, the costliest at the bottom.
type dayBar struct {
	Day  string
	X, W float64
	Cost float64
	Segs []barPart
}

// legendItem is a model and its colour.
type legendItem struct {
	Model string
	Color int
}

// axisLabel is a label under (or beside) a chart.
type axisLabel struct {
	X, Y float64
	Text string
}

// dailyChart is the daily cost, stacked by model: a bar per day with
// usage, at its day's place in the range (days without usage leave their
// place empty).
type dailyChart struct {
	Width, Height, Base float64
	Max                 float64
	Bars                []dayBar
	Legend              []legendItem
	Labels              []axisLabel
}

func newDailyChart(days []UsageDay, since, until time.Time, colors map[string]int) dailyChart {
	n := int(until.Sub(since).Hours()/24+0.5) + 1
	c := dailyChart{Width: chartW, Height: plotTop + plotH + axisH, Base: plotTop + plotH}
	for _, d := range days {
		c.Max = max(c.Max, d.Cost)
	}
	slot := chartW / float64(n)
	for _, d := range days {
		t, err := time.ParseInLocation(time.DateOnly, d.Day, time.Local)
		if err != nil {
			continue
		}
		i := int(t.Sub(since).Hours()/24 + 0.5)
		b := dayBar{Day: d.Day, X: float64(i)*slot + slot*0.1, W: slot * 0.8, Cost: d.Cost}
		y := c.Base
		for _, m := range d.Models { // the costliest first (usage.Build's order)
			h := scale(m.Cost, c.Max, plotH)
			y -= h
			b.Segs = append(b.Segs, barPart{Y: y, H: h, Color: colors[m.Model], Model: m.Model, Cost: m.Cost})
		}
		c.Bars = append(c.Bars, b)
	}
	for name, i := range colors {
		c.Legend = append(c.Legend, legendItem{Model: name, Color: i})
	}
	slices.SortFunc(c.Legend, func(a, b legendItem) int { return strings.Compare(a.Model, b.Model) })
	c.Labels = []axisLabel{{X: 0, Y: c.Height - 6, Text: since.Format(time.DateOnly)},
		{X: chartW, Y: c.Height - 6, Text: until.Format(time.DateOnly)}}
	return c
}

// scale is v's share of most, in units of full (0 when most is 0).
func scale(v, most, full float64) float64 {
	if most <= 0 || v <= 0 {
		return 0
	}
	return v / most * full
}

// projectBar is a project's row of the cost by project.
type projectBar struct {
	projectUsage
	Label   string // the name, cut to fit
	Y, W, X float64
}

// projectChart is the cost by project: a horizontal bar each, the
// costliest first.
type projectChart struct {
	Width, Height float64
	Max           float64
	Bars          []projectBar
}

func newProjectChart(ps []projectUsage) projectChart {
	c := projectChart{Width: chartW, Height: projectRowH*float64(len(ps)) + 4}
	for _, p := range ps {
		c.Max = max(c.Max, p.Cost)
	}
	for i, p := range ps {
		w := scale(p.Cost, c.Max, projectBarW)
		c.Bars = append(c.Bars, projectBar{projectUsage: p, Label: clip(p.Name, 30), Y: float64(i)*projectRowH + 2,
			X: projectLabW, W: w})
	}
	return c
}

// blockBar is a 5-hour block's bar, or a gap's mark.
type blockBar struct {
	UsageBlock
	X, W, Y, H float64
	X2         float64 // X+W
}

// blockChart is the 5-hour blocks in time order: a bar per block (the
// active one marked), a gap between two blocks a dashed mark half a
// block wide.
type blockChart struct {
	Width, Height, Base float64
	Max                 float64
	Bars                []blockBar
	Labels              []axisLabel
}

func newBlockChart(blocks []UsageBlock) blockChart {
	c := blockChart{Width: chartW, Height: plotTop + plotH + axisH, Base: plotTop + plotH}
	units := 0.0
	for _, b := range blocks {
		c.Max = max(c.Max, b.Cost)
		units += blockUnits(b)
	}
	if units == 0 {
		return c
	}
	unit := min(chartW/units, 40)
	x := 0.0
	for _, b := range blocks {
		w := blockUnits(b) * unit
		bar := blockBar{UsageBlock: b, X: x, W: w}
		if !b.Gap {
			bar.X, bar.W = x+w*0.1, w*0.8
			bar.H = scale(b.Cost, c.Max, plotH)
		}
		bar.Y, bar.X2 = c.Base-bar.H, bar.X+bar.W
		c.Bars = append(c.Bars, bar)
		x += w
	}
	first, last := blocks[0].Start, blocks[len(blocks)-1].Start
	c.Labels = []axisLabel{{X: 0, Y: c.Height - 6, Text: first.Local().Format("2006-01-02 15:04")},
		{X: x, Y: c.Height - 6, Text: last.Local().Format("2006-01-02 15:04")}}
	return c
}

// blockUnits is how wide a block is drawn: a gap half a block.
func blockUnits(b UsageBlock) float64 {
	if b.Gap {
		return 0.5
	}
	return 1
}

// num writes a coordinate (two decimals at most).
func num(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

// usd writes a cost for people: dollars and cents.
func usd(v float64) string { return "$" + strconv.FormatFloat(v, 'f', 2, 64) }

// exact writes a figure in full (a table cell's data-value).
func exact(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// thousands writes a count with thousands separators.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	out := make([]byte, 0, len(s)+len(s)/3)
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}
