package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/glmul/glmul/glcompute"
)

// Ctrl-C in the commands that measure or write (glmul -n, mul, bench,
// tune, table): the first SIGINT, or SIGTERM or SIGHUP (what timeout,
// kill, a batch scheduler or a closed terminal send), cancels a context
// that the measuring loops and glcompute.MulOptions.Context check between
// runs; the command prints (and tune saves) what it finished, removes any
// output file it had begun, then exits with status 128 + the signal's
// number (130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP) through an
// interruptedError (table's errInterrupted is one). A second signal
// within repeatGrace of the first is the same interruption; one after it
// ends the process at once.

// interruptGrace is how long a command waits, after Ctrl-C, for its work
// to reach a point where it stops before abandoning it: a single dispatch
// (seconds on llvmpipe) or a CPU validation cannot be stopped.
const interruptGrace = time.Second

// stopSignals are the signals that stop a command as Ctrl-C does.
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// stopped is the signal that cancelled notifyInterrupt's context: SIGINT
// until one arrives (an interruptedError made without a signal, in tests).
var stopped atomic.Value // os.Signal

// interruptedError ends a command stopped by a signal after it printed
// what it had finished: exit status 128 + the signal's number, as a shell
// reports a process ended by it. kept says what was kept, for the one
// line on stderr.
type interruptedError struct{ kept string }

func (e interruptedError) Error() string {
	return "interrupted by " + signalName(stopSignal()) + ": " + e.kept
}

// stopSignal returns the signal that stopped the command (SIGINT if none
// was recorded).
func stopSignal() os.Signal {
	if s, ok := stopped.Load().(os.Signal); ok {
		return s
	}
	return os.Interrupt
}

// signalName names s as a user knows it: Ctrl-C for SIGINT.
func signalName(s os.Signal) string {
	switch s {
	case os.Interrupt:
		return "Ctrl-C"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	}
	return s.String()
}

// interruptedStatus is the exit status of a command stopped by s.
func interruptedStatus(s os.Signal) int {
	if n, ok := s.(syscall.Signal); ok && n > 0 && n < 64 {
		return 128 + int(n)
	}
	return 130
}

// repeatGrace is how long after the first stop signal a second one is
// taken as the same interruption: timeout(1) sends its signal to the
// command and then to its process group, a closed terminal's SIGHUP may
// come with a SIGTERM, and a user presses Ctrl-C twice; only a signal
// after it ends the process at once.
const repeatGrace = time.Second

// notifyInterrupt returns a context done at the first of stopSignals;
// a second one within repeatGrace is ignored, a later one ends the
// process at once (its default action). stop releases the signals.
func notifyInterrupt() (ctx context.Context, stop context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 1)
	for _, s := range stopSignals {
		// A signal the process was started with ignored (nohup's SIGHUP,
		// a background job's SIGINT) stays ignored: Notify would undo that.
		if !signal.Ignored(s) {
			signal.Notify(ch, s)
		}
	}
	quit := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			stopped.Store(s)
			cancel()
		case <-quit:
			return
		}
		grace := time.NewTimer(repeatGrace)
		defer grace.Stop()
		for {
			select {
			case <-ch: // the same interruption
			case <-grace.C:
				signal.Stop(ch) // a signal from now on ends the process at once
				return
			case <-quit:
				return
			}
		}
	}()
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			signal.Stop(ch)
			close(quit)
			cancel()
		})
	}
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
			fmt.Fprintf(stderr, "\n%s: %s: the product in progress is abandoned\n", cmd, signalName(stopSignal()))
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
