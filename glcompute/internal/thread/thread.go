// Package thread runs functions on one goroutine locked to its OS thread,
// the owner of a GL context (Ebitengine's internal/thread pattern).
package thread

import "runtime"

// OSThread is a goroutine locked to an OS thread that runs the functions
// given to Call one at a time, in order. Call is safe for concurrent use.
type OSThread struct {
	calls chan func()
	done  chan struct{}
}

// New starts the thread.
func New() *OSThread {
	t := &OSThread{calls: make(chan func()), done: make(chan struct{})}
	go t.loop()
	return t
}

func (t *OSThread) loop() {
	runtime.LockOSThread()
	// The thread stays locked until exit: a GL context may still be bound to
	// it if its owner failed to release one, and such a thread must not go
	// back to the Go scheduler's pool (the runtime ends it when loop returns).
	defer close(t.done)
	for f := range t.calls {
		f()
	}
}

// Call runs f on the thread and waits for it to return. A panic in f is
// re-raised in the caller.
func (t *OSThread) Call(f func()) {
	var p any
	finished := make(chan struct{})
	t.calls <- func() {
		defer close(finished)
		defer func() { p = recover() }()
		f()
	}
	<-finished
	if p != nil {
		panic(p)
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
	t.calls <- func() {
		defer func() { recover() }()
		f()
	}
}
