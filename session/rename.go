package session

import (
	"context"
	"fmt"

	"github.com/agentctl/agentctl/api"
)

// Rename gives a session agentctl launched a new name, running or ended.
// The launch record is written once, so the name is kept in a file of its
// own that reads over the record's. It is checked as a launch's name is:
// free among running sessions, and not how another session's id begins.
func (c *launcher) Rename(ctx context.Context, id, name string) (api.Session, error) {
	if name == "" {
		return api.Session{}, faultf(ErrInvalid, "rename: the new name is empty")
	}
	if err := api.CheckSessionName(name); err != nil {
		return api.Session{}, invalid(err)
	}
	sess, _, err := c.launchedDir(ctx, id)
	if err != nil {
		return api.Session{}, err
	}
	if sess.Name == name {
		return sess, nil
	}
	c.naming.Lock()
	defer c.naming.Unlock()
	if err := c.nameFree(name, sess.ID); err != nil {
		return api.Session{}, err
	}
	if err := c.records.setName(sess.ID, name); err != nil {
		return api.Session{}, fmt.Errorf("rename %s: %w", sess.ID, err)
	}
	return c.records.get(sess.ID)
}
