package diff

import "fmt"

// unified returns the hunks of a unified diff of a and b, lines of text,
// with n lines of context: "@@ -l,s +l,s @@" headers, then lines that
// start with ' ', '-' or '+'. Objects are small, so a plain longest common
// subsequence over lines serves.
func unified(a, b []string, n int) []string {
	// lcs[i][j] is the length of the longest common subsequence of a[i:]
	// and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type edit struct {
		op   byte
		line string
		ai   int // index in a of this line, or of the next one of a
		bi   int
	}
	var edits []edit
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			edits = append(edits, edit{' ', a[i], i, j})
			i++
			j++
		case j < len(b) && (i == len(a) || lcs[i][j+1] > lcs[i+1][j]):
			edits = append(edits, edit{'+', b[j], i, j})
			j++
		default:
			edits = append(edits, edit{'-', a[i], i, j})
			i++
		}
	}
	var out []string
	for k := 0; k < len(edits); {
		if edits[k].op == ' ' {
			k++
			continue
		}
		// A hunk: from n lines before this change to n lines after the
		// last change that is within 2n lines of the one before.
		start := max(k-n, 0)
		end := k
		for end < len(edits) {
			if edits[end].op != ' ' {
				end++
				continue
			}
			next := end
			for next < len(edits) && edits[next].op == ' ' {
				next++
			}
			if next == len(edits) || next-end > 2*n {
				end = min(end+n, len(edits))
				break
			}
			end = next
		}
		aStart, bStart, aLen, bLen := edits[start].ai, edits[start].bi, 0, 0
		var body []string
		for _, e := range edits[start:end] {
			body = append(body, string(e.op)+e.line)
			if e.op != '+' {
				aLen++
			}
			if e.op != '-' {
				bLen++
			}
		}
		out = append(out, fmt.Sprintf("@@ -%s +%s @@", hunkRange(aStart, aLen), hunkRange(bStart, bLen)))
		out = append(out, body...)
		k = end
	}
	return out
}

// hunkRange is a hunk header's range: the first line (1-based; the line
// before an empty range) and, unless it is 1, the number of lines.
func hunkRange(start, length int) string {
	if length == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	if length == 1 {
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, length)
}
