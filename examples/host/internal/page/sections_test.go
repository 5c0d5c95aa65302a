package page_test

import (
	"html"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	kubeflowv1 "github.com/profilekit/profilekit/api/kubeflow/v1"
	"github.com/profilekit/profilekit/plugins"
	"github.com/profilekit/profilekit/plugins/budgets"
)

// section returns the HTML of the page's section id, or "" when the page
// has none.
func section(body, id string) string {
	_, rest, ok := strings.Cut(body, `<section id="`+id+`">`)
	if !ok {
		return ""
	}
	s, _, _ := strings.Cut(rest, "</section>")
	return s
}

// TestMembersFromEverywhere: the owner's binding, the Profile's
// contributors' and those added in the dashboard (KFAM's, which carry no
// profilekit label) are all listed with where each came from; a
// contributor added in the dashboard finds the namespace in the picker;
// what KFAM's annotations hold renders as text; the links lead to the
// dashboard's pages where the user acts.
func TestMembersFromEverywhere(t *testing.T) {
	viewClusterRole(t)
	h := host(t)
	ns := tenant(t, "members", "alice@example.org")
	bind(t, ns, "core", "User", "alice@example.org", "admin")
	bind(t, ns, "contributors", "User", "bob@example.org", "edit")
	kfam(t, ns, "User", "carol@example.org", "view")
	kfam(t, ns, "Group", "team-e", "view")
	kfamNamed(t, ns, "user-forged-clusterrole-view", "User", script, "view")
	// A namespace the upstream controller made: its owner's binding is
	// namespaceAdmin, with KFAM's annotations and no profilekit label.
	upstream := tenant(t, "upstream", "dave@example.org")
	kfamNamed(t, upstream, "namespaceAdmin", "User", "dave@example.org", "admin")

	body := eventually(t, h, "/?ns="+ns, "alice@example.org", "", "carol@example.org", "team-e")
	members := section(body, "members")
	for _, want := range []string{
		`<td class="member">alice@example.org</td><td>admin</td><td>the Profile&#39;s owner</td>`,
		`<td class="member">bob@example.org</td><td>edit</td><td>the Profile&#39;s contributors</td>`,
		`<td class="member">carol@example.org</td><td>view</td><td>Manage contributors in the dashboard</td>`,
		`<td class="member">team-e</td><td>view</td><td>Manage contributors in the dashboard</td>`,
		`<td class="member">` + html.EscapeString(script) + `</td><td>view</td><td>Manage contributors in the dashboard</td>`,
		`<a href="/manage-users" target="_top">Manage contributors</a>`,
	} {
		if !strings.Contains(members, want) {
			t.Errorf("the members section lacks %s:\n%s", want, members)
		}
	}
	if strings.Contains(body, script) {
		t.Errorf("a raw <script> tag from a KFAM annotation reached the page:\n%s", members)
	}
	// The owner first, then by name.
	last := -1
	for _, name := range []string{"alice@example.org", "bob@example.org", "carol@example.org", "team-e"} {
		i := strings.Index(members, `<td class="member">`+name+"</td>")
		if i < last {
			t.Errorf("%s is listed out of order (the owner first, then by name):\n%s", name, members)
		}
		last = i
	}
	if want := `<a href="/_/volumes/?ns=` + ns + `" target="_top">Volumes</a>`; !strings.Contains(section(body, "volumes"), want) {
		t.Errorf("the volumes section lacks %s:\n%s", want, section(body, "volumes"))
	}

	// carol was added in the dashboard alone, as were team-e's members.
	eventually(t, h, "/", "carol@example.org", "", `value="`+ns+`"`)
	eventually(t, h, "/", "erin@example.org", "team-e", `value="`+ns+`"`)
	if code, _, _ := get(t, h, "/?ns="+ns, "frank@example.org", ""); code != http.StatusNotFound {
		t.Errorf("frank, in no binding, sees %s: %d, want 404", ns, code)
	}

	body = eventually(t, h, "/?ns="+upstream, "dave@example.org", "", "dave@example.org</td>")
	if want := `<td class="member">dave@example.org</td><td>admin</td><td>the Profile&#39;s owner</td>`; !strings.Contains(body, want) {
		t.Errorf("the upstream owner's namespaceAdmin is not shown as the owner's; want %s in:\n%s", want, section(body, "members"))
	}
}

// TestMembersWhenPluginsCacheRoleBindingsWhole: a host whose plugins cache
// RoleBindings whole (core, rbac, contributors) still lists the members
// from the page's own cache of their metadata; it once answered "RoleBinding
// is not cached" and showed no page at all.
func TestMembersWhenPluginsCacheRoleBindingsWhole(t *testing.T) {
	viewClusterRole(t)
	h := host(t, rbacv1.SchemeGroupVersion.WithKind("RoleBinding"))
	ns := tenant(t, "whole", "alice@example.org")
	bind(t, ns, "core", "User", "alice@example.org", "admin")
	kfam(t, ns, "User", "carol@example.org", "view")
	body := eventually(t, h, "/?ns="+ns, "alice@example.org", "", "carol@example.org")
	if want := `<td class="member">alice@example.org</td><td>admin</td><td>the Profile&#39;s owner</td>`; !strings.Contains(section(body, "members"), want) {
		t.Errorf("the members section lacks %s:\n%s", want, section(body, "members"))
	}
}

// TestTeamBudget: a namespace that the budgets plugin serves shows its
// share of each resource of the team budget, the use and the headroom as
// the API server holds them, use beyond the share as over, and the
// plugin's condition while it waits; the budget's quota is not listed
// again with the namespace's own quota. A namespace without a budget has
// no budget section.
func TestTeamBudget(t *testing.T) {
	viewClusterRole(t)
	h := host(t)
	ctx := t.Context()
	waiting := "Waiting: waiting for use in budget vision-lab to drop under this member's share: new pods are refused until then (requests.memory share 4Gi, used 5Gi) " + script
	ns := tenant(t, "budget", "alice@example.org",
		kubeflowv1.ProfileCondition{Type: "BudgetsReady", Status: "Unknown", Message: waiting})
	bind(t, ns, "core", "User", "alice@example.org", "admin")
	figures(t, ns, "")
	share(t, ns, "vision-lab",
		corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("2"), corev1.ResourceRequestsMemory: resource.MustParse("4Gi"), "requests.nvidia.com/gpu": resource.MustParse("1")},
		corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("1500m"), corev1.ResourceRequestsMemory: resource.MustParse("5Gi"), "requests.nvidia.com/gpu": resource.MustParse("1")})

	body := eventually(t, h, "/?ns="+ns, "alice@example.org", "", `<section id="budget">`, "requests.nvidia.com/gpu", "<td>pods</td>")
	budget := section(body, "budget")
	var live corev1.ResourceQuota
	must(t, env.Client.Get(ctx, metav1ObjectKey(ns, budgets.QuotaName("vision-lab")), &live))
	headroom := func(r corev1.ResourceName) string {
		left := live.Spec.Hard[r].DeepCopy()
		left.Sub(live.Status.Used[r])
		if left.Sign() < 0 {
			left.Neg()
			return "over by " + left.String()
		}
		return left.String()
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory, "requests.nvidia.com/gpu"} {
		hard, used := live.Spec.Hard[r], live.Status.Used[r]
		want := "<td>vision-lab</td><td>" + string(r) + `</td><td class="share">` + hard.String() + `</td><td class="used">` + used.String() +
			`</td><td class="headroom">` + headroom(r) + "</td>"
		if !strings.Contains(budget, want) {
			t.Errorf("budget row for %s: want %s in:\n%s", r, want, budget)
		}
	}
	for _, want := range []string{
		`<td class="headroom">500m</td>`,
		`<td class="headroom">0</td>`,
		`<tr class="bad"><td>vision-lab</td><td>requests.memory</td>`,
		`<td class="headroom">over by 1Gi</td>`,
		`<meter min="0" max="2000" value="1500"`,
		"Unknown <small>(Waiting)</small>: waiting for use in budget vision-lab to drop under this member&#39;s share",
		html.EscapeString(script),
	} {
		if !strings.Contains(budget, want) {
			t.Errorf("the budget section lacks %s:\n%s", want, budget)
		}
	}
	if strings.Contains(body, script) {
		t.Errorf("a raw <script> tag from a condition reached the page")
	}
	// The namespace's own quota is listed, the budget's share is not.
	if quota := section(body, "quota"); !strings.Contains(quota, "<td>pods</td>") || strings.Contains(quota, "requests.nvidia.com/gpu") {
		t.Errorf("the quota section should hold kf-resource-quota alone:\n%s", quota)
	}

	// A share whose labels name another Profile is not this namespace's.
	// It names the other Profile from the start: a page read before the
	// cache saw a relabelling would show it, rightly.
	other := tenant(t, "nobudget", "alice@example.org")
	bind(t, other, "core", "User", "alice@example.org", "admin")
	share(t, other, "vision-lab", corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("2")}, nil,
		map[string]string{plugins.LabelProfile: ns})
	body = eventually(t, h, "/?ns="+other, "alice@example.org", "", `<h1 id="namespace">`+other+`</h1>`, "<td>requests.cpu</td>")
	if strings.Contains(body, `id="budget"`) {
		t.Errorf("a namespace no budget serves shows a budget section:\n%s", section(body, "budget"))
	}
}
