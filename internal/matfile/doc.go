// Package matfile reads and writes users' matrices for glmul mul: NumPy
// .npy files (float32 or float64, either byte order, C or Fortran order,
// rank 2) through github.com/sbinet/npyio, and MatrixMarket .mtx files
// (array or coordinate; real, integer or pattern; general or symmetric),
// read into dense row-major float32 matrices. It is pure Go.
//
// # Types
//
// glmul computes in float32. float64 input is rounded to the nearest
// float32 (values beyond float32's range become ±Inf, as a float32 BLAS
// would see them); integer MatrixMarket entries are converted; pattern
// entries are 1. A coordinate file that lists an entry twice means their
// sum, as SciPy reads it; a symmetric file's entry (i, j) is also (j, i),
// whichever triangle it is in. A .mtx file may ask for at most 2^28 dense
// elements. .npy headers are read as NumPy writes them (format versions
// 1.0 and 2.0, numpy.save's key order). Output is float32: .npy with dtype '<f4', C order;
// .mtx as "array real general".
//
// # Errors
//
// Every error names the file and says what is wrong with it: not the
// format, a truncated or overlong file, a header that disagrees with the
// data, an unsupported dtype or field, a rank other than 2, an empty
// matrix.
package matfile
