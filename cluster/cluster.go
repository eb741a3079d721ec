// Package cluster runs agentctl sessions on a Kubernetes cluster: a session
// is a Job with one pod whose entry point is agentctl's monitor (`agentctl
// shim --spec`), wrapping the agent. Everything is read from the API server
// with client-go and derived at query time: status from the pod's phase,
// its container's state and the Job's conditions, the exit code from the
// container's termination state. Nothing about a session is kept here but
// the last answer, which is shown as unknown when the API server stops
// answering.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	batchv1client "k8s.io/client-go/kubernetes/typed/batch/v1"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/agentctl/agentctl/api"
)

// Config says which cluster, where in it, and how sessions are made there.
type Config struct {
	// Kubeconfig is the kubeconfig file; "" follows KUBECONFIG and then
	// ~/.kube/config, as kubectl does.
	Kubeconfig string
	// Context is the kubeconfig context; "" is its current context.
	Context string
	// Namespace is where sessions live; "" is the context's namespace.
	Namespace string
	// Image is the container image of sessions that name none. It must
	// hold agentctl on its PATH (the image contract, docs/kubernetes.md).
	Image string
	// PullPolicy is the image pull policy: "" is IfNotPresent.
	PullPolicy string
	// Volume is what is mounted at the session's working directory: a
	// PersistentVolumeClaim's name ("pvc:NAME"), a node's folder
	// ("host:/PATH", for one-node clusters), or "" for an empty folder.
	Volume string
	// HostNetwork runs the sessions' pods on their node's network: meant
	// for one-node clusters, where an agent must reach a server on the
	// node's loopback.
	HostNetwork bool
}

// Cluster is one namespace of one cluster, as a place sessions run: it
// answers client.Sessions.
type Cluster struct {
	cfg       Config
	name      string // context/namespace, for messages
	namespace string
	rest      *rest.Config
	core      corev1client.CoreV1Interface
	batch     batchv1client.BatchV1Interface
	leases    coordinationv1client.CoordinationV1Interface

	mu   sync.Mutex
	last []api.Session // the last answer, for when the API server is gone
}

// New connects to the cluster cfg names. Only the kubeconfig is read here;
// the API server is first asked by the first call.
func New(cfg Config) (*Cluster, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if cfg.Kubeconfig != "" {
		rules.ExplicitPath = cfg.Kubeconfig
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: cfg.Context}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	raw, err := cc.RawConfig()
	if err != nil {
		return nil, api.Errorf(api.CodeInvalid, "read the kubeconfig: %v: fix the file, or point KUBECONFIG at a good one", err)
	}
	if len(raw.Contexts) == 0 {
		return nil, api.Errorf(api.CodeInvalid, "no kubeconfig with a context (looked in %s): set KUBECONFIG to your cluster's kubeconfig", strings.Join(rules.Precedence, ", "))
	}
	ctxName := cfg.Context
	if ctxName == "" {
		ctxName = raw.CurrentContext
	}
	if _, ok := raw.Contexts[ctxName]; !ok {
		names := make([]string, 0, len(raw.Contexts))
		for n := range raw.Contexts {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, api.Errorf(api.CodeInvalid, "kubeconfig has no context %q: use one of %s", ctxName, strings.Join(names, ", "))
	}
	rc, err := cc.ClientConfig()
	if err != nil {
		return nil, api.Errorf(api.CodeInvalid, "kubeconfig context %q: %v: fix its cluster and user entries", ctxName, err)
	}
	ns := cfg.Namespace
	if ns == "" {
		if ns, _, err = cc.Namespace(); err != nil || ns == "" {
			ns = "default"
		}
	}
	// Bounded requests: an API server that stopped must not hang a list.
	rc.Timeout = 0
	rc.QPS, rc.Burst = 50, 100
	core, err := corev1client.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("cluster %s/%s: %w", ctxName, ns, err)
	}
	batch, err := batchv1client.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("cluster %s/%s: %w", ctxName, ns, err)
	}
	leases, err := coordinationv1client.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("cluster %s/%s: %w", ctxName, ns, err)
	}
	if cfg.Image == "" {
		cfg.Image = os.Getenv("AGENTCTL_K8S_IMAGE")
	}
	return &Cluster{
		cfg: cfg, name: ctxName + "/" + ns, namespace: ns, rest: rc,
		core: core, batch: batch, leases: leases,
	}, nil
}

// QuietClientLogs stops client-go from writing its own log lines (a watch
// that ended, a retry) on standard error: agentctl says what matters in its
// answers. It sets klog's process-wide output, so a program calls it once
// in its main.
func QuietClientLogs() {
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
}

// Name is the cluster as messages name it: CONTEXT/NAMESPACE.
func (c *Cluster) Name() string { return c.name }

// Namespace is where this cluster's sessions live.
func (c *Cluster) Namespace() string { return c.namespace }

// requestTimeout bounds one API request that is not a stream or a watch.
const requestTimeout = 10 * time.Second

// explain turns an API failure into a one-line message naming the cause and
// the fix, with the API's code.
func (c *Cluster) explain(what string, err error) error {
	if err == nil {
		return nil
	}
	var apiErr *api.Error
	if errors.As(err, &apiErr) {
		return err
	}
	switch {
	case isQuota(err):
		return &api.Error{Code: api.CodeSpawnFailed, Err: err, Message: fmt.Sprintf(
			"cluster %s: %s: over the namespace's resource quota (%s): end other sessions, or ask for a larger quota", c.name, what, reason(err))}
	case apierrors.IsForbidden(err):
		return &api.Error{Code: api.CodeForbidden, Err: err, Message: fmt.Sprintf(
			"cluster %s: %s: forbidden by the cluster's RBAC (%s): ask for the agentctl Role in namespace %s (docs/kubernetes.md)",
			c.name, what, reason(err), c.namespace)}
	case apierrors.IsUnauthorized(err):
		return &api.Error{Code: api.CodeForbidden, Err: err, Message: fmt.Sprintf(
			"cluster %s: %s: the API server does not accept these credentials: renew the kubeconfig's user entry", c.name, what)}
	case apierrors.IsNotFound(err):
		return &api.Error{Code: api.CodeNotFound, Err: err, Message: fmt.Sprintf("cluster %s: %s: %s", c.name, what, reason(err))}
	case apierrors.IsAlreadyExists(err), apierrors.IsConflict(err):
		return &api.Error{Code: api.CodeLocked, Err: err, Message: fmt.Sprintf("cluster %s: %s: %s", c.name, what, reason(err))}
	case apierrors.IsInvalid(err) || apierrors.IsBadRequest(err):
		return &api.Error{Code: api.CodeInvalid, Err: err, Message: fmt.Sprintf("cluster %s: %s: %s", c.name, what, reason(err))}
	}
	return &api.Error{Code: api.CodeInternal, Err: err, Message: fmt.Sprintf(
		"cluster %s: %s: the API server at %s does not answer (%v): check that the cluster runs and the kubeconfig points at it", c.name, what, c.rest.Host, err)}
}

func isQuota(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "exceeded quota")
}

// reason is the API server's own message, without the request around it.
func reason(err error) string {
	var st apierrors.APIStatus
	if errors.As(err, &st) && st.Status().Message != "" {
		return st.Status().Message
	}
	return err.Error()
}

// apiCtx bounds one request.
func apiCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, requestTimeout)
}
