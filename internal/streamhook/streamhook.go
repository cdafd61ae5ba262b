// Package streamhook is where glmul's command reaches inside a streamed
// product for its tests: the product of each panel of stream.Mul64, which
// they make wrong as a streaming bug would (a panel shifted by a row,
// skipped, left stale) to show that glmul mul -type f64's checks catch
// it; and a device of stream.MulDevices made to fail, as a lost context
// would. Nothing else may set them.
//
// It sits below package glcompute (internal/..., the layer under the
// library), so the device, options and timings are glcompute's own types
// (*Device, *MulOptions, Timings) passed as any, as glcompute/internal/link
// passes them: only stream and cmd/glmul, which meet here, convert them.
package streamhook

import "gonum.org/v1/gonum/blas/blas64"

// Mul64, where set, multiplies each panel of stream.Mul64's product in
// place of dev.Mul64(c, a, b, opts), returning its timings. Set it only
// while no product runs: cmd/glmul sets it once, in init, to call its
// mulPanel64, which its tests replace.
var Mul64 func(dev any, c, a, b blas64.General, opts any) (timings any, err error)

// Fault, where set, is asked as device dev (counted from 0) of
// stream.MulDevices (of Mul and Mul64: 0) takes panel i: an error makes that device fail
// there, as a lost context would. Set it only while no product runs.
var Fault func(dev, i int) error
