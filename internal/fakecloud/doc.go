// Package fakecloud serves, on local HTTP servers, the few cloud API calls
// that profilekit's identity plugins make, in each API's own protocol, so
// that tests run the real cloud SDK clients against them:
//
//   - Google: the IAM policy of a service account (getIamPolicy,
//     setIamPolicy) in Google's JSON REST protocol, with etags;
//   - AWS: a role's trust policy (GetRole, UpdateAssumeRolePolicy) in IAM's
//     query protocol, form-encoded requests and XML answers;
//   - Azure: the federated identity credentials of a user-assigned managed
//     identity (create or update, get, delete) in ARM's REST protocol, over
//     TLS with a bearer token.
//
// Each server holds its state in memory, which tests seed and read back;
// logs every request and its answer (Log); and can be told to answer coming
// calls with a failure (Fail: throttling or no answer at all) or to run a
// hook between answering a call and sending the answer (After), which is
// where another writer's change lands in a read-modify-write race.
//
// The servers implement what the plugins rely on (etags, URL-encoded
// documents, error shapes and codes, 404 for what is missing), not the whole
// APIs.
package fakecloud
