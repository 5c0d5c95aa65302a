package apply

import (
	"encoding/json"
	"testing"
)

func TestContains(t *testing.T) {
	tests := []struct {
		reason string
		live   string
		want   string
		ours   string // our managed fields; empty: unknown
		match  bool
	}{
		{reason: "equal objects", live: `{"a":1,"b":"x"}`, want: `{"a":1,"b":"x"}`, match: true},
		{reason: "live has more fields (server defaults)", live: `{"a":1,"b":"x","c":true}`, want: `{"a":1}`, match: true},
		{reason: "a changed value", live: `{"a":2}`, want: `{"a":1}`, match: false},
		{reason: "a missing field", live: `{"b":1}`, want: `{"a":1}`, match: false},
		{reason: "an empty list the server dropped", live: `{"spec":{}}`, want: `{"spec":{"ingress":[]}}`, match: true},
		{reason: "an empty object the server dropped", live: `{"spec":{}}`, want: `{"spec":{"podSelector":{}}}`, match: true},
		{reason: "a false the server dropped", live: `{}`, want: `{"x":false}`, match: true},
		{reason: "an allow-all rule kept as an empty object", live: `{"ingress":[{}]}`, want: `{"ingress":[{}]}`, match: true},
		{reason: "a list item with server defaults", live: `{"l":[{"n":"a","d":1},{"n":"b","d":1}]}`, want: `{"l":[{"n":"a"},{"n":"b"}]}`, match: true},
		{reason: "items in another order", live: `{"l":["b","a"]}`, want: `{"l":["a","b"]}`, match: false},
		{reason: "an item added by someone else", live: `{"l":["a","x","b"]}`, want: `{"l":["a","b"]}`, match: true},
		{reason: "a missing item", live: `{"l":["a"]}`, want: `{"l":["a","b"]}`, match: false},
		{reason: "an int64 against a float64", live: `{"port":8080}`, want: `{"port":8080.0}`, match: true},
		{reason: "a string is not a number", live: `{"port":"8080"}`, want: `{"port":8080}`, match: false},
		{reason: "an empty list the server dropped, ours", live: `{"spec":{}}`, want: `{"spec":{"ingress":[]}}`, ours: `{"f:spec":{"f:ingress":{}}}`, match: true},
		{reason: "a zero removed by hand is no longer ours", live: `{"outlier":{"interval":"1s"}}`, want: `{"outlier":{"interval":"1s","consecutive5xxErrors":0}}`, ours: `{"f:outlier":{"f:interval":{}}}`, match: false},
		{reason: "a false removed by hand is no longer ours", live: `{}`, want: `{"automountServiceAccountToken":false}`, ours: `{"f:metadata":{}}`, match: false},
		{reason: "a zero kept by the server", live: `{"outlier":{"consecutive5xxErrors":0}}`, want: `{"outlier":{"consecutive5xxErrors":0}}`, ours: `{"f:outlier":{"f:consecutive5xxErrors":{}}}`, match: true},
		{reason: "inside list items ownership is not followed", live: `{"l":[{"n":"a"}]}`, want: `{"l":[{"n":"a","x":0}]}`, ours: `{"f:l":{}}`, match: true},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			var live, want map[string]any
			if err := json.Unmarshal([]byte(tt.live), &live); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tt.want), &want); err != nil {
				t.Fatal(err)
			}
			if tt.reason == "an int64 against a float64" {
				live["port"] = int64(8080)
			}
			var ours map[string]any
			if tt.ours != "" {
				if err := json.Unmarshal([]byte(tt.ours), &ours); err != nil {
					t.Fatal(err)
				}
			}
			if got := contains(live, want, ours, ours != nil); got != tt.match {
				t.Errorf("contains(%s, %s) = %v, want %v", tt.live, tt.want, got, tt.match)
			}
		})
	}
}
