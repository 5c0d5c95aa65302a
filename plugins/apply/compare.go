package apply

// contains reports whether live holds every value of want. Maps may have
// more keys; lists match when want's items appear in live in order (the API
// server or another manager may add items); numbers compare by value
// whatever their Go type.
//
// A zero or empty value in want matches a missing one when the API server
// dropped it on the way in (an empty list, a false without a pointer): that
// is when our last apply owns the field, which the set of fields our manager
// applied (ours, from the managed fields) tells. A zero value removed by hand
// is no longer ours, so it does not match and is put back. Inside lists, and
// when ours is unknown (a live object without managed fields), every missing
// zero value matches.
func contains(live, want any, ours map[string]any, known bool) bool {
	switch w := want.(type) {
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			return len(w) == 0 && isZero(live)
		}
		for k, wv := range w {
			sub, owned := ours["f:"+k]
			lv, ok := l[k]
			if !ok {
				if isZero(wv) && (!known || owned) {
					continue
				}
				return false
			}
			subset, _ := sub.(map[string]any)
			if !contains(lv, wv, subset, known && owned) {
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
			for i < len(l) && !contains(l[i], wv, nil, false) {
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
