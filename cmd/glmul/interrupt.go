package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"time"

	"github.com/glmul/glmul/glcompute"
)

// Ctrl-C in the commands that measure (glmul -n, bench, tune, table): the
// first SIGINT cancels a context that the measuring loops and
// glcompute.MulOptions.Context check between runs; the command prints (and
// tune saves) what it finished, then exits with status 130 through an
// interruptedError (table's errInterrupted is one). A second
// SIGINT ends the process at once.

// interruptGrace is how long a command waits, after Ctrl-C, for its work
// to reach a point where it stops before abandoning it: a single dispatch
// (seconds on llvmpipe) or a CPU validation cannot be stopped.
const interruptGrace = time.Second

// interruptedError ends a command stopped by Ctrl-C after it printed what
// it had finished: exit status 130, as a shell reports a process ended by
// SIGINT. kept says what was kept, for the one line on stderr.
type interruptedError struct{ kept string }

func (e interruptedError) Error() string { return "interrupted by Ctrl-C: " + e.kept }

// notifyInterrupt returns a context done at the first Ctrl-C; from then on
// a second Ctrl-C ends the process at once. stop releases the signal.
func notifyInterrupt() (ctx context.Context, stop context.CancelFunc) {
	ctx, stop = signal.NotifyContext(context.Background(), os.Interrupt)
	go func() {
		<-ctx.Done()
		stop() // a second Ctrl-C ends the process at once
	}()
	return ctx, stop
}

// awaitWork runs work on a goroutine of its own and returns its error, so
// that Ctrl-C (ctx done) acts within interruptGrace even when what runs
// cannot stop. Past the grace it returns context.Canceled with abandoned
// set, having said so on stderr (cmd names the command): the caller must
// then neither wait for nor release the device work uses, and must exit.
func awaitWork(ctx context.Context, stderr io.Writer, cmd string, work func() error) (err error, abandoned bool) {
	result := make(chan error, 1)
	go func() { result <- work() }()
	select {
	case err = <-result:
	case <-ctx.Done():
		select {
		case err = <-result:
		case <-time.After(interruptGrace):
			err, abandoned = context.Canceled, true
			fmt.Fprintf(stderr, "\n%s: Ctrl-C: the product in progress is abandoned\n", cmd)
		}
	}
	return err, abandoned
}

// finished holds the units of work a command finished (rows, classes),
// shared between the goroutine of awaitWork, which adds them, and the
// command, which takes them to print once the work ended or was abandoned.
type finished[T any] struct {
	mu    sync.Mutex
	units []T
	taken bool
}

// add records u and then runs then (if set: a progress step, a save) under
// the same lock, unless take was called: an abandoned work that finishes
// late then adds, prints and saves nothing. It reports whether u was
// recorded.
func (f *finished[T]) add(u T, then func()) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.taken {
		return false
	}
	f.units = append(f.units, u)
	if then != nil {
		then()
	}
	return true
}

// take returns the units recorded; none are recorded after it.
func (f *finished[T]) take() []T {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.taken = true
	return f.units
}

// heldDevice is a command's device, released when the command ends
// unless its work was abandoned (awaitWork): the device's thread is then
// stuck in a run, and the process exits instead.
type heldDevice struct {
	*glcompute.Device
	abandoned bool
}

// hold opens the device (openFor: each shape checked with each kernel)
// for a command, noting a fallback kernel choice on stderr; the caller
// defers its release.
func (d *deviceFlags) hold(stderr io.Writer, kernels []string, shapes ...[3]int) (*heldDevice, error) {
	dev, err := d.openFor(kernels, shapes...)
	if err != nil {
		return nil, err
	}
	noteKernelChoice(dev, stderr)
	return &heldDevice{Device: dev}, nil
}

// release releases the device unless the work was abandoned: for a defer
// made before the work starts.
func (h *heldDevice) release() {
	if !h.abandoned {
		h.Release()
	}
}
