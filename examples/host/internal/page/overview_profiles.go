package page

// This file holds the overview's list of Profiles: each Profile's state,
// the filter and search, the order (failing first) and the counts by
// plugin.

import (
	"cmp"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
)

// A Profile's state in the overview, in the order it lists them: failing
// (some plugin's condition is False), pending (none is False, and it is not
// Ready yet: a plugin waits or has not reported) and ready.
const (
	stateFailing = "failing"
	statePending = "pending"
	stateReady   = "ready"
)

var stateRank = map[string]int{stateFailing: 0, statePending: 1, stateReady: 2}

// filter is what the query parameters ask for.
type filter struct {
	// Query is searched for in the Profile's name, owner, labels and its
	// plugins' kinds, titles and messages, ignoring case.
	Query string
	// State keeps the Profiles in that state; with Plugin, those whose
	// condition of that plugin is in it.
	State string
	// Plugin keeps the Profiles the plugin of this kind reports on.
	Plugin string
	// Selector keeps the Profiles whose labels it selects.
	Selector string
	// Page is the page of the list shown, from 1.
	Page int
	// Problem says why the filter matches nothing (a selector that does
	// not parse).
	Problem string
	sel     labels.Selector
}

// parseFilter reads the query parameters; values it does not know match
// nothing rather than everything.
func parseFilter(q url.Values) filter {
	f := filter{Query: strings.TrimSpace(q.Get("q")), State: q.Get("state"), Plugin: q.Get("plugin"), Selector: strings.TrimSpace(q.Get("selector")), Page: 1}
	if n, err := strconv.Atoi(q.Get("page")); err == nil && n > 1 {
		f.Page = n
	}
	if _, ok := stateRank[f.State]; f.State != "" && !ok {
		f.Problem = "state: want failing, pending or ready"
	}
	if f.Selector != "" {
		var err error
		if f.sel, err = labels.Parse(f.Selector); err != nil {
			f.Problem = "selector: " + err.Error()
		}
	}
	return f
}

// URL returns the overview's address with this filter at page n.
func (f filter) URL(n int) string {
	q := url.Values{}
	for k, v := range map[string]string{"q": f.Query, "state": f.State, "plugin": f.Plugin, "selector": f.Selector} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if n > 1 {
		q.Set("page", strconv.Itoa(n))
	}
	if len(q) == 0 {
		return "overview"
	}
	return "overview?" + q.Encode()
}

// profileRow is one Profile in the list.
type profileRow struct {
	Name, Owner, State string
	Deleting           bool
	// Ready is the Profile-level condition in plain words; nil when the
	// Profile has none.
	Ready *Plugin
	// Failing are the plugins whose condition is False, Waiting those
	// whose is Unknown.
	Failing, Waiting []Plugin
}

// pluginCount counts one plugin's conditions over every Profile.
type pluginCount struct {
	Kind, Title             string
	Failing, Pending, Ready int
	// Link lists the Profiles the plugin fails on.
	Link string
}

// profilesView is the list as one view shows it.
type profilesView struct {
	// Total, Failing, Pending and Ready count every Profile in the cache.
	Total, Failing, Pending, Ready int
	// Matched counts those the filter keeps; Rows are this page's, From
	// to To of them (from 1).
	Matched, From, To int
	Rows              []profileRow
	// Prev and Next are the neighbouring pages' addresses, when there are.
	Prev, Next string
	// Plugins count the conditions of each plugin kind, by kind.
	Plugins []pluginCount
}

// profilesOf returns the list of profiles that filter f keeps, failing
// first, then by name, and the page of size rows that f asks for.
func profilesOf(profiles []kubeflowv1.Profile, f filter, size int) profilesView {
	var v profilesView
	counts := map[string]*pluginCount{}
	type entry struct {
		p    *kubeflowv1.Profile
		st   string
		rank int
	}
	var kept []entry
	for i := range profiles {
		p := &profiles[i]
		st := stateOf(p.Status.Conditions)
		v.Total++
		switch st {
		case stateFailing:
			v.Failing++
		case statePending:
			v.Pending++
		default:
			v.Ready++
		}
		for _, c := range p.Status.Conditions {
			if c.Type == plugins.ConditionReady {
				continue
			}
			pc := counts[c.Type]
			if pc == nil {
				e := explain(kubeflowv1.ProfileCondition{Type: c.Type})
				pc = &pluginCount{Kind: e.Kind, Title: e.Title, Link: filter{Plugin: e.Kind, State: stateFailing}.URL(1)}
				counts[c.Type] = pc
			}
			switch c.Status {
			case plugins.ConditionFalse:
				pc.Failing++
			case plugins.ConditionTrue:
				pc.Ready++
			default:
				pc.Pending++
			}
		}
		if f.keeps(p, st) {
			kept = append(kept, entry{p, st, stateRank[st]})
		}
	}
	for _, pc := range counts {
		v.Plugins = append(v.Plugins, *pc)
	}
	slices.SortFunc(v.Plugins, func(a, b pluginCount) int {
		return cmp.Or(cmp.Compare(b.Failing, a.Failing), cmp.Compare(b.Pending, a.Pending), strings.Compare(a.Kind, b.Kind))
	})
	slices.SortFunc(kept, func(a, b entry) int {
		return cmp.Or(cmp.Compare(a.rank, b.rank), strings.Compare(a.p.Name, b.p.Name))
	})
	v.Matched = len(kept)
	start := min((f.Page-1)*size, len(kept))
	end := min(start+size, len(kept))
	for _, e := range kept[start:end] {
		v.Rows = append(v.Rows, rowOf(e.p, e.st))
	}
	if end > start {
		v.From, v.To = start+1, end
	}
	if f.Page > 1 {
		v.Prev = f.URL(f.Page - 1)
	}
	if end < len(kept) {
		v.Next = f.URL(f.Page + 1)
	}
	return v
}

// stateOf returns the state of a Profile with these conditions.
func stateOf(conds []kubeflowv1.ProfileCondition) string {
	ready := false
	for _, c := range conds {
		switch {
		case c.Type == plugins.ConditionReady:
			ready = c.Status == plugins.ConditionTrue
		case c.Status == plugins.ConditionFalse:
			return stateFailing
		}
	}
	if ready {
		return stateReady
	}
	return statePending
}

// keeps reports whether f keeps Profile p, whose state is st.
func (f filter) keeps(p *kubeflowv1.Profile, st string) bool {
	if f.Problem != "" {
		return false
	}
	if f.sel != nil && !f.sel.Matches(labels.Set(p.Labels)) {
		return false
	}
	if f.Plugin != "" {
		c := plugins.FindCondition(p.Status.Conditions, plugins.ConditionTypeFor(f.Plugin))
		if c == nil {
			return false
		}
		st = stateOfStatus(c.Status)
	}
	if f.State != "" && st != f.State {
		return false
	}
	return f.Query == "" || matches(p, strings.ToLower(f.Query))
}

// stateOfStatus is the state one plugin's condition status stands for.
func stateOfStatus(status string) string {
	switch status {
	case plugins.ConditionFalse:
		return stateFailing
	case plugins.ConditionTrue:
		return stateReady
	}
	return statePending
}

// matches reports whether q, in lower case, is in p's name, owner, labels
// (key=value) or its plugins' kinds, titles or messages.
func matches(p *kubeflowv1.Profile, q string) bool {
	has := func(s string) bool { return strings.Contains(strings.ToLower(s), q) }
	if has(p.Name) || has(p.Spec.Owner.Name) {
		return true
	}
	for k, v := range p.Labels {
		if has(k + "=" + v) {
			return true
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == plugins.ConditionReady {
			continue
		}
		e := explain(c)
		if has(e.Kind) || has(e.Title) || has(c.Message) {
			return true
		}
	}
	return false
}

// rowOf puts Profile p, in state st, into plain words.
func rowOf(p *kubeflowv1.Profile, st string) profileRow {
	r := profileRow{Name: p.Name, Owner: p.Spec.Owner.Name, State: st, Deleting: !p.DeletionTimestamp.IsZero()}
	for _, c := range p.Status.Conditions {
		e := explain(c)
		switch {
		case c.Type == plugins.ConditionReady:
			r.Ready = &e
		case c.Status == plugins.ConditionFalse:
			r.Failing = append(r.Failing, e)
		case c.Status != plugins.ConditionTrue:
			r.Waiting = append(r.Waiting, e)
		}
	}
	byKind := func(a, b Plugin) int { return strings.Compare(a.Kind, b.Kind) }
	slices.SortFunc(r.Failing, byKind)
	slices.SortFunc(r.Waiting, byKind)
	return r
}
