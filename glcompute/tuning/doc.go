// Package tuning is glcompute's kernel choice as data and rules, in pure
// Go:
//
//   - the tuning cache (cache.go): the configurations glmul tune measured
//     best, per GL driver (vendor, renderer, version) and shape class, in a
//     JSON file in the user's cache directory, which glcompute.Open reads;
//   - the shape classes (Square, LongK, ThinK) and Classify;
//   - the rules (rules.go): the built-in choice per measured vendor
//     (Choose), and what a product's shape decides (the small-grid kernel,
//     split-K or stream-K, edge strips, reading A transposed), from what the device
//     reports;
//   - the device model (model.go): the choice for a GPU never measured,
//     from the limits OpenGL reports (Model, Facts).
//
// glcompute applies it; cmd/glmul's tune command writes the cache through
// it. It is public so that a program that tunes can do the same.
package tuning
