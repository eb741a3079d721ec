package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/spawn/monitorapi"
)

// Where the monitor finds its spec and keeps its session folder in the pod:
// the folder is a session's of the home podHome (podHome/sessions/ID), so
// that the agentctl in the pod derives it as a local service would.
const (
	specDir  = "/etc/agentctl"
	specKey  = "spec.json"
	specPath = specDir + "/" + specKey
	podHome  = "/run/agentctl"
)

// podSessionDir is session id's folder in its pod.
func podSessionDir(id string) string { return podHome + "/sessions/" + id }

// StartTimeout bounds how long a launch waits for its pod's container to
// run (scheduling, pulling the image, starting).
const StartTimeout = 3 * time.Minute

// Launch starts a session as a Job with one pod: the prompt and the
// environment in a Secret the pod mounts (nothing secret in the Job's
// spec), the working directory as the configured volume, a Lease as the
// directory lock. It returns once the agent's container runs, or fails with
// the reason the cluster gave (an image not present, no node to run it).
func (c *Cluster) Launch(ctx context.Context, req api.RunRequest) (api.Session, error) {
	nativeID, err := c.resumeOf(ctx, &req)
	if err != nil {
		return api.Session{}, err
	}
	// The launch contract every service holds a request to; the cwd it
	// checks is a path in the pod.
	if err := req.Normalize(); err != nil {
		return api.Session{}, err
	}
	adapter := req.Adapter
	// An agent's command line is built in the pod, by the agentctl there
	// from the adapter, the prompt and the model (its adapter's rule where
	// the agent and its store are); a plain command comes whole.
	argv := req.Command
	image := req.Image
	if image == "" {
		image = c.cfg.Image
	}
	if image == "" {
		return api.Session{}, api.Errorf(api.CodeInvalid, "cluster %s: no image for the session: name one (--image, or image= in the cluster's URL); it must hold agentctl (docs/kubernetes.md)", c.name)
	}
	now := time.Now().UTC()
	id := home.NewID(now)
	name := jobName(id)

	// The directory lock first: it is what makes two launches into one
	// directory exclusive.
	locked := req.Lock || adapter != api.ExecAdapter
	if locked && !req.Force {
		if err := c.lock(ctx, id, req.Cwd); err != nil {
			return api.Session{}, err
		}
	}
	ok := false
	defer func() {
		if !ok {
			c.cleanup(id, locked && !req.Force, req.Cwd)
		}
	}()

	// Only what the caller set goes in: the pod has an environment of its
	// own, and the caller's PATH or HOME mean nothing there.
	env := append([]string{"PWD=" + req.Cwd, home.SessionEnv + "=" + id}, req.EnvOverrides...)
	spec := monitorapi.Spec{
		Record: monitorapi.Record{
			ID: id, Adapter: adapter, Name: req.Name, Group: req.Group, Labels: req.Labels,
			Argv: argv, Cwd: req.Cwd, Prompt: req.Prompt, Model: req.Model,
			ResumeOf: req.ResumeOf, RestartOf: req.RestartOf, NativeID: nativeID,
			StopSignal: "SIGTERM", CreatedAt: now, Rows: req.Rows, Cols: req.Cols,
		},
		Env:         env,
		Interactive: req.Interactive,
	}
	specJSON, err := json.Marshal(spec)
	if err != nil {
		return api.Session{}, fmt.Errorf("launch on %s: %w", c.name, err)
	}
	labels := map[string]string{labelID: id, labelAdapter: adapter}
	if req.Group != "" && len(validation.IsValidLabelValue(req.Group)) == 0 {
		labels[labelGroup] = req.Group
	}
	if req.Name != "" && len(validation.IsValidLabelValue(req.Name)) == 0 {
		labels[labelName] = req.Name
	}
	annotations := map[string]string{annCwd: req.Cwd}
	if nativeID != "" {
		annotations[annNativeID] = nativeID
		annotations[annResumeOf] = req.ResumeOf
	}
	if req.Name != "" {
		annotations[annName] = req.Name
	}
	if req.Group != "" {
		annotations[annGroup] = req.Group
	}
	if adapter == api.ExecAdapter {
		// A plain command is no secret; an agent's argv holds its prompt.
		b, _ := json.Marshal(argv)
		annotations[annCommand] = string(b)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Data:       map[string][]byte{specKey: specJSON},
	}
	cctx, cancel := apiCtx(ctx)
	defer cancel()
	if _, err := c.core.Secrets(c.namespace).Create(cctx, secret, metav1.CreateOptions{}); err != nil {
		return api.Session{}, c.explain("launch: create the session's Secret", err)
	}
	job, err := c.batch.Jobs(c.namespace).Create(cctx, c.job(id, labels, annotations, image, req.Cwd), metav1.CreateOptions{})
	if err != nil {
		return api.Session{}, c.explain("launch: create the session's Job", err)
	}
	// The Secret and the Lease go with the Job when it is deleted.
	c.own(cctx, job, id, locked && !req.Force)

	if err := c.waitStarted(ctx, id, image); err != nil {
		return api.Session{}, err
	}
	ok = true
	if adapter != api.ExecAdapter {
		// The agent's native id, when its adapter knows it at the start,
		// is learned from the pod now and kept on the Job (a resume needs
		// it after the pod is gone).
		return c.learnStarted(ctx, id)
	}
	return c.Get(ctx, id)
}

// resumeOf completes a resume's request from the run it continues: its
// adapter, its working directory (unless given), its --env values under
// the request's own, and its image (unless given). It returns the native
// session the resume continues; "" for a request that resumes nothing.
func (c *Cluster) resumeOf(ctx context.Context, req *api.RunRequest) (string, error) {
	if req.ResumeOf == "" {
		return "", nil
	}
	prev, err := c.Get(ctx, req.ResumeOf)
	if err != nil {
		return "", err
	}
	if prev.NativeID == "" {
		return "", api.Errorf(api.CodeInvalid, "cluster %s: session %s has no native session id yet, so it cannot be resumed", c.name, prev.ID)
	}
	req.ResumeOf, req.Adapter = prev.ID, prev.Adapter
	if req.Cwd == "" {
		req.Cwd = prev.Cwd
	}
	// A resume runs with the --env of the run it continues (where the
	// agent keeps its store, its keys), its own on top: in the pod,
	// nothing else of the first run's environment is left.
	prevEnv, err := c.specEnv(ctx, prev.ID)
	if err != nil {
		return "", err
	}
	req.EnvOverrides = append(prevEnv, req.EnvOverrides...)
	if req.Image == "" {
		// The agent and its store's format are the image's: the run
		// it continues had them.
		if req.Image, err = c.jobImage(ctx, prev.ID); err != nil {
			return "", err
		}
	}
	return prev.NativeID, nil
}

// specEnv is the --env values session id was launched with, read from its
// Secret.
func (c *Cluster) specEnv(ctx context.Context, id string) ([]string, error) {
	ctx, cancel := apiCtx(ctx)
	defer cancel()
	sec, err := c.core.Secrets(c.namespace).Get(ctx, jobName(id), metav1.GetOptions{})
	if err != nil {
		return nil, c.explain("resume: read the launch spec of "+id, err)
	}
	var spec monitorapi.Spec
	if err := json.Unmarshal(sec.Data[specKey], &spec); err != nil {
		return nil, fmt.Errorf("cluster %s: resume: the launch spec of %s in Secret %s: %w", c.name, id, sec.Name, err)
	}
	var env []string
	for _, kv := range spec.Env {
		if k, _, _ := strings.Cut(kv, "="); k != "PWD" && k != home.SessionEnv {
			env = append(env, kv)
		}
	}
	return env, nil
}

// jobImage is the image session id's Job ran ("" when its Job is gone).
func (c *Cluster) jobImage(ctx context.Context, id string) (string, error) {
	ctx, cancel := apiCtx(ctx)
	defer cancel()
	job, err := c.batch.Jobs(c.namespace).Get(ctx, jobName(id), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", c.explain("resume: read the Job of "+id, err)
	}
	if cs := job.Spec.Template.Spec.Containers; len(cs) > 0 {
		return cs[0].Image, nil
	}
	return "", nil
}

// job is the session's Job: one pod, never restarted, whose entry point is
// the monitor.
func (c *Cluster) job(id string, labels, annotations map[string]string, image, cwd string) *batchv1.Job {
	name := jobName(id)
	pull := corev1.PullPolicy(c.cfg.PullPolicy)
	if pull == "" {
		pull = corev1.PullIfNotPresent
	}
	grace := int64(monitorapi.ContainerGrace / time.Second)
	pod := corev1.PodSpec{
		RestartPolicy:                 corev1.RestartPolicyNever,
		TerminationGracePeriodSeconds: &grace,
		AutomountServiceAccountToken:  new(false),
		EnableServiceLinks:            new(false),
		Containers: []corev1.Container{{
			Name:            containerName,
			Image:           image,
			ImagePullPolicy: pull,
			Command:         []string{"agentctl", "shim", "--spec", specPath, podSessionDir(id)},
			WorkingDir:      cwd,
			// Stdin open for the API's attach: what is written there is
			// typed into the agent's terminal.
			Stdin: true,
			VolumeMounts: []corev1.VolumeMount{
				{Name: "spec", MountPath: specDir, ReadOnly: true},
				{Name: "session", MountPath: podHome},
				{Name: "work", MountPath: cwd},
			},
			TerminationMessagePath:   monitorapi.TerminationLog,
			TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		}},
		Volumes: []corev1.Volume{
			{Name: "spec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: name, DefaultMode: new(int32(0o400))}}},
			{Name: "session", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "work", VolumeSource: c.workVolume()},
		},
	}
	if c.cfg.HostNetwork {
		// The node's network (one-node clusters, tests): the agent reaches
		// what listens on the node's loopback.
		pod.HostNetwork = true
		pod.DNSPolicy = corev1.DNSClusterFirstWithHostNet
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: annotations},
		Spec: batchv1.JobSpec{
			BackoffLimit: new(int32(0)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations},
				Spec:       pod,
			},
		},
	}
}

// workVolume is what the configuration mounts at the working directory.
func (c *Cluster) workVolume() corev1.VolumeSource {
	kind, arg, _ := strings.Cut(c.cfg.Volume, ":")
	switch kind {
	case "pvc":
		return corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: arg}}
	case "host":
		return corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: arg, Type: new(corev1.HostPathDirectoryOrCreate)}}
	}
	return corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
}

// own makes the Job the owner of the session's Secret and Lease, so that
// deleting the Job deletes them. A failure leaves them for a later prune,
// which is no reason to fail the launch.
func (c *Cluster) own(ctx context.Context, job *batchv1.Job, id string, lease bool) {
	ref := *metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job"))
	ref.BlockOwnerDeletion = new(false)
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"ownerReferences": []metav1.OwnerReference{ref}}})
	c.core.Secrets(c.namespace).Patch(ctx, job.Name, "application/merge-patch+json", patch, metav1.PatchOptions{})
	if lease {
		c.leases.Leases(c.namespace).Patch(ctx, lockName(job.Annotations[annCwd]), "application/merge-patch+json", patch, metav1.PatchOptions{})
	}
}

// cleanup removes what a failed launch made.
func (c *Cluster) cleanup(id string, lease bool, cwd string) {
	ctx, cancel := apiCtx(context.Background())
	defer cancel()
	bg := metav1.DeletePropagationBackground
	c.batch.Jobs(c.namespace).Delete(ctx, jobName(id), metav1.DeleteOptions{PropagationPolicy: &bg, GracePeriodSeconds: new(int64(0))})
	c.core.Secrets(c.namespace).Delete(ctx, jobName(id), metav1.DeleteOptions{})
	if lease {
		c.unlock(ctx, id, cwd)
	}
}

// waitStarted follows the session's pod until its container runs (or has
// already run and ended), and fails with the cluster's reason when it
// cannot start.
func (c *Cluster) waitStarted(ctx context.Context, id, image string) error {
	ctx, cancel := context.WithTimeout(ctx, StartTimeout)
	defer cancel()
	var last *corev1.Pod
	err := c.untilPod(ctx, id, func(pod *corev1.Pod, deleted bool) (bool, error) {
		if pod == nil {
			return false, nil
		}
		last = pod
		if deleted {
			return false, api.Errorf(api.CodeSpawnFailed, "cluster %s: the pod %s was deleted before it started", c.name, pod.Name)
		}
		if cs := agentStatus(pod); cs != nil {
			if cs.State.Running != nil || cs.State.Terminated != nil {
				return true, nil
			}
			if w := cs.State.Waiting; w != nil && fatalWaiting[w.Reason] {
				return false, c.startError(pod, w, image)
			}
		}
		for _, cond := range pod.Status.Conditions {
			if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && cond.Reason == corev1.PodReasonUnschedulable {
				return false, api.Errorf(api.CodeSpawnFailed, "cluster %s: no node can run the session's pod (%s): fix what the scheduler names (free resources, the node selector, the volume's claim)", c.name, cond.Message)
			}
		}
		if pod.Status.Phase == corev1.PodFailed {
			return false, api.Errorf(api.CodeSpawnFailed, "cluster %s: the pod %s failed before its container ran (%s)", c.name, pod.Name, podReason(pod))
		}
		return false, nil
	})
	if err != nil && errors.Is(err, context.DeadlineExceeded) {
		why := "no pod was made"
		if last != nil {
			why = pendingReason(last)
			if w := c.lastWarning(last); w != "" {
				why = w
			}
		}
		return api.Errorf(api.CodeSpawnFailed, "cluster %s: the session's pod did not start within %s (%s): see `kubectl -n %s describe job %s`", c.name, StartTimeout, why, c.namespace, jobName(id))
	}
	return err
}

// lastWarning is the pod's latest warning event ("FailedCreatePodSandBox:
// ..."), "" when there is none or it cannot be read.
func (c *Cluster) lastWarning(pod *corev1.Pod) string {
	ctx, cancel := apiCtx(context.Background())
	defer cancel()
	events, err := c.core.Events(c.namespace).List(ctx, metav1.ListOptions{
		FieldSelector: "involvedObject.name=" + pod.Name + ",type=" + corev1.EventTypeWarning,
	})
	if err != nil || len(events.Items) == 0 {
		return ""
	}
	last := events.Items[0]
	for _, e := range events.Items[1:] {
		if e.LastTimestamp.After(last.LastTimestamp.Time) {
			last = e
		}
	}
	return strings.Join(strings.Fields(last.Reason+": "+last.Message), " ")
}

// startError explains why a container cannot start, and what fixes it.
func (c *Cluster) startError(pod *corev1.Pod, w *corev1.ContainerStateWaiting, image string) error {
	switch w.Reason {
	case "ErrImageNeverPull":
		return api.Errorf(api.CodeSpawnFailed, "cluster %s: image %s is not on node %s and its pull policy is Never: load it into the node's container runtime, or use a pull policy that pulls", c.name, image, pod.Spec.NodeName)
	case "ErrImagePull", "ImagePullBackOff", "InvalidImageName":
		return api.Errorf(api.CodeSpawnFailed, "cluster %s: image %s cannot be pulled (%s: %s): check its name, and the registry's credentials (imagePullSecrets)", c.name, image, w.Reason, w.Message)
	}
	return api.Errorf(api.CodeSpawnFailed, "cluster %s: the session's container cannot start (%s: %s): check the image %s holds agentctl on its PATH (docs/kubernetes.md)", c.name, w.Reason, w.Message, image)
}

// untilPod follows session id's pod (a list, then a watch, started again
// when it breaks off) and calls cond with each state it reaches, the pod
// nil while there is none, until cond is done or fails or ctx ends.
func (c *Cluster) untilPod(ctx context.Context, id string, cond func(pod *corev1.Pod, deleted bool) (bool, error)) error {
	lw := cache.NewFilteredListWatchFromClient(c.core.RESTClient(), "pods", c.namespace, func(o *metav1.ListOptions) {
		o.LabelSelector = labelID + "=" + id
	})
	_, err := watchtools.UntilWithSync(ctx, lw, &corev1.Pod{}, func(store cache.Store) (bool, error) {
		var pods []*corev1.Pod
		for _, o := range store.List() {
			pods = append(pods, o.(*corev1.Pod))
		}
		return cond(newestPod(pods), false)
	}, func(ev watch.Event) (bool, error) {
		pod, ok := ev.Object.(*corev1.Pod)
		if !ok {
			return false, nil
		}
		return cond(pod, ev.Type == watch.Deleted)
	})
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("cluster %s: follow session %s: %w", c.name, id, ctx.Err())
	}
	if err != nil {
		return c.explain("follow session "+id, err)
	}
	return nil
}
