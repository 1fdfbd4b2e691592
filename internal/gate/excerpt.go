package gate

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// What a question shows of the cell's code.
const (
	// codeContext is how many lines a question shows each side of the
	// line of the call.
	codeContext = 3
	// maxCodeLines is how many lines a question shows at most, to reach
	// the lines of the other calls of a batch.
	maxCodeLines = 12
	// maxCodeLine is how much of one line of code a question shows; a
	// longer line is cut, and its size said.
	maxCodeLine = 160
)

// codeAround is the cell's code as a question shows it: the lines around
// the first call's line (calls are in the order of their lines) (the head of the cell when the line is not one of
// its lines), each call's line marked ">", each line cut to maxCodeLine
// bytes with its size, every character that does not print escaped, and
// the lines left out above and below counted with their bytes. The lines
// are the sandbox's word: a wrong one shows other lines of the same cell.
func codeAround(code string, calls []AskedCall) string {
	if code == "" {
		return ""
	}
	lines := strings.Split(strings.TrimSuffix(code, "\n"), "\n")
	marks := map[int]bool{}
	at, end := 0, 0
	for _, c := range calls {
		if c.Line >= 1 && c.Line <= len(lines) {
			marks[c.Line] = true
			if at == 0 {
				at = c.Line
			}
			end = max(end, c.Line)
		}
	}
	first, last := 1, min(len(lines), 2*codeContext+1)
	var b strings.Builder
	if at == 0 {
		fmt.Fprintf(&b, "The cell's code (%d lines; the line of the call is not known):\n", len(lines))
	} else {
		first = max(1, at-codeContext)
		last = min(len(lines), max(at, min(end, first+maxCodeLines-1-codeContext))+codeContext)
		fmt.Fprintf(&b, "The cell's code, line %d of %d:\n", at, len(lines))
	}
	if first > 1 {
		fmt.Fprintf(&b, "    … (%s above)\n", counted(lines[:first-1]))
	}
	width := len(strconv.Itoa(last))
	for n := first; n <= last; n++ {
		mark := " "
		if marks[n] {
			mark = ">"
		}
		fmt.Fprintf(&b, "%s %*d | %s\n", mark, width, n, showLine(strings.TrimSuffix(lines[n-1], "\r")))
	}
	if last < len(lines) {
		fmt.Fprintf(&b, "    … (%s more)\n", counted(lines[last:]))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// counted says how many lines and bytes (each with its newline) lines are.
func counted(lines []string) string {
	n := 0
	for _, l := range lines {
		n += len(l) + 1
	}
	word := "lines"
	if len(lines) == 1 {
		word = "line"
	}
	return fmt.Sprintf("%d %s, %s bytes", len(lines), word, thousands(n))
}

// showLine is one line of code, cut to maxCodeLine bytes (at a character
// boundary) with its size when longer, every character that does not
// print escaped.
func showLine(l string) string {
	if len(l) <= maxCodeLine {
		return Printable(l)
	}
	n := maxCodeLine
	for n > 0 && !utf8.RuneStart(l[n]) {
		n--
	}
	return Printable(l[:n]) + fmt.Sprintf("… (%s bytes)", thousands(len(l)))
}
