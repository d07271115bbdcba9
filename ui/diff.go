package ui

import "strings"

// diffLine is one line of a diff: Op is ' ' (kept), '-' (removed) or '+'
// (added).
type diffLine struct {
	Op   string
	Text string
}

// maxDiffCells bounds the table of a line diff (lines before × lines
// after, once the common ends are cut): above it the diff is every old
// line removed, then every new line added.
const maxDiffCells = 4 << 20

// lineDiff is a line diff of before and after: their common first and
// last lines kept, the middle by longest common subsequence.
func lineDiff(before, after string) []diffLine {
	a, b := splitLines(before), splitLines(after)
	var pre, suf int
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	out := make([]diffLine, 0, len(a)+len(b))
	for _, l := range a[:pre] {
		out = append(out, diffLine{" ", l})
	}
	out = append(out, middleDiff(a[pre:len(a)-suf], b[pre:len(b)-suf])...)
	for _, l := range a[len(a)-suf:] {
		out = append(out, diffLine{" ", l})
	}
	return out
}

// middleDiff diffs what lies between the common ends.
func middleDiff(a, b []string) []diffLine {
	var out []diffLine
	if len(a)*len(b) > maxDiffCells || len(a) == 0 || len(b) == 0 {
		for _, l := range a {
			out = append(out, diffLine{"-", l})
		}
		for _, l := range b {
			out = append(out, diffLine{"+", l})
		}
		return out
	}
	// lcs[i][j] is the length of the longest common subsequence of a[i:]
	// and b[j:], in one slice.
	w := len(b) + 1
	lcs := make([]int32, (len(a)+1)*w)
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i*w+j] = lcs[(i+1)*w+j+1] + 1
			} else {
				lcs[i*w+j] = max(lcs[(i+1)*w+j], lcs[i*w+j+1])
			}
		}
	}
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			out = append(out, diffLine{" ", a[i]})
			i, j = i+1, j+1
		case lcs[(i+1)*w+j] >= lcs[i*w+j+1]:
			out = append(out, diffLine{"-", a[i]})
			i++
		default:
			out = append(out, diffLine{"+", b[j]})
			j++
		}
	}
	for ; i < len(a); i++ {
		out = append(out, diffLine{"-", a[i]})
	}
	for ; j < len(b); j++ {
		out = append(out, diffLine{"+", b[j]})
	}
	return out
}

// splitLines splits s into lines without their newlines ("" is none).
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
