package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/agentctl/agentctl/internal/k8stest"
)

// clusterResult is what a Kubernetes cluster as a host costs: medians of
// o.runs runs each.
type clusterResult struct {
	// firstLocal and firstCluster are from `run --wait` to the command's
	// first output line, on this machine and as a Job on the cluster.
	firstLocal, firstCluster time.Duration
	sessions                 int // running on the cluster for the lists
	// listLocal is `list` on this machine, listCluster `list -H cl`,
	// listAll `list --hosts all` over both; version is `agentctl
	// --version`, the start every command pays, and versionK8s the
	// helper's start (its usage message), which each request to a cluster
	// pays on top.
	listLocal, listCluster, listAll time.Duration
	version, versionK8s             time.Duration
}

// measureCluster times run and list against the test cluster whose
// harness state folder is dir (scripts/k8s-harness.sh up DIR): a
// namespace of its own, removed at the end, with sessions sessions
// running for the lists.
func measureCluster(ctx context.Context, o options, work, dir string, sessions int) (clusterResult, error) {
	res := clusterResult{sessions: sessions}
	h, err := k8stest.Read(dir)
	if err != nil {
		return res, err
	}
	k8sBin := filepath.Join(filepath.Dir(o.bin), "agentctl-k8s")
	if !exists(k8sBin) {
		return res, fmt.Errorf("no %s beside %s (make build builds both)", filepath.Base(k8sBin), o.bin)
	}
	kubectl := func(args ...string) error {
		out, err := exec.CommandContext(ctx, h.Kubectl(), append([]string{"--kubeconfig", h.Kubeconfig}, args...)...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	ns := fmt.Sprintf("bench-%d", time.Now().UnixNano()%1000000)
	if err := kubectl("create", "namespace", ns); err != nil {
		return res, err
	}
	defer kubectl("delete", "namespace", ns, "--wait=false")
	for i := 0; kubectl("-n", ns, "get", "serviceaccount", "default") != nil; i++ {
		if i == 300 {
			return res, errors.New("the namespace's default service account did not appear")
		}
		time.Sleep(200 * time.Millisecond)
	}

	home := filepath.Join(work, "cluster")
	env := append(benchEnv(), "AGENTCTL_HOME="+home, "KUBECONFIG="+h.Kubeconfig)
	cli := func(args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, o.bin, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			return out, fmt.Errorf("agentctl %s: %w: %s", strings.Join(args, " "), err, out)
		}
		return out, nil
	}
	if _, err := cli("host", "add", "cl", "k8s:///"+ns+"?image="+h.Image+"&pull=Never"); err != nil {
		return res, err
	}
	defer func() {
		cli("-H", "cl", "stop", "--all", "--force")
		cli("stop", "--all", "--force")
		cli("daemon", "stop")
	}()
	runs := min(o.runs, 5)

	// From run to the first line: run --wait prints the output as it
	// comes; the session is stopped once the line is seen.
	first := func(host string) (time.Duration, error) {
		var ds []time.Duration
		for range runs {
			// The cluster's folder is a path in the pod; here, the bench's.
			args := []string{"run", "--wait", "--cwd", work, "--", "sh", "-c", "echo first-line; exec sleep 600"}
			if host != "" {
				args = []string{"-H", host, "run", "--wait", "--cwd", "/work", "--", "sh", "-c", "echo first-line; exec sleep 600"}
			}
			cmd := exec.CommandContext(ctx, o.bin, args...)
			cmd.Env = env
			out, err := cmd.StdoutPipe()
			if err != nil {
				return 0, err
			}
			var stderr strings.Builder
			cmd.Stderr = &stderr
			t0 := time.Now()
			if err := cmd.Start(); err != nil {
				return 0, err
			}
			seen := make(chan time.Duration, 1)
			go func() {
				sc := bufio.NewScanner(out)
				for sc.Scan() {
					if strings.Contains(sc.Text(), "first-line") {
						seen <- time.Since(t0)
						break
					}
				}
				io.Copy(io.Discard, out)
				close(seen)
			}()
			d, ok := <-seen
			cmd.Process.Kill()
			cmd.Wait()
			if !ok {
				return 0, fmt.Errorf("run --wait %s: no first line: %s", host, stderr.String())
			}
			ds = append(ds, d)
			// Killing run --wait leaves its session running: stop it.
			id := strings.TrimSpace(strings.TrimPrefix(firstLine(stderr.String()), "agentctl: session "))
			if id, _, ok := strings.Cut(id, " "); ok {
				if host != "" {
					id = host + "/" + id
				}
				cli("stop", "--force", id)
			}
		}
		return median(ds), nil
	}
	if res.firstLocal, err = first(""); err != nil {
		return res, err
	}
	if res.firstCluster, err = first("cl"); err != nil {
		return res, err
	}

	// sessions Jobs running, started a few at a time.
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	sem := make(chan struct{}, 5)
	for range sessions {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if _, err := cli("-H", "cl", "run", "--cwd", "/work", "--", "sleep", "600"); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return res, err
	}
	if _, err := cli("run", "--", "sleep", "600"); err != nil {
		return res, err
	}
	timed := func(usage bool, bin string, args ...string) (time.Duration, error) {
		var ds []time.Duration
		for range o.runs {
			cmd := exec.CommandContext(ctx, bin, args...)
			cmd.Env = env
			t0 := time.Now()
			out, err := cmd.CombinedOutput()
			d := time.Since(t0)
			var exit *exec.ExitError
			if err != nil && !(usage && errors.As(err, &exit) && exit.ExitCode() == 2) {
				return 0, fmt.Errorf("%s %s: %w: %s", bin, strings.Join(args, " "), err, out)
			}
			ds = append(ds, d)
		}
		return median(ds), nil
	}
	// The answer must hold every session: a list that lost some is no
	// figure.
	out, err := cli("list", "-q", "-H", "cl")
	if err != nil {
		return res, err
	}
	if n := strings.Count(string(out), "\n"); n != sessions {
		return res, fmt.Errorf("list -H cl: %d sessions, want %d", n, sessions)
	}
	for _, m := range []struct {
		d     *time.Duration
		usage bool
		bin   string
		args  []string
	}{
		{&res.listLocal, false, o.bin, []string{"list"}},
		{&res.listCluster, false, o.bin, []string{"list", "-H", "cl"}},
		{&res.listAll, false, o.bin, []string{"list", "--hosts", "all"}},
		{&res.version, false, o.bin, []string{"--version"}},
		{&res.versionK8s, true, k8sBin, nil},
	} {
		if *m.d, err = timed(m.usage, m.bin, m.args...); err != nil {
			return res, err
		}
	}
	return res, nil
}

func printCluster(w io.Writer, r clusterResult) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "a Kubernetes cluster as a host (medians)\tms\n")
	fmt.Fprintf(tw, "run --wait to the first output line, this machine\t%s\n", ms(r.firstLocal))
	fmt.Fprintf(tw, "run --wait to the first output line, a Job on the cluster\t%s\n", ms(r.firstCluster))
	fmt.Fprintf(tw, "list, this machine\t%s\n", ms(r.listLocal))
	fmt.Fprintf(tw, "list -H cl (%d running Jobs)\t%s\n", r.sessions, ms(r.listCluster))
	fmt.Fprintf(tw, "list --hosts all (this machine + the cluster)\t%s\n", ms(r.listAll))
	fmt.Fprintf(tw, "agentctl --version (every command's start)\t%s\n", ms(r.version))
	fmt.Fprintf(tw, "agentctl-k8s with no operation (the helper's start, paid per cluster request)\t%s\n", ms(r.versionK8s))
	tw.Flush()
}
