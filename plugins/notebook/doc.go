// Package notebook gives every Profile PodDefaults (kubeflow.org/v1alpha1),
// the options Kubeflow's notebook form offers and its admission webhook
// applies to matching pods.
//
// The host configures the PodDefaults; a Profile cannot, because a PodDefault
// chooses volumes and service accounts for the namespace's pods. Each entry
// has a name, an optional profileSelector over the Profile's labels (only
// Profiles it matches get that PodDefault), and the PodDefault's spec fields
// beside them: selector (required, never empty), desc, labels, annotations,
// env, envFrom, volumes, volumeMounts, tolerations, serviceAccountName and
// automountServiceAccountToken. Lists keep the order they are given in, which
// the webhook keeps too; the PodDefaults themselves are written in name order.
//
// profilekit has no Go package of the PodDefault API: PodDefaultSpec holds
// the fields written here under their published names, and the object is
// applied as unstructured. The PodDefault CRD comes with Kubeflow and must be
// installed before the host starts.
//
// PodDefaults users make themselves are never touched: only those carrying
// profilekit's labels for this plugin and Profile are written or deleted, and
// one of ours whose name another PodDefault already holds is reported as a
// Conflict. Revoke deletes our PodDefaults; pods they shaped keep what they got.
//
// Host configuration, with the StatCan-style Protected B option (the same as
// testdata/statcan.yaml): pods labelled notebook.statcan.gc.ca/protected-b=true
// get the label data.statcan.gc.ca/classification=protected-b.
//
//	notebook:
//	  enabled: all
//	  defaults:
//	    podDefaults:
//	    - name: protected-b
//	      desc: Run with Protected B data
//	      selector:
//	        matchLabels: {notebook.statcan.gc.ca/protected-b: "true"}
//	      labels: {data.statcan.gc.ca/classification: protected-b}
//	    - name: gpu-scratch
//	      desc: GPU node with a scratch volume
//	      profileSelector:
//	        matchLabels: {gpu.example.org/enabled: "true"}
//	      selector:
//	        matchLabels: {notebook.example.org/gpu: "true"}
//	      env: [{name: SCRATCH, value: /scratch}]
//	      volumes: [{name: scratch, emptyDir: {sizeLimit: 10Gi}}]
//	      volumeMounts: [{name: scratch, mountPath: /scratch}]
//	      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
//
// A Profile that gets both options (the first for every Profile, the second
// through its label):
//
//	apiVersion: kubeflow.org/v1
//	kind: Profile
//	metadata:
//	  name: team-a
//	  labels:
//	    gpu.example.org/enabled: "true"
//	spec:
//	  owner: {kind: User, name: alice@example.org}
//	  plugins:
//	  - kind: notebook
//
// # Stability
//
// Stable under semver (see the README's Versioning section): [Kind],
// [Definition], [Config] and [PodDefault] with the JSON names and meaning of
// their fields, the PodDefaults' names (the configured ones), and the
// condition NotebookReady. Experimental, and free to change in a minor
// release: [Build], [BuildPodDefault], [PodDefaultSpec] and
// [PodDefaultApplyConfiguration], which stand in for a Go package of the
// [PodDefault] API that profilekit does not have, [GroupVersionKind],
// [NewConfig] and [Plugin]; run the plugin through its [Definition], and use
// these for tests and previews.
package notebook
