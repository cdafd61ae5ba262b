package glcompute

import (
	"github.com/glmul/glmul/glcompute/internal/glw"
)

// call runs f on the device thread, or for a borrowed context on the
// caller's thread between a snapshot of the host's GL state and its
// restoration (inside a Scope, the Scope saves and restores). It panics if
// the Device was released or, borrowed, if its context is not current on
// the calling thread. f may change any GL state: what resident calls
// remember of their bindings (d.bound) is forgotten.
func (d *Device) call(f func()) {
	d.enter(saveAll, func() {
		d.bound = boundState{}
		f()
	})
}

// callKeeping is call for an f that changes no GL state but what resident
// calls record in d.bound (a resident product, a fence) and binds no
// buffer to the copy targets: a borrowed call then saves and restores
// those two bindings less.
func (d *Device) callKeeping(f func()) { d.enter(saveStorage, f) }

// query runs f, which reads GL objects without changing any GL state, as
// call does, except that a borrowed call saves and restores nothing: the
// host's bindings are not touched at all.
func (d *Device) query(f func()) { d.enter(saveNothing, f) }

// saving is what a borrowed call saves of the host's GL state and restores.
type saving int

const (
	saveNothing saving = iota // f changes no state (query)
	saveStorage               // the program and storage bindings (callKeeping)
	saveAll                   // those and the copy bindings (call)
)

// enter runs f as call does, saving and restoring what save says on a
// borrowed context outside a Scope.
func (d *Device) enter(save saving, f func()) {
	d.lockOpen()
	defer d.mu.Unlock()
	if d.borrowed {
		if !d.scoped && save != saveNothing {
			var s glw.State
			if save == saveAll {
				s = glw.SaveState(stateBindings)
			} else {
				s = glw.SaveStorageState(stateBindings)
			}
			d.saved = &s
			defer func() { d.saved = nil; s.Restore() }()
		}
		f()
		return
	}
	d.thread.Call(f)
}

// checkOpen panics where enter would (a Device not made by Open or
// NewDeviceFromCurrent, a released one, a borrowed one used where its
// context is not current), for a call that has nothing to do and makes
// no GL call.
func (d *Device) checkOpen() {
	d.lockOpen()
	d.mu.Unlock()
}

// lockOpen locks d.mu and panics, unlocking it, where d is not open, is
// released, or is borrowed and its context is not current here.
func (d *Device) lockOpen() {
	d.mustBeOpen()
	d.mu.Lock()
	if d.released {
		d.mu.Unlock()
		panic("glcompute: use of a released Device")
	}
	if d.borrowed {
		func() {
			defer func() {
				if r := recover(); r != nil {
					d.mu.Unlock()
					panic(r)
				}
			}()
			d.checkHostContext()
		}()
	}
}

// mustBeOpen panics on a Device that Open or NewDeviceFromCurrent did not
// make (a zero Device has no context: its calls failed with a misleading
// "the driver allows 0 work groups").
func (d *Device) mustBeOpen() {
	if d.thread == nil && !d.borrowed {
		panic("glcompute: a Device not made by Open or NewDeviceFromCurrent")
	}
}

// checkHostContext panics unless the borrowed context is current on the
// calling thread: GL calls without it would do nothing, or act on another
// context.
func (d *Device) checkHostContext() {
	if d.hostContext() != d.hostCurrent {
		panic("glcompute: borrowed Device used on a thread where its context is not current")
	}
}

// stateBindings is how many indexed shader storage bindings glmul uses
// (0, 1, 2), all saved and restored in borrowed mode.
const stateBindings = 3

// clearErrors drains glGetError before glmul's own calls; never on a
// borrowed context, whose error flags are the host's.
func (d *Device) clearErrors() {
	if !d.borrowed {
		glw.ClearErrors()
	}
}

// checkError returns glmul's GL errors after a step; nil on a borrowed
// context (see NewDeviceFromCurrent).
func (d *Device) checkError(what string) error {
	if d.borrowed {
		return nil
	}
	if err := glw.CheckError(what); err != nil {
		return driverError(err)
	}
	return nil
}
