package profilev1

import (
	"encoding/json"

	"k8s.io/apimachinery/pkg/runtime"
)

// roundTrip copies in to out through JSON. The types of this package are
// plain data and always encode, so the errors cannot happen.
func roundTrip[T runtime.Object](in, out T) runtime.Object {
	data, _ := json.Marshal(in)
	_ = json.Unmarshal(data, out)
	return out
}
