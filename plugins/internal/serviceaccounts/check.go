package serviceaccounts

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Check checks the service accounts a plugin's config names
// in its serviceAccounts field, such as the workload service accounts the
// cloud identity plugins annotate: at least one, each a valid service
// account name. Each problem is one line of the error, which names the
// value as serviceAccounts[<index>] "<value>".
func Check(names []string) error {
	if len(names) == 0 {
		return errors.New("serviceAccounts: at least one is needed")
	}
	var errs []error
	for i, sa := range names {
		if msgs := validation.IsDNS1123Subdomain(sa); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("%s %q: %s", field.NewPath("serviceAccounts").Index(i), sa, strings.Join(msgs, "; ")))
		}
	}
	return errors.Join(errs...)
}
