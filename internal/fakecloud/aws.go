package fakecloud

import (
	"crypto/rand"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// AWSNamespace is the XML namespace of IAM's answers.
const AWSNamespace = "https://iam.amazonaws.com/doc/2010-05-08/"

// AWSTrustPolicyLimit is IAM's default limit on the size of a role's trust
// policy, in characters without white space.
const AWSTrustPolicyLimit = 2048

// AWS serves the role trust policy calls of AWS IAM (GetRole and
// UpdateAssumeRolePolicy) in IAM's query protocol, as the
// aws-sdk-go-v2 iam client sends them: a form-encoded POST to / with
// Action, Version=2010-05-08 and the call's parameters, signed with
// Signature Version 4 for the iam service.
//
// Answers are IAM's XML documents in AWSNamespace with a RequestId; GetRole
// returns the trust policy URL-encoded (RFC 3986), as IAM does. Errors are
// IAM's ErrorResponse documents: NoSuchEntity (404) for a role it does not
// hold, MalformedPolicyDocument (400) for a document that is not a JSON
// object with a Statement, LimitExceeded (409) for one over
// AWSTrustPolicyLimit, Throttling (400) for a caller over its rate, and
// MissingAuthenticationToken (403) for an unsigned request.
type AWS struct {
	server

	mu    sync.Mutex
	roles map[string]*awsRole
}

type awsRole struct {
	account, path, id, doc string
	created                time.Time
	tags                   map[string]string
}

// NewAWS starts an AWS IAM server that holds no role; point the client at
// its URL (iam.Options.BaseEndpoint).
func NewAWS(t testing.TB) *AWS {
	a := &AWS{roles: map[string]*awsRole{}}
	a.start(t, a, false)
	return a
}

// AddRole adds the role of arn (arn:aws:iam::<account>:role[/<path>]/<name>)
// with trust policy doc.
func (a *AWS) AddRole(arn, doc string) {
	account, path, name, ok := awsRoleARN(arn)
	if !ok {
		panic("fakecloud: not a role ARN: " + arn)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.roles[name] = &awsRole{account: account, path: path, id: "AROA" + randomID(17), doc: doc, created: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)}
}

// TagRole tags the named role, which AddRole added, with key=value; GetRole
// returns its tags.
func (a *AWS) TagRole(name, key, value string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	r, ok := a.roles[name]
	if !ok {
		panic("fakecloud: no role " + name)
	}
	if r.tags == nil {
		r.tags = map[string]string{}
	}
	r.tags[key] = value
}

// TrustPolicy returns the trust policy document the server holds for the
// named role, and false when it holds no such role.
func (a *AWS) TrustPolicy(name string) (string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	r, ok := a.roles[name]
	if !ok {
		return "", false
	}
	return r.doc, true
}

func awsRoleARN(arn string) (account, path, name string, ok bool) {
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" || parts[2] != "iam" {
		return "", "", "", false
	}
	rest, ok := strings.CutPrefix(parts[5], "role/")
	if !ok {
		return "", "", "", false
	}
	i := strings.LastIndex(rest, "/")
	return parts[4], "/" + rest[:i+1], rest[i+1:], rest[i+1:] != ""
}

func (a *AWS) call(r *http.Request, body []byte) string {
	if r.Method != http.MethodPost || r.URL.Path != "/" {
		return ""
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return ""
	}
	switch act := form.Get("Action"); act {
	case "GetRole", "UpdateAssumeRolePolicy":
		return act
	}
	return ""
}

func (a *AWS) answer(call string, r *http.Request, body []byte) reply {
	// Signature Version 4, scoped to the iam service; the signature itself
	// is not checked.
	if auth := r.Header.Get("Authorization"); !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=") || !strings.Contains(auth, "/iam/aws4_request") {
		return awsError(http.StatusForbidden, "Sender", "MissingAuthenticationToken", "Request is missing Authentication Token")
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/x-www-form-urlencoded") {
		return awsError(http.StatusBadRequest, "Sender", "InvalidParameterValue", "Content-Type "+ct+" is not supported")
	}
	form, _ := url.ParseQuery(string(body))
	if v := form.Get("Version"); v != "2010-05-08" {
		return awsError(http.StatusBadRequest, "Sender", "InvalidAction", "Could not find operation "+call+" for version "+v)
	}
	name := form.Get("RoleName")
	a.mu.Lock()
	defer a.mu.Unlock()
	role, ok := a.roles[name]
	if !ok {
		return awsError(http.StatusNotFound, "Sender", "NoSuchEntity", fmt.Sprintf("The role with name %s cannot be found.", name))
	}
	if call == "GetRole" {
		return a.getRole(name, role)
	}
	doc := form.Get("PolicyDocument")
	var parsed struct {
		Statement json.RawMessage
	}
	if err := json.Unmarshal([]byte(doc), &parsed); err != nil || len(parsed.Statement) == 0 {
		return awsError(http.StatusBadRequest, "Sender", "MalformedPolicyDocument", "This policy contains invalid Json")
	}
	if n := len(strings.Join(strings.Fields(doc), "")); n > AWSTrustPolicyLimit {
		return awsError(http.StatusConflict, "Sender", "LimitExceeded", fmt.Sprintf("Cannot exceed quota for ACLSizePerRole: %d", AWSTrustPolicyLimit))
	}
	role.doc = doc
	return awsXML(struct {
		XMLName  xml.Name `xml:"UpdateAssumeRolePolicyResponse"`
		Xmlns    string   `xml:"xmlns,attr"`
		Metadata awsMetadata
	}{Xmlns: AWSNamespace, Metadata: newMetadata()})
}

func (a *AWS) getRole(name string, role *awsRole) reply {
	type tagXML struct {
		Key, Value string
	}
	type roleXML struct {
		Path                     string
		AssumeRolePolicyDocument string
		MaxSessionDuration       int
		RoleID                   string `xml:"RoleId"`
		RoleName                 string
		Arn                      string
		CreateDate               string
		Tags                     []tagXML `xml:"Tags>member,omitempty"`
	}
	var tags []tagXML
	for _, k := range slices.Sorted(maps.Keys(role.tags)) {
		tags = append(tags, tagXML{Key: k, Value: role.tags[k]})
	}
	return awsXML(struct {
		XMLName xml.Name `xml:"GetRoleResponse"`
		Xmlns   string   `xml:"xmlns,attr"`
		Result  struct {
			Role roleXML
		} `xml:"GetRoleResult"`
		Metadata awsMetadata
	}{
		Xmlns: AWSNamespace,
		Result: struct{ Role roleXML }{roleXML{
			Path:                     role.path,
			AssumeRolePolicyDocument: rfc3986(role.doc),
			MaxSessionDuration:       3600,
			RoleID:                   role.id,
			RoleName:                 name,
			Arn:                      "arn:aws:iam::" + role.account + ":role" + role.path + name,
			CreateDate:               role.created.Format(time.RFC3339),
			Tags:                     tags,
		}},
		Metadata: newMetadata(),
	})
}

func (a *AWS) throttled() reply {
	return awsError(http.StatusBadRequest, "Sender", "Throttling", "Rate exceeded")
}

// rfc3986 percent-encodes everything but the unreserved characters, as IAM
// encodes policy documents: a space is %20, a plus sign %2B.
func rfc3986(s string) string {
	return strings.ReplaceAll(url.QueryEscape(s), "+", "%20")
}

type awsMetadata struct {
	XMLName   xml.Name `xml:"ResponseMetadata"`
	RequestID string   `xml:"RequestId"`
}

func newMetadata() awsMetadata { return awsMetadata{RequestID: requestID()} }

func awsXML(v any) reply {
	b, err := xml.MarshalIndent(v, "", "  ")
	if err != nil {
		return awsError(http.StatusInternalServerError, "Receiver", "ServiceFailure", err.Error())
	}
	return reply{status: http.StatusOK, header: http.Header{"Content-Type": {"text/xml"}}, body: append([]byte(xml.Header), b...)}
}

// awsError is IAM's ErrorResponse document.
func awsError(status int, typ, code, msg string) reply {
	b, _ := xml.MarshalIndent(struct {
		XMLName xml.Name `xml:"ErrorResponse"`
		Xmlns   string   `xml:"xmlns,attr"`
		Error   struct {
			Type, Code, Message string
		}
		RequestID string `xml:"RequestId"`
	}{Xmlns: AWSNamespace, Error: struct{ Type, Code, Message string }{typ, code, msg}, RequestID: requestID()}, "", "  ")
	return reply{status: status, header: http.Header{"Content-Type": {"text/xml"}}, body: append([]byte(xml.Header), b...)}
}

// requestID returns a UUID-shaped request ID, as IAM's.
func requestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// randomID returns n upper-case letters and digits, as in IAM's unique IDs.
func randomID(n int) string {
	const chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = chars[int(b[i])%len(chars)]
	}
	return string(b)
}
