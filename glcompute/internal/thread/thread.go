// Package thread runs functions on one goroutine locked to its OS thread,
// the owner of a GL context (Ebitengine's internal/thread pattern).
package thread

import (
	"runtime"
	"sync/atomic"
	"time"
)

// Spin is how long each side of a Call polls before it sleeps: the thread
// for the next call after one ends, the caller for its call to end. Waking
// a sleeping goroutine locked to its OS thread costs the OS a thread
// switch each way, most of an owned Device's time per queued product
// (docs/PERFORMANCE.md, "Figures from the library's comments",
// thread.Spin). A stream of calls closer together than Spin never sleeps;
// the price is up to Spin of a busy core after the last one.
const Spin = 100 * time.Microsecond

// OSThread is a goroutine locked to an OS thread that runs the functions
// given to Call one at a time, in order. Call is safe for concurrent use.
type OSThread struct {
	calls chan *call
	done  chan struct{}
}

// call is one function for the thread; finished is set, and wake closed,
// when it has run.
type call struct {
	f        func()
	p        any // its panic, re-raised by Call
	finished atomic.Bool
	wake     chan struct{}
}

// New starts the thread.
func New() *OSThread {
	t := &OSThread{calls: make(chan *call, 64), done: make(chan struct{})}
	go t.loop()
	return t
}

func (t *OSThread) loop() {
	runtime.LockOSThread()
	// The thread stays locked until exit: a GL context may still be bound to
	// it if its owner failed to release one, and such a thread must not go
	// back to the Go scheduler's pool (the runtime ends it when loop returns).
	defer close(t.done)
	for {
		c, ok := t.next()
		if !ok {
			return
		}
		func() {
			defer func() { c.p = recover() }()
			c.f()
		}()
		c.finished.Store(true)
		if c.wake != nil {
			close(c.wake)
		}
	}
}

// next returns the next call, polling for Spin before it sleeps; false
// once Stop has closed the queue.
func (t *OSThread) next() (*call, bool) {
	deadline := time.Now().Add(Spin)
	for time.Now().Before(deadline) {
		select {
		case c, ok := <-t.calls:
			return c, ok
		default:
		}
	}
	c, ok := <-t.calls
	return c, ok
}

// Call runs f on the thread and waits for it to return. A panic in f is
// re-raised in the caller.
func (t *OSThread) Call(f func()) {
	c := &call{f: f, wake: make(chan struct{})}
	t.calls <- c
	for deadline := time.Now().Add(Spin); !c.finished.Load() && time.Now().Before(deadline); {
	}
	if !c.finished.Load() {
		<-c.wake
	}
	if c.p != nil {
		panic(c.p)
	}
}

// Stop ends the thread after the calls already queued. Calling Call after
// Stop panics.
func (t *OSThread) Stop() {
	close(t.calls)
	<-t.done
}

// Go queues f to run on the thread and returns without waiting: calls
// made after it run after it. A panic in f is dropped; f must report its
// failures itself.
func (t *OSThread) Go(f func()) {
	t.calls <- &call{f: f}
}
