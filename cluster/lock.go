package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/agentctl/agentctl/api"
)

// lockName is the Lease that locks a working directory of the namespace.
func lockName(cwd string) string {
	sum := sha256.Sum256([]byte(cwd))
	return "agentctl-lock-" + hex.EncodeToString(sum[:10])
}

// lock takes the working directory's Lease for session id. The Lease is
// held by a session, not for a time: it is free once its holder's session
// has ended (its pod's fate, as the API server says), so a lock never
// outlives the pod that held it, and nobody has to release it.
func (c *Cluster) lock(ctx context.Context, id, cwd string) error {
	ctx, cancel := apiCtx(ctx)
	defer cancel()
	leases := c.leases.Leases(c.namespace)
	now := metav1.NewMicroTime(time.Now())
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: lockName(cwd), Labels: map[string]string{labelID: id}, Annotations: map[string]string{annCwd: cwd}},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &id, AcquireTime: &now},
	}
	_, err := leases.Create(ctx, lease, metav1.CreateOptions{})
	if err == nil {
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return c.explain("lock "+cwd, err)
	}
	held, err := leases.Get(ctx, lease.Name, metav1.GetOptions{})
	if err != nil {
		return c.explain("lock "+cwd, err)
	}
	if holder := deref(held.Spec.HolderIdentity); holder != "" {
		s, err := c.Get(ctx, holder)
		switch {
		case err == nil && !s.Status.Ended():
			return api.Errorf(api.CodeLocked, "cluster %s: %s is locked by session %s (%s): wait for it to end, stop it, or launch with --force", c.name, cwd, holder, s.Status)
		case err != nil && api.CodeOf(err) != api.CodeNotFound:
			return err
		}
	}
	// The holder ended: take the Lease over, unless another launch took it
	// first (the update names the version read).
	held.Spec.HolderIdentity, held.Spec.AcquireTime = &id, &now
	held.Labels = lease.Labels
	held.OwnerReferences = nil
	if _, err := leases.Update(ctx, held, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsConflict(err) {
			return api.Errorf(api.CodeLocked, "cluster %s: %s was locked by another launch just now: try again", c.name, cwd)
		}
		return c.explain("lock "+cwd, err)
	}
	return nil
}

// unlock gives up a Lease that session id holds (a launch that failed).
func (c *Cluster) unlock(ctx context.Context, id, cwd string) {
	leases := c.leases.Leases(c.namespace)
	held, err := leases.Get(ctx, lockName(cwd), metav1.GetOptions{})
	if err != nil || deref(held.Spec.HolderIdentity) != id {
		return
	}
	leases.Delete(ctx, held.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &held.ResourceVersion}})
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
