// Package matfile reads and writes users' matrices for glmul mul: NumPy
// .npy files (float32 or float64, either byte order: dtype '<f4', '>f4',
// '<f8' or '>f8'; C or Fortran order; rank 2; format 1.0, 2.0 or 3.0),
// and MatrixMarket .mtx files
// (array or coordinate; real, integer or pattern; general or symmetric;
// a UTF-8 byte-order mark before the banner is skipped), read into dense row-major float32 matrices. It is pure Go.
//
// # Streaming
//
// Open returns a Source that reads a matrix a block of rows at a time,
// in any order, so that glmul mul's memory is bounded by its row panels
// rather than its matrices: a .npy file's header is checked at Open and
// its data read by Source.ReadRows with positioned reads (float32 in the
// host's byte order straight into the matrix's memory; other dtypes
// through a 1 MiB buffer, converted). A .mtx file lists its entries in no
// row order: Open parses it whole. NewSink writes a matrix to a stream a
// block of rows at a time, in order. ReadWith and Write are built on
// them: Open and one ReadRows of the whole matrix; NewSink and one
// WriteRows.
//
// A stream ("-" for standard input, a FIFO such as a shell's <(...), a
// device) cannot be read twice or out of order: Open reads its header
// (its format told by its first bytes where its name has neither
// extension), and its rows must then be read once, in order, the stream
// ending with the last; a Fortran-order .npy stream (at most 2^28
// elements) and a .mtx one are read whole into memory first.
//
// # Types
//
// glmul computes in float32. float64 input (a .npy '<f8' or '>f8', a .mtx
// real value) is rounded to the nearest float32. A value beyond float32's
// range is an error (ErrOverflow, naming the first one's place and value)
// unless ReadOptions.AllowOverflow lets it become ±Inf, as a float32 BLAS
// would see it; a nonzero value below float32's smallest subnormal becomes
// 0, not an error. ReadInfo counts both, for the caller to tell the user.
// NaN and ±Inf in a file are data: kept as they are. Integer MatrixMarket
// entries are converted; pattern entries are 1.
//
// glmul mul -type f64 computes in float64: ReadRows64 reads a block of
// rows as float64, nothing rounded (float32 data widened), and a Sink64
// (NewSink64) writes C a block of rows at a time as '<f8' .npy or a .mtx
// of 17-digit decimals, so that a float64 product streams by panels of
// rows as a float32 one does; Read64 and Write64 read and write whole
// matrices.
//
// # Duplicates and symmetry
//
// A coordinate .mtx file that lists a position more than once means the
// sum of its entries: MatrixMarket's convention, as SciPy reads it. They
// are summed (each addition done in float64, then rounded to float32; a
// sum beyond float32's range is an overflow as one value is) and the
// entries added to an earlier one are counted in ReadInfo.Duplicates. A
// symmetric file's entry (i, j) is also (j, i), whichever triangle it is
// in; a file that lists both (i, j) and (j, i) means their sum, counted
// as a duplicate too.
//
// # Limits and output
//
// A .mtx file may ask for at most 2^28 dense elements. A .npy header is
// read as np.load reads the headers that NumPy and other writers produce,
// a Python dictionary literal with its keys in any order, any spacing and
// quotes, comments, trailing commas and strings like u'<f4' (npyheader.go says why
// not with npyio), of at most 64 KiB. Rarer literal forms that np.load
// also takes are refused, each with a message: other string prefixes,
// escapes but \\, \' and \", adjacent or triple-quoted strings,
// backslash line continuations, parentheses around a value, numbers in hex,
// octal or binary or with a '+', a dimension of -1, dtypes spelt 'f4' or
// 'float32', and bytes after the data. Output is float32: .npy with dtype '<f4', C order; .mtx as
// "coordinate real general", listing every element, zeros included, row
// by row ("i j v", 1-based, v the shortest decimal that reads back as the
// same float32): a Sink writes rows in order, and MatrixMarket's "array"
// format is column-major.
//
// # Errors
//
// Every error names the file and says what is wrong with it: not the
// format, a truncated or overlong file, a header that disagrees with the
// data, an unsupported dtype or field, a rank other than 2, a value
// beyond float32's range. A matrix with no rows or no columns is no error:
// NumPy saves and multiplies them. A .npy file's rows are read in
// full or not at all: one that ends sooner than its size said when it was
// opened (still being written, on a network mount), or whose size
// changed since (rewritten), is an error saying so, never zeros. Bytes
// rewritten in place at the same size cannot be told from the data and
// are read as they are.
package matfile
