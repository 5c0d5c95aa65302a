package plugins

// contains reports whether live holds every value of want. Maps may have
// more keys; lists match when want's items appear in live in order (the API
// server or another manager may add items); an empty or zero value in want
// matches a missing one, because the API server drops them. Numbers compare
// by value whatever their Go type.
func contains(live, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			return len(w) == 0 && isZero(live)
		}
		for k, wv := range w {
			lv, ok := l[k]
			if !ok {
				if isZero(wv) {
					continue
				}
				return false
			}
			if !contains(lv, wv) {
				return false
			}
		}
		return true
	case []any:
		l, ok := live.([]any)
		if !ok {
			return len(w) == 0 && isZero(live)
		}
		i := 0
		for _, wv := range w {
			for i < len(l) && !contains(l[i], wv) {
				i++
			}
			if i == len(l) {
				return false
			}
			i++
		}
		return true
	}
	if isZero(want) && isZero(live) {
		return true
	}
	if wf, ok := number(want); ok {
		lf, ok := number(live)
		return ok && wf == lf
	}
	return want == live
}

func isZero(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case bool:
		return !x
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	}
	if f, ok := number(v); ok {
		return f == 0
	}
	return false
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int64:
		return float64(x), true
	case int:
		return float64(x), true
	case int32:
		return float64(x), true
	}
	return 0, false
}
