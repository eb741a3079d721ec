// Package webhook posts JSON notifications to receivers: signed the way the
// tool agentctl replaces signed them (so existing receivers keep working),
// queued per receiver so a dead one never holds up anything else, retried
// with backoff a bounded number of times, and never sent again once a
// receiver has accepted it.
package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// The signature headers: one HMAC-SHA256 of the body, in three spellings
// that common receivers look for.
const (
	HeaderSignature    = "X-Agentctl-Signature" // lowercase hex
	HeaderSignatureAlt = "X-Signature"          // "sha256=" + hex
	HeaderHubSignature = "X-Hub-Signature-256"  // "sha256=" + hex
	HeaderDelivery     = "X-Agentctl-Delivery"  // the delivery id, the same on every retry
	HeaderEvent        = "X-Agentctl-Event"     // the event type
)

// Defaults.
const (
	DefaultAttemptTimeout = 10 * time.Second
	DefaultMaxAttempts    = 5
	DefaultBackoff        = time.Second
	DefaultMaxBackoff     = time.Minute
	DefaultQueueLen       = 256
)

// Sign returns the lowercase hex HMAC-SHA256 of body with secret.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// Verify checks a body against the X-Agentctl-Signature value, in constant
// time. Receivers written in Go can use it.
func Verify(secret string, body []byte, signature string) bool {
	want, err := hex.DecodeString(signature)
	if err != nil {
		return false
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return hmac.Equal(m.Sum(nil), want)
}

// Delivery is one notification for one receiver.
type Delivery struct {
	URL    string
	Secret string // "" sends no signature
	Event  string // the event type, for the receiver and for logs
	// ID names the notification: a receiver that saw it (and whose answer
	// was lost) can tell a retry from a new notification.
	ID   string
	Body []byte
}

// Outcomes of a delivery.
const (
	Delivered = "delivered" // a receiver answered 2xx
	Failed    = "failed"    // attempts exhausted, or the receiver refused for good (4xx)
	Dropped   = "dropped"   // the receiver's queue was full, or the sender closed first
)

// Result is reported once per delivery.
type Result struct {
	Delivery Delivery
	Outcome  string
	Attempts int
	Status   int   // the last HTTP status, 0 when none
	Err      error // the last error, nil when delivered
}

// Options configures a Sender.
type Options struct {
	Client         *http.Client
	AttemptTimeout time.Duration
	MaxAttempts    int
	// Backoff is the wait before the second attempt, doubling after each
	// failure up to MaxBackoff. A receiver's Retry-After (in seconds) is
	// honoured up to MaxBackoff.
	Backoff    time.Duration
	MaxBackoff time.Duration
	// QueueLen bounds each receiver's queue.
	QueueLen  int
	UserAgent string
	// OnResult is told how each delivery ended.
	OnResult func(Result)
	Logger   *slog.Logger
}

// Sender delivers notifications in the background. It is safe for
// concurrent use.
type Sender struct {
	opts   Options
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu        sync.Mutex
	receivers map[string]*receiver
	closed    bool
}

// receiver is one URL's queue; a worker goroutine drains it while it is
// not empty.
type receiver struct {
	queue []Delivery
	busy  bool
}

// New returns a running sender.
func New(opts Options) *Sender {
	if opts.Client == nil {
		opts.Client = &http.Client{}
	}
	if opts.AttemptTimeout <= 0 {
		opts.AttemptTimeout = DefaultAttemptTimeout
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = DefaultMaxAttempts
	}
	if opts.Backoff <= 0 {
		opts.Backoff = DefaultBackoff
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = DefaultMaxBackoff
	}
	if opts.QueueLen <= 0 {
		opts.QueueLen = DefaultQueueLen
	}
	if opts.UserAgent == "" {
		opts.UserAgent = "agentctl"
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Sender{opts: opts, ctx: ctx, cancel: cancel, receivers: map[string]*receiver{}}
}

// Send queues d and returns at once. It returns false (and reports the
// delivery dropped) when the receiver's queue is full or the sender closed.
func (s *Sender) Send(d Delivery) bool {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.report(Result{Delivery: d, Outcome: Dropped, Err: errors.New("webhook sender closed")})
		return false
	}
	r := s.receivers[d.URL]
	if r == nil {
		r = &receiver{}
		s.receivers[d.URL] = r
	}
	if len(r.queue) >= s.opts.QueueLen {
		s.mu.Unlock()
		s.report(Result{Delivery: d, Outcome: Dropped, Err: fmt.Errorf("queue for %s is full (%d waiting)", Redact(d.URL), s.opts.QueueLen)})
		return false
	}
	r.queue = append(r.queue, d)
	if !r.busy {
		r.busy = true
		s.wg.Add(1)
		go s.drain(d.URL, r)
	}
	s.mu.Unlock()
	return true
}

// drain delivers url's queue in order, one at a time, then exits.
func (s *Sender) drain(url string, r *receiver) {
	defer s.wg.Done()
	for {
		s.mu.Lock()
		if len(r.queue) == 0 {
			r.busy = false
			delete(s.receivers, url)
			s.mu.Unlock()
			return
		}
		d := r.queue[0]
		r.queue = r.queue[1:]
		s.mu.Unlock()
		s.report(s.deliver(d))
	}
}

// deliver makes up to MaxAttempts attempts.
func (s *Sender) deliver(d Delivery) Result {
	res := Result{Delivery: d}
	wait := s.opts.Backoff
	for res.Attempts < s.opts.MaxAttempts {
		if s.ctx.Err() != nil {
			res.Outcome, res.Err = Dropped, fmt.Errorf("webhook sender closed after %d attempt(s): %w", res.Attempts, errOr(res.Err))
			return res
		}
		res.Attempts++
		status, retryAfter, err := s.attempt(d)
		res.Status, res.Err = status, err
		if err == nil {
			res.Outcome = Delivered
			return res
		}
		if !retryable(status) {
			res.Outcome = Failed
			return res
		}
		if res.Attempts == s.opts.MaxAttempts {
			break
		}
		pause := wait
		if retryAfter > 0 {
			pause = retryAfter
		}
		pause = min(pause, s.opts.MaxBackoff)
		wait = min(wait*2, s.opts.MaxBackoff)
		s.opts.Logger.Debug("webhook attempt failed, retrying", "url", Redact(d.URL), "event", d.Event, "attempt", res.Attempts, "in", pause, "err", err)
		select {
		case <-time.After(pause):
		case <-s.ctx.Done():
		}
	}
	res.Outcome = Failed
	return res
}

func errOr(err error) error {
	if err == nil {
		return errors.New("no attempt answered")
	}
	return err
}

// retryable says whether a failed attempt may succeed later: network
// errors (status 0), server errors, and the 4xx codes that mean "later".
func retryable(status int) bool {
	switch {
	case status == 0, status >= 500:
		return true
	case status == http.StatusRequestTimeout, status == http.StatusTooEarly, status == http.StatusTooManyRequests:
		return true
	}
	return false
}

// attempt posts once. It returns the status, the receiver's Retry-After,
// and an error unless the receiver answered 2xx.
func (s *Sender) attempt(d Delivery) (int, time.Duration, error) {
	ctx, cancel := context.WithTimeout(s.ctx, s.opts.AttemptTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.URL, bytes.NewReader(d.Body))
	if err != nil {
		return http.StatusBadRequest, 0, fmt.Errorf("post %s webhook to %s: %w", d.Event, Redact(d.URL), unwrapURL(err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", s.opts.UserAgent)
	if d.Event != "" {
		req.Header.Set(HeaderEvent, d.Event)
	}
	if d.ID != "" {
		req.Header.Set(HeaderDelivery, d.ID)
	}
	if d.Secret != "" {
		sig := Sign(d.Secret, d.Body)
		req.Header.Set(HeaderSignature, sig)
		req.Header.Set(HeaderSignatureAlt, "sha256="+sig)
		req.Header.Set(HeaderHubSignature, "sha256="+sig)
	}
	resp, err := s.opts.Client.Do(req)
	if err != nil {
		return 0, 0, fmt.Errorf("post %s webhook to %s: %w", d.Event, Redact(d.URL), unwrapURL(err))
	}
	defer resp.Body.Close()
	// Drain a little so the connection can be reused; receivers' answers
	// are not read.
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp.StatusCode, 0, nil
	}
	var retryAfter time.Duration
	if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs > 0 {
		retryAfter = time.Duration(secs) * time.Second
	}
	return resp.StatusCode, retryAfter, fmt.Errorf("post %s webhook to %s: %s", d.Event, Redact(d.URL), resp.Status)
}

func (s *Sender) report(r Result) {
	switch r.Outcome {
	case Delivered:
		s.opts.Logger.Debug("webhook delivered", "url", Redact(r.Delivery.URL), "event", r.Delivery.Event, "attempts", r.Attempts)
	default:
		s.opts.Logger.Warn("webhook not delivered", "outcome", r.Outcome, "url", Redact(r.Delivery.URL), "event", r.Delivery.Event, "attempts", r.Attempts, "err", r.Err)
	}
	if s.opts.OnResult != nil {
		s.opts.OnResult(r)
	}
}

// Close stops accepting deliveries and lets queued ones finish until ctx
// ends; then it abandons them (each reported dropped) and waits for the
// workers to return.
func (s *Sender) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		s.cancel()
		return nil
	case <-ctx.Done():
	}
	s.cancel()
	<-done
	return fmt.Errorf("webhook sender closed with deliveries pending: %w", ctx.Err())
}

// Redact is a webhook URL as it may be logged: its scheme and host. A
// receiver's URL often carries its secret (user:password, a token as a
// path segment as Slack's and Discord's do, or in the query), so whatever
// follows the host is shown as "…" and credentials as "…@".
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "(a webhook URL that does not parse)"
	}
	out := u.Scheme + "://"
	if u.User != nil {
		out += "…@"
	}
	out += u.Host
	if (u.Path != "" && u.Path != "/") || u.RawPath != "" || u.Opaque != "" {
		out += "/…"
	}
	if u.RawQuery != "" || u.ForceQuery {
		out += "?…"
	}
	if u.Fragment != "" {
		out += "#…"
	}
	return out
}

// unwrapURL drops the URL an HTTP client's error names (in full, path and
// query included): the caller names the receiver, redacted.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}
