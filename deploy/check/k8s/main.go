// Command k8s-check decodes Kubernetes manifests (`helm template` output) strictly into
// the k8s.io/api types, the way an API server would (an unknown field, a duplicate
// field, a wrong type or an unknown kind is an error), then checks what the PeerTrain
// chart promises:
//
//   - every workload container: a pinned image, CPU and memory requests and a memory
//     limit, no privilege escalation; every pod runs as non-root;
//
//   - every Deployment and StatefulSet container: readiness and liveness probes, and
//     the PeerTrain services' probes on /readyz and /healthz; each covered by a
//     PodDisruptionBudget;
//
//   - credentials only from Secrets (secretKeyRef, or $(VAR) of one), no Secret holding
//     a development default;
//
//   - nothing reachable from outside but through an Ingress: no NodePort or
//     LoadBalancer Service, no hostPort, no hostNetwork.
//
//     helm template ... | k8s-check -        (or k8s-check FILE...)
//
// Exit status: 0 when every object decodes and passes, 1 with one line per problem,
// 2 when the input cannot be read.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"peertrain/deploy/check/rules"
)

// The PeerTrain services (app.kubernetes.io/component) whose probes are fixed.
var services = map[string]bool{"auth": true, "registry": true, "dataset": true, "orchestrator": true, "aggregator": true}

var envRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

func main() {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, policyv1.AddToScheme, networkingv1.AddToScheme,
		batchv1.AddToScheme, rbacv1.AddToScheme, autoscalingv2.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	decoder := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()

	inputs := os.Args[1:]
	if len(inputs) == 0 {
		inputs = []string{"-"}
	}
	c := &checker{}
	count := 0
	for _, in := range inputs {
		docs, err := read(in)
		if err != nil {
			fmt.Fprintf(os.Stderr, "k8s-check: %v\n", err)
			os.Exit(2)
		}
		for i, doc := range docs {
			obj, gvk, err := decoder.Decode(doc, nil, nil)
			if err != nil {
				c.add("%s, document %d: %s", in, i+1, oneLine(err.Error()))
				continue
			}
			count++
			c.object(obj, gvk.Kind)
		}
	}
	c.finish()
	for _, p := range c.problems {
		fmt.Println(p)
	}
	if len(c.problems) > 0 {
		fmt.Fprintf(os.Stderr, "k8s-check: %d problem(s) in %d objects\n", len(c.problems), count)
		os.Exit(1)
	}
	fmt.Printf("k8s-check: ok: %d objects decoded strictly and checked\n", count)
}

func read(path string) ([][]byte, error) {
	var r io.Reader = os.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(r))
	var docs [][]byte
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		if hasContent(doc) {
			docs = append(docs, doc)
		}
	}
}

func hasContent(doc []byte) bool {
	for _, line := range bytes.Split(doc, []byte("\n")) {
		t := bytes.TrimSpace(line)
		if len(t) > 0 && t[0] != '#' && string(t) != "---" {
			return true
		}
	}
	return false
}

// oneLine: a decoding error on one line (strict errors list one field a line).
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

type workload struct {
	name   string
	labels map[string]string
}

type checker struct {
	problems  []string
	workloads []workload
	budgets   []labels.Selector
}

func (c *checker) add(format string, args ...any) {
	c.problems = append(c.problems, fmt.Sprintf(format, args...))
}

func (c *checker) object(obj runtime.Object, kind string) {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		c.pod("Deployment/"+o.Name, &o.Spec.Template, true)
	case *appsv1.StatefulSet:
		c.pod("StatefulSet/"+o.Name, &o.Spec.Template, true)
	case *batchv1.Job:
		c.pod("Job/"+o.Name, &o.Spec.Template, false)
	case *appsv1.DaemonSet, *corev1.Pod, *batchv1.CronJob, *appsv1.ReplicaSet:
		c.add("%s: a workload kind the chart does not use, so unchecked here", kind)
	case *policyv1.PodDisruptionBudget:
		sel, err := metav1.LabelSelectorAsSelector(o.Spec.Selector)
		if err != nil || sel.Empty() {
			c.add("PodDisruptionBudget/%s: no usable selector", o.Name)
			return
		}
		c.budgets = append(c.budgets, sel)
	case *corev1.Service:
		if o.Spec.Type == corev1.ServiceTypeNodePort || o.Spec.Type == corev1.ServiceTypeLoadBalancer {
			c.add("Service/%s: type %s opens it outside the cluster (use the Ingress)", o.Name, o.Spec.Type)
		}
	case *corev1.Secret:
		for key, value := range o.Data {
			c.secretValue(o.Name, key, string(value))
		}
		for key, value := range o.StringData {
			c.secretValue(o.Name, key, value)
		}
	}
}

func (c *checker) secretValue(name, key, value string) {
	for _, d := range rules.DevDefaults {
		if value == d {
			c.add("Secret/%s: %s is the development default %q", name, key, d)
		}
	}
}

func (c *checker) pod(name string, tpl *corev1.PodTemplateSpec, serving bool) {
	spec := &tpl.Spec
	if spec.HostNetwork {
		c.add("%s: hostNetwork opens every port it listens on", name)
	}
	podNonRoot := spec.SecurityContext != nil && spec.SecurityContext.RunAsNonRoot != nil && *spec.SecurityContext.RunAsNonRoot
	component := tpl.Labels["app.kubernetes.io/component"]
	all := append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...)
	for i, ctr := range all {
		where := fmt.Sprintf("%s, container %s", name, ctr.Name)
		main := i >= len(spec.InitContainers)
		if why := rules.FloatingImage(ctr.Image, func(string) bool { return false }); why != "" {
			c.add("%s: image %q floats: %s", where, ctr.Image, why)
		}
		sc := ctr.SecurityContext
		if !podNonRoot && (sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot) {
			c.add("%s: may run as root (set runAsNonRoot)", where)
		}
		if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			c.add("%s: allows privilege escalation", where)
		}
		req, lim := ctr.Resources.Requests, ctr.Resources.Limits
		if req.Cpu().IsZero() || req.Memory().IsZero() || lim.Memory().IsZero() {
			c.add("%s: needs CPU and memory requests and a memory limit", where)
		}
		for _, p := range ctr.Ports {
			if p.HostPort != 0 {
				c.add("%s: hostPort %d opens a port on the node", where, p.HostPort)
			}
		}
		c.env(where, ctr.Env)
		if !serving || !main {
			continue
		}
		if ctr.ReadinessProbe == nil || ctr.LivenessProbe == nil {
			c.add("%s: needs a readiness and a liveness probe", where)
		} else if services[component] {
			if path := httpPath(ctr.ReadinessProbe); path != "/readyz" {
				c.add("%s: readiness probe on %q, not /readyz", where, path)
			}
			if path := httpPath(ctr.LivenessProbe); path != "/healthz" {
				c.add("%s: liveness probe on %q, not /healthz", where, path)
			}
		}
	}
	if serving {
		c.workloads = append(c.workloads, workload{name, tpl.Labels})
	}
}

func httpPath(p *corev1.Probe) string {
	if p.HTTPGet == nil {
		return "(not an HTTP probe)"
	}
	return p.HTTPGet.Path
}

// env: a credential is a secretKeyRef, or a value made of $(VAR) references to those.
func (c *checker) env(where string, env []corev1.EnvVar) {
	fromSecret := map[string]bool{}
	for _, e := range env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			fromSecret[e.Name] = true
		}
	}
	isSecret := func(v string) bool {
		m := envRef.FindStringSubmatch(v)
		return m != nil && m[0] == v && fromSecret[m[1]]
	}
	for _, e := range env {
		if e.ValueFrom != nil {
			continue
		}
		if why := rules.CredentialProblem(e.Name, e.Value, isSecret); why != "" {
			c.add("%s: %s is not from a Secret: %s", where, e.Name, why)
		}
	}
}

func (c *checker) finish() {
	for _, w := range c.workloads {
		covered := false
		for _, sel := range c.budgets {
			if sel.Matches(labels.Set(w.labels)) {
				covered = true
				break
			}
		}
		if !covered {
			c.add("%s: no PodDisruptionBudget selects its pods", w.name)
		}
	}
}
