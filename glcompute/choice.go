package glcompute

import (
	"fmt"

	"github.com/glmul/glmul/glcompute/tuning"
	"github.com/glmul/glmul/shaders"
)

// The device's kernel choice at Open: the built-in one (tuning.Choose, or
// the device model's with Options.Unseen) and what glmul tune cached.

// chooseKernels sets Info's kernel choice: DefaultKernel and its source
// (chooseDefaultKernel), the stand-ins reading A as it is where the default
// reads A transposed (for large products too, where the default is the
// built-in one), and the SmallGridKernel, from builtinChoice where they
// fit.
func (d *Device) chooseKernels() {
	i := &d.info
	builtin := d.builtinChoice()
	cache, path, cacheErr := d.tuningCache()
	i.DefaultKernel, i.DefaultKernelSource = d.chooseDefaultKernel(builtin, cache, path, cacheErr)
	if k, err := shaders.Lookup(i.DefaultKernel); err == nil && k.TransposeA {
		i.NaturalKernel = d.runnable(builtin.Natural)
		if i.NaturalKernel == "" {
			i.NaturalKernel = shaders.Natural(i.DefaultKernel)
		}
		if builtin.NaturalWide != "" && i.DefaultKernel == d.runnable(builtin.Default) { // not for a default glmul tune chose
			i.NaturalWideKernel = d.runnable(builtin.NaturalWide)
		}
	}
	i.SmallGridKernel = d.runnable(builtin.SmallGrid)
	if cacheErr == nil {
		var ignored []string
		i.ClassKernels, ignored = d.classKernels(cache)
		for _, why := range ignored {
			i.DefaultKernelSource += "; " + why
		}
	}
	if d.float64Support() == nil {
		d.chooseFloat64(builtin, cache, path, cacheErr)
	}
}

// chooseFloat64 sets Info's float64 choice: the dfast configuration glmul
// tune -type f64 cached for this driver's square products if it still
// parses and fits, else the vendor's measured one (tuning.Choice.Float64),
// else the first of dfast's candidates (shaders.DFastCandidates, the
// default first) that fits the device's limits; and the cached ones of the
// other shape classes. A cache entry that cannot be used is named in the
// source, as float32's are.
func (d *Device) chooseFloat64(builtin tuning.Choice, cache tuning.Cache, path string, cacheErr error) {
	i := &d.info
	i.Float64Kernel, i.Float64KernelSource = d.builtinFloat64(builtin)
	if d.ignoreTuned() || cacheErr != nil { // a cache error is in DefaultKernelSource
		return
	}
	for _, cl := range tuning.Classes { // square first
		e, ok := cache.LookupClass64(d.tuningDriver(), cl)
		if !ok {
			continue
		}
		k, err := shaders.LookupFloat64(e.Kernel)
		if err == nil {
			err = d.fits(k)
		}
		switch {
		case err != nil:
			i.Float64KernelSource += fmt.Sprintf("; the %s class's tuned %q in %s cannot run here, ignored: %v", cl, e.Kernel, path, err)
		case cl == tuning.Square:
			i.Float64Kernel, i.Float64KernelSource = k.Spec(), fmt.Sprintf("tuned by glmul tune -type f64 on %s (%s)", e.When.Format("2006-01-02"), path)
		default:
			if i.Float64ClassKernels == nil {
				i.Float64ClassKernels = map[string]string{}
			}
			i.Float64ClassKernels[string(cl)] = k.Spec()
		}
	}
}

// builtinFloat64 is the float64 choice without glmul tune: the vendor's
// measured configuration where it fits, else the first candidate that
// does (the device model for float64: dfast's tiles scaled to the shared
// memory and invocations the device offers), else none.
func (d *Device) builtinFloat64(builtin tuning.Choice) (spec, source string) {
	if k, err := shaders.LookupFloat64(builtin.Float64); builtin.Float64 != "" && err == nil && d.fits(k) == nil {
		return k.Spec(), builtin.Source
	}
	for _, c := range shaders.DFastCandidates() {
		if k, err := shaders.DFast(c); err == nil && d.fits(k) == nil {
			return k.Spec(), fmt.Sprintf("the first of dfast's candidates that fits this device (%d bytes of shared memory, %d invocations a work group)",
				d.info.MaxSharedMemory, d.info.MaxWorkGroupInvocations)
		}
	}
	return "", "no dfast configuration fits this device"
}

// runnable returns spec if this device can run it, else the same
// configuration reading storage buffers where spec reads buffer textures
// (_tex) and the context has none (OpenGL ES 3.1 without
// GL_OES_texture_buffer), else "".
func (d *Device) runnable(spec string) string {
	for _, s := range []string{spec, shaders.WithTextures(spec, false)} {
		if k, err := shaders.Lookup(s); err == nil && d.fits(k) == nil {
			return k.Spec()
		}
	}
	return ""
}

// builtinChoice is the kernel choice without glmul tune: tuning.Choose's
// for the driver as the rules see it (tuningDriver: none with
// Options.Unseen, which leaves the device model's choice).
func (d *Device) builtinChoice() tuning.Choice {
	ch := tuning.Choose(d.tuningDriver(), d.info.facts())
	if d.opts.Unseen {
		ch.Source += ", as a device never seen (Unseen)"
	}
	return ch
}

// ignoreTuned reports whether the tuning cache is left unread
// (Options.IgnoreTuned, Options.Unseen).
func (d *Device) ignoreTuned() bool { return d.opts.IgnoreTuned || d.opts.Unseen }

// tunedKernel returns the kernel a cache entry names if glmul may use it:
// it parses, is a configuration of a family that glmul tune sweeps (fast,
// or cpu on OpenGL on a CPU: never tiled32 or an internal kernel, which a
// hand-edited or foreign cache could name) and fits this device; else an
// error that says why, for the kernel source's words.
func (d *Device) tunedKernel(e tuning.Entry, path string) (shaders.Kernel, error) {
	k, err := shaders.Lookup(e.Kernel)
	switch {
	case err != nil:
		return k, fmt.Errorf("the tuned %q in %s is not a kernel of this build, ignored", e.Kernel, path)
	case k.Name != "fast" && k.Name != "cpu":
		return k, fmt.Errorf("the tuned %q in %s is not a fast or cpu configuration, which is all glmul tune caches, ignored", e.Kernel, path)
	case d.fits(k) != nil:
		return k, fmt.Errorf("the tuned %q in %s does not fit this device, ignored", e.Kernel, path)
	}
	return k, nil
}

// classKernels returns the cached configurations of the shape classes
// other than square that glmul may use (tunedKernel), and why the others
// are ignored; nil without any (or with Options.IgnoreTuned).
func (d *Device) classKernels(cache tuning.Cache) (out map[string]string, ignored []string) {
	if d.ignoreTuned() {
		return nil, nil
	}
	path, _ := tuning.Path()
	for _, cl := range tuning.Classes {
		e, ok := cache.LookupClass(d.tuningDriver(), cl)
		if cl == tuning.Square || !ok {
			continue
		}
		k, err := d.tunedKernel(e, path)
		if err != nil {
			ignored = append(ignored, fmt.Sprintf("%s class: %v", cl, err))
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[string(cl)] = k.Spec()
	}
	return out, ignored
}

// tuningCache reads the tuning cache at tuning.Path, once per device (an
// owned device with IgnoreTuned or Unseen reads nothing).
func (d *Device) tuningCache() (c tuning.Cache, path string, err error) {
	if d.ignoreTuned() {
		return c, "", nil
	}
	if path, err = tuning.Path(); err != nil {
		return c, "", err
	}
	c, err = tuning.Load(path)
	return c, path, err
}

// chooseDefaultKernel returns the tuned fast configuration for this driver
// if glmul tune cached one that still parses and fits, else builtin's.
func (d *Device) chooseDefaultKernel(builtin tuning.Choice, cache tuning.Cache, path string, cacheErr error) (spec, source string) {
	spec, source = builtin.Default, builtin.Source
	if r := d.runnable(spec); r == "" {
		// llvmpipe's cpu kernel on an OpenGL ES context without buffer
		// textures, say.
		spec, source = tuning.GenericDefault, fmt.Sprintf("generic default (the %s for this device, %s, cannot run on this context)", source, spec)
	} else if r != spec {
		spec, source = r, fmt.Sprintf("%s, read through storage buffers (this context has no buffer textures)", source)
	}
	switch {
	case d.ignoreTuned():
		return spec, source
	case cacheErr != nil && path == "": // no cache directory
		return spec, source
	case cacheErr != nil:
		return spec, source + "; " + cacheErr.Error()
	}
	e, ok := cache.Lookup(d.tuningDriver())
	if !ok {
		return spec, source
	}
	if _, err := d.tunedKernel(e, path); err != nil {
		return spec, source + "; " + err.Error()
	}
	return e.Kernel, fmt.Sprintf("tuned by glmul tune on %s (%s)", e.When.Format("2006-01-02"), path)
}
