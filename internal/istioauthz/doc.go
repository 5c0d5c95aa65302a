// Package istioauthz decides, for tests, whether Istio would let a request
// reach a workload, given the ALLOW and DENY AuthorizationPolicies that
// select the workload. It follows Istio's documented semantics
// (https://istio.io/latest/docs/reference/config/security/authorization-policy/
// and .../security/conditions/):
//
//   - a request that matches any DENY policy is denied;
//   - else, when the workload has no ALLOW policy, it is allowed;
//   - else it is allowed when it matches an ALLOW policy, and denied when it
//     matches none. An ALLOW policy without rules matches nothing;
//   - a policy matches when one of its rules does; a rule matches when one
//     of its sources (from), one of its operations (to) and all of its
//     conditions (when) match, an empty list matching anything, so that an
//     empty rule matches every request;
//   - within a source or an operation every field set must match, a field
//     matching when one of its values does, a not-field when none does;
//   - a condition matches when one of its values matches the attribute and
//     none of its notValues does;
//   - a string value is matched exactly ("abc"), by prefix ("abc*"), by
//     suffix ("*abc") or by presence ("*": any value that is not empty; a
//     header that is present at all). A JWT claim matches when one of its
//     elements does. Header names are compared without regard to case.
//
// It knows the fields profilekit's plugins write: source principals and
// namespaces, operation methods and paths, and the condition keys
// request.headers[<name>], request.auth.claims[<name>], source.namespace and
// source.principal, each with its not-form. Any other field, key or action
// (CUSTOM, AUDIT, a provider, a targetRef) is an error rather than a guess,
// so that it can never allow what Istio would deny. The policies' selectors
// are not read: pass only those that select the workload.
package istioauthz
