package session

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/adapters"
	"github.com/agentctl/agentctl/api"
	"github.com/agentctl/agentctl/home"
)

// turning is a store with one session whose state a test sets.
type turning struct {
	mu    sync.Mutex
	state adapters.NativeState
}

func (s *turning) set(st adapters.NativeState) { s.mu.Lock(); s.state = st; s.mu.Unlock() }
func (s *turning) Name() string                { return "turning" }
func (s *turning) Discover(context.Context) ([]adapters.NativeSession, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return []adapters.NativeSession{{Adapter: "turning", NativeID: "t1", State: s.state, CreatedAt: time.Now()}}, nil
}
func (s *turning) Transcript(context.Context, string, int) ([]adapters.Message, error) {
	return nil, nil
}

// heard is an Observer that passes on the transitions it hears.
type heard chan string

func (h heard) Launched(api.Session) {}
func (h heard) Changed(ch Change)    { h <- fmt.Sprintf("%s:%d", ch.Session.ID, ch.Kind) }

// A read announces nothing: a list that sees a session go idle changes no
// state and tells no observer.
func TestListAnnouncesNothing(t *testing.T) {
	t.Parallel()
	store := &turning{state: adapters.NativeBusy}
	h := heard(make(chan string, 16))
	c := New(context.Background(), Options{Home: home.Home(t.TempDir()), Adapters: adapters.NewSet(store), DiscoveryTimeout: time.Second, Observers: []Observer{h}})
	for _, st := range []adapters.NativeState{adapters.NativeBusy, adapters.NativeIdle, adapters.NativeBusy} {
		store.set(st)
		l, err := c.List(context.Background(), api.ListOptions{})
		if err != nil || len(l.Sessions) != 1 || l.Sessions[0].Activity != string(st) {
			t.Fatalf("list with the store %s: %+v, %v", st, l.Sessions, err)
		}
	}
	select {
	case got := <-h:
		t.Fatalf("a list announced %s", got)
	default:
	}
	if n := c.moves.size(); n != 0 {
		t.Fatalf("the detector follows %d sessions, and no loop ran", n)
	}
}

// The detector's own loop follows a running session with nobody listing,
// and announces its turns; views reads offer are compared too.
func TestTransitionsFollowedByTheirOwnLoop(t *testing.T) {
	t.Parallel()
	store := &turning{state: adapters.NativeBusy}
	h := heard(make(chan string, 16))
	c := New(context.Background(), Options{Home: home.Home(t.TempDir()), Adapters: adapters.NewSet(store), DiscoveryTimeout: time.Second, Observers: []Observer{h}})
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); c.Wait() }()
	c.WatchTransitions(ctx)
	deadline := time.Now().Add(30 * time.Second)
	for c.moves.size() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the loop does not follow the running session")
		}
		time.Sleep(10 * time.Millisecond)
	}
	next := func(want string) {
		t.Helper()
		select {
		case got := <-h:
			if got != want {
				t.Fatalf("heard %s, want %s", got, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s not announced", want)
		}
	}
	store.set(adapters.NativeIdle)
	next(fmt.Sprintf("t1:%d", ChangeIdle))
	// A list's view is compared by the loop as well (not by the list).
	store.set(adapters.NativeBusy)
	if _, err := c.List(context.Background(), api.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	next(fmt.Sprintf("t1:%d", ChangeBusy))
	select {
	case got := <-h:
		t.Fatalf("more announced than happened: %s", got)
	default:
	}
}

// With nothing to follow the loop still looks, now and then: a session
// that begins running after its first look is followed, and its turns
// announced, with nobody listing.
func TestTransitionsLoopLooksWhileFollowingNothing(t *testing.T) {
	t.Parallel()
	store := &turning{state: adapters.NativeDone}
	h := heard(make(chan string, 16))
	c := New(context.Background(), Options{Home: home.Home(t.TempDir()), Adapters: adapters.NewSet(store), DiscoveryTimeout: time.Second, Observers: []Observer{h}})
	c.moves.every, c.moves.idleEvery = 20*time.Millisecond, 50*time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); c.Wait() }()
	c.WatchTransitions(ctx)
	time.Sleep(200 * time.Millisecond) // its first looks see nothing running
	store.set(adapters.NativeBusy)
	deadline := time.Now().Add(30 * time.Second)
	for c.moves.size() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the loop never looked again: the session that began running is not followed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	store.set(adapters.NativeIdle)
	select {
	case got := <-h:
		if want := fmt.Sprintf("t1:%d", ChangeIdle); got != want {
			t.Fatalf("heard %s, want %s", got, want)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("its turn's end was not announced")
	}
}
